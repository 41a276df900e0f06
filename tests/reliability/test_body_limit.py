"""The upload limit holds while the body streams in (issue 11, item 7): a 300 MB body is answered
413 after about the limit, not read to its end first."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from app.container import Container
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT
from tests.reliability.helpers import row_counts

LIMIT = 1024 * 1024
ATTEMPT = 300 * 1024 * 1024
BOUNDARY = "ragchatboundary"
UPLOAD = "mutation($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files) { __typename } }"


@pytest.fixture
def small_limit(rig: Container) -> Container:
    rig.settings.api.max_upload_bytes = LIMIT
    return rig


def _multipart_head(project_id: str) -> bytes:
    operations = json.dumps({"query": UPLOAD, "variables": {"p": project_id, "files": [None]}})
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{operations}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{json.dumps({"0": ["variables.files.0"]})}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="0"; filename="huge.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()


def _request_head(base: str, extra: str) -> bytes:
    host = urlsplit(base).netloc
    return (
        f"POST /graphql HTTP/1.1\r\nHost: {host}\r\nApollo-Require-Preflight: true\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{extra}\r\n"
    ).encode()


def _response(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    received = b""
    while b"\r\n\r\n" not in received:
        piece = sock.recv(65536)
        if not piece:
            break
        received += piece
    return received


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(api: Api, small_limit: Container) -> None:
    host, port = urlsplit(api.base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(_request_head(api.base, f"Content-Length: {ATTEMPT}\r\n"))
        started = time.monotonic()
        response = _response(sock)
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    assert b"connection: close" in response.lower()
    assert time.monotonic() - started < 5


def test_a_streamed_body_is_refused_once_it_passes_the_limit(api: Api, small_limit: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    before = row_counts(small_limit.store)
    host, port = urlsplit(api.base).netloc.split(":")
    chunk = b"x" * 65536
    sent = 0
    response = b""
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(_request_head(api.base, "Transfer-Encoding: chunked\r\n"))
        head = _multipart_head(pid)
        sock.sendall(f"{len(head):x}\r\n".encode() + head + b"\r\n")
        framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        try:
            while sent < ATTEMPT:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    break
                sock.sendall(framed)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: its answer is already in our buffer
        response = _response(sock)
    assert response.startswith(b"HTTP/1.1 413"), (sent, response[:200])
    assert b"upload limit of 1048576 bytes" in response
    # The limit, the envelope allowance and what the kernel's buffers hold; not 300 MB.
    assert sent < 16 * LIMIT, sent
    assert row_counts(small_limit.store) == before


def test_an_httpx_generator_body_stops_being_read_at_the_limit(api: Api, small_limit: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    consumed = 0

    def body() -> Iterator[bytes]:
        nonlocal consumed
        yield _multipart_head(pid)
        while consumed < ATTEMPT:
            consumed += 65536
            yield b"x" * 65536

    headers = {"Apollo-Require-Preflight": "true", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    try:
        response = httpx.post(f"{api.base}/graphql", content=body(), headers=headers, timeout=30)
    except httpx.TransportError:
        pass  # the connection closed under the client while it was still sending: fine, if early
    else:
        assert response.status_code == 413, response.text[:200]
    assert consumed < 16 * LIMIT, consumed


def test_a_json_body_over_the_limit_is_refused(api: Api, small_limit: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    text = "word " * (LIMIT // 2)  # 2.5 MB in the JSON body of addDocument
    response = api.raw(
        'mutation($p: ID!, $t: String!) { addDocument(projectId: $p, name: "a.txt", text: $t) { __typename } }',
        {"p": pid, "t": text},
    )
    assert response.status_code == 413
    assert response.json()["errors"][0]["message"].startswith("the request body is larger than the upload limit")


def test_an_upload_within_the_limit_still_works(api: Api, small_limit: Container) -> None:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    result = api.upload(UPLOAD, {"variables.files.0": ("notes.txt", b"penguins " * 100_000)}, {"p": pid})
    assert result["data"]["uploadDocuments"]["__typename"] == "IngestionJob", result
