"""Attacks from outside the API (issue 11): what a request must show before anything runs, replayed
against a live server as a browser (or an attacker's page in one) would send it.

- API keys hold whatever the Accept header asks for; only GraphiQL's page is public.
- CSRF: requests a cross-site page can send without a CORS preflight (multipart, urlencoded,
  text/plain, no content type, GET) need Apollo-Require-Preflight or X-Apollo-Operation-Name; an
  Origin that is neither this server nor a listed CORS origin is refused, on HTTP and websockets.
- DNS rebinding: the Host header must be allowed, on HTTP and the websocket handshake.
- Websockets: listed CORS origins may connect; documents refused before they run get an `error`
  message; operations per socket are bounded; the Bearer scheme is case-insensitive.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from pydantic import SecretStr
from websockets.sync.client import connect

from app.container import Container
from app.errors import SettingsError
from app.main import create_app
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.reliability.helpers import row_counts
from tests.tally import CASES

KEY = "perimeter-key-0123456789"
SECRET_QUERY = "{ projects { ... on ProjectConnection { edges { node { name } } } } }"
CREATE = 'mutation { createProject(input: {name: "planted"}) { __typename } }'
CSRF_REFUSAL = "potential Cross-Site Request Forgery"


def handshake(base: str, path: str = "/graphql", **headers: str) -> tuple[int, bytes]:
    """Open a websocket handshake by hand, so Host and Origin are exactly what a browser (or a
    rebinding page) would send; returns the status code and what followed the status line."""
    url = urlsplit(base)
    fields = {
        "Host": url.netloc,
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Protocol": "graphql-transport-ws",
        **{name.replace("_", "-"): value for name, value in headers.items()},
    }
    request = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(request.encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
        status = int(received.split(b" ", 2)[1])
        if status != 101:  # a refusal may carry a body: read it to the end
            sock.settimeout(2)
            try:
                while chunk := sock.recv(4096):
                    received += chunk
            except TimeoutError:
                pass
    return status, received


def ws_connects(base: str, **headers: str) -> bool:
    status, _ = handshake(base, **headers)
    return status == 101


@pytest.fixture
def keyed(rig: Container) -> Iterator[Api]:
    rig.settings.api.api_keys = [SecretStr(KEY)]
    with live_api(rig, {"authorization": f"Bearer {KEY}"}) as api:
        api.run(CREATE_PROJECT, name="secret-kb")
        yield api


# -- item 1: the key holds whatever the Accept header says ------------------------------------


@pytest.mark.parametrize("accept", ["text/html", "*/*", "text/html,application/xhtml+xml,*/*;q=0.8", "", "x/y"])
def test_no_operation_runs_without_a_key_whatever_the_accept_header(keyed: Api, accept: str) -> None:
    with httpx.Client(base_url=keyed.base, timeout=10, headers={"accept": accept}) as anonymous:
        attempts = [
            anonymous.get("/graphql", params={"query": SECRET_QUERY}),
            anonymous.get("/graphql", params={"q": "x", "query": SECRET_QUERY, "variables": "{}"}),
            anonymous.get("/graphql?qu%65ry=" + SECRET_QUERY.replace(" ", "%20")),
            anonymous.get("/graphql", params={"query": ""}),
            anonymous.post("/graphql", json={"query": SECRET_QUERY}),
            anonymous.post("/graphql", params={"query": SECRET_QUERY}, json={"query": SECRET_QUERY}),
        ]
    for response in attempts:
        assert response.status_code == 401, (response.request.url, response.status_code, response.text[:200])
        assert "secret-kb" not in response.text
        CASES["perimeter: refused requests"] += 1


def test_the_graphiql_page_stays_public_and_runs_nothing(keyed: Api) -> None:
    with httpx.Client(base_url=keyed.base, timeout=10, headers={"accept": "text/html"}) as anonymous:
        page = anonymous.get("/graphql")
        # GraphiQL keeps the editor's text in the page's URL (?q=...): a reload must still work.
        shared = anonymous.get("/graphql", params={"q": SECRET_QUERY, "variables": "{}"})
    for response in (page, shared):
        assert response.status_code == 200 and "graphiql" in response.text.lower()
        assert "secret-kb" not in response.text


def test_the_bearer_scheme_is_case_insensitive_on_http_and_websockets(keyed: Api) -> None:
    for scheme in ("bearer", "BEARER", "BeArEr"):
        response = httpx.post(
            f"{keyed.base}/graphql", json={"query": SECRET_QUERY}, headers={"authorization": f"{scheme} {KEY}"}
        )
        assert response.status_code == 200 and "secret-kb" in response.text
        with keyed.websocket({"authorization": f"{scheme} {KEY}"}) as ws:
            (result,) = list(ws.subscribe(SECRET_QUERY))
        assert result["data"]["projects"]["edges"][0]["node"]["name"] == "secret-kb"


# -- item 3: cross-site requests ---------------------------------------------------------------


def _refused_as_csrf(response: httpx.Response) -> None:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    assert CSRF_REFUSAL in response.json()["errors"][0]["message"]
    CASES["perimeter: refused requests"] += 1


def test_requests_a_cross_site_page_can_send_without_a_preflight_are_refused(api: Api, rig: Container) -> None:
    before = row_counts(rig.store)
    operations = json.dumps({"query": CREATE.replace("planted", "by-form")})
    http = api.http
    # An auto-submitted HTML form, and fetch(..., {mode: "no-cors", body: formData}).
    _refused_as_csrf(http.post("/graphql", data={"operations": operations, "map": "{}"}, files={"x": ("x", b"")}))
    _refused_as_csrf(http.post("/graphql", data={"query": CREATE}))  # urlencoded form
    _refused_as_csrf(http.post("/graphql", content=operations, headers={"content-type": "text/plain"}))
    _refused_as_csrf(http.post("/graphql", content=operations, headers={"content-type": "text/plain;charset=UTF-8"}))
    _refused_as_csrf(http.post("/graphql", content=operations))  # a Blob without a type: no content-type
    _refused_as_csrf(http.get("/graphql", params={"query": SECRET_QUERY}))  # an <img src>
    _refused_as_csrf(http.get("/graphql", params={"query": SECRET_QUERY}, headers={"apollo-require-preflight": ""}))
    assert row_counts(rig.store) == before

    # What clients send: JSON (always preflighted cross-site) or one of the two headers.
    assert http.post("/graphql", json={"query": CREATE}).status_code == 200
    for header in ("Apollo-Require-Preflight", "X-Apollo-Operation-Name"):
        got = http.get("/graphql", params={"query": "{ health { ok } }"}, headers={header: "1"})
        assert got.status_code == 200 and got.json()["data"]["health"]["ok"] is True
    multipart = http.post(
        "/graphql",
        data={"operations": operations, "map": "{}"},
        files={"x": ("x", b"")},
        headers={"Apollo-Require-Preflight": "true"},
    )
    assert multipart.status_code == 200 and multipart.json()["data"]["createProject"]["__typename"] == "Project"
    assert row_counts(rig.store)["projects"] == before["projects"] + 2


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1", "https://127.0.0.1"])
def test_a_foreign_origin_is_refused_on_http_and_websockets(api: Api, rig: Container, origin: str) -> None:
    before = row_counts(rig.store)
    response = api.http.post("/graphql", json={"query": CREATE}, headers={"origin": origin})
    assert response.status_code == 403 and "Origin" in response.json()["errors"][0]["message"]
    assert row_counts(rig.store) == before
    assert not ws_connects(api.base, Origin=origin)
    CASES["perimeter: refused requests"] += 1
    CASES["perimeter: refused websockets"] += 1


def test_this_servers_own_origin_is_accepted(api: Api) -> None:
    response = api.http.post("/graphql", json={"query": "{ health { ok } }"}, headers={"origin": api.base})
    assert response.status_code == 200
    assert ws_connects(api.base, Origin=api.base)


def test_a_listed_cors_origin_may_use_http_and_the_websocket(rig: Container) -> None:
    frontend = "http://app.example:5173"
    rig.settings.api.cors_origins = [frontend]
    with live_api(rig, {"origin": frontend}) as api:
        response = api.http.post("/graphql", json={"query": "{ health { ok } }"})
        assert response.status_code == 200 and response.headers["access-control-allow-origin"] == frontend
        # The frontend's upload sends Apollo-Require-Preflight: the preflight must allow it.
        preflight = api.http.options(
            "/graphql",
            headers={
                "access-control-request-method": "POST",
                "access-control-request-headers": "apollo-require-preflight",
            },
        )
        assert preflight.status_code == 200, preflight.text
        assert ws_connects(api.base, Origin=frontend)
        assert not ws_connects(api.base, Origin="http://evil.example")


# -- item 4: DNS rebinding ---------------------------------------------------------------------


def test_an_unknown_host_is_refused_on_http_and_the_websocket_handshake(api: Api, rig: Container) -> None:
    port = urlsplit(api.base).port
    evil = f"evil.example:{port}"
    before = row_counts(rig.store)
    # A rebinding page is same-origin with itself: its Host and Origin agree.
    response = api.http.post("/graphql", json={"query": CREATE}, headers={"host": evil, "origin": f"http://{evil}"})
    assert response.status_code == 400 and "RAGCHAT_API__ALLOWED_HOSTS" in response.json()["errors"][0]["message"]
    assert api.http.get("/healthz", headers={"host": evil}).status_code == 400
    assert row_counts(rig.store) == before
    status, refusal = handshake(api.base, Host=evil, Origin=f"http://{evil}")
    assert status == 400 and b"RAGCHAT_API__ALLOWED_HOSTS" in refusal
    CASES["perimeter: refused requests"] += 2
    CASES["perimeter: refused websockets"] += 1

    for host in (f"localhost:{port}", f"LOCALHOST:{port}", "localhost", f"127.0.0.1:{port}", "[::1]", "10.1.2.3:80"):
        assert api.http.post("/graphql", json={"query": "{ health { ok } }"}, headers={"host": host}).status_code == 200
        assert ws_connects(api.base, Host=host)


@pytest.mark.parametrize(
    ("allowed", "accepted", "refused"),
    [
        (["ragchat.lan"], ["ragchat.lan", "RAGCHAT.LAN:8000", "ragchat.lan."], ["localhost", "evil.example"]),
        (["*"], ["evil.example", "localhost"], []),
    ],
)
def test_the_host_allow_list_can_be_configured(
    rig: Container, allowed: list[str], accepted: list[str], refused: list[str]
) -> None:
    rig.settings.api.allowed_hosts = allowed
    with live_api(rig) as api:
        for host in accepted:
            assert api.http.get("/healthz", headers={"host": host}).status_code == 200, host
        for host in refused:
            assert api.http.get("/healthz", headers={"host": host}).status_code == 400, host


def test_a_wildcard_bind_also_allows_this_machines_name(rig: Container) -> None:
    rig.settings.host = "0.0.0.0"
    with live_api(rig) as api:
        assert api.http.get("/healthz", headers={"host": f"{socket.gethostname()}:8000"}).status_code == 200
        assert api.http.get("/healthz", headers={"host": "evil.example"}).status_code == 400


@pytest.mark.parametrize(
    ("field", "value"), [("cors_origins", ["localhost:5173"]), ("cors_origins", ["null"]), ("allowed_hosts", ["a/b"])]
)
def test_lists_that_cannot_match_are_refused_at_start_up(rig: Container, field: str, value: list[str]) -> None:
    setattr(rig.settings.api, field, value)
    with pytest.raises(SettingsError, match=f"RAGCHAT_API__{field.upper()}"):
        create_app(rig.settings, rig)


# -- item 9: the websocket ---------------------------------------------------------------------


def _session(api: Api) -> str:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    input_ = {"provider": "fake", "model": "scripted", "threshold": 0.1}
    return str(api.run(CREATE_SESSION, p=pid, input=input_)["createChatSession"]["id"])


def _messages(ws: Any, op: str, until: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while True:
        message = json.loads(ws.recv(timeout=10))
        if message.get("id") == op:
            seen.append(message)
            if message["type"] == until or message["type"] in ("complete", "error"):
                return seen


DOCUMENTS = {
    "a syntax error": "subscription {",
    "too many tokens": "{ " + " ".join("health { ok }" for _ in range(1000)) + " }",
    "too deep": "{ " + "chatSessions { project { " * 10 + "id" + " } }" * 10 + " }",
    "an unknown operation name": "query A { health { ok } }",
}


def test_documents_refused_before_they_run_get_an_error_message(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    url = api.base.replace("http://", "ws://") + "/graphql"
    with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
        ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
        for n, (name, document) in enumerate(sorted(DOCUMENTS.items())):
            payload = {"query": document, "operationName": "B" if "name" in name else None}
            ws.send(json.dumps({"id": str(n), "type": "subscribe", "payload": payload}))
            (message,) = _messages(ws, str(n), "error")
            assert message["type"] == "error", (name, message)
            assert message["payload"][0]["message"], (name, message)
        # The socket is still usable: one refused document does not end the others.
        ws.send(json.dumps({"id": "ok", "type": "subscribe", "payload": {"query": "{ health { ok } }"}}))
        assert _messages(ws, "ok", "complete")[0]["payload"]["data"]["health"]["ok"] is True
    assert "Exception in worker task" not in caplog.text  # strawberry's traceback for a failed operation


def test_operations_per_socket_are_bounded(rig: Container, model: FakeChatModel) -> None:
    rig.settings.api.max_operations_per_socket = 2
    rig.settings.chat.max_concurrent_generations = 10
    model.token_delay = 0.05
    with live_api(rig) as api:
        sid = _session(api)
        model.enqueue(*[" ".join(["word"] * 100)] * 3)
        url = api.base.replace("http://", "ws://") + "/graphql"
        with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
            ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"

            def subscribe(op: str, query: str = CHAT, **variables: object) -> None:
                message = {"id": op, "type": "subscribe", "payload": {"query": query, "variables": variables}}
                ws.send(json.dumps(message))

            for op in ("1", "2"):
                subscribe(op, s=sid, c="penguins?")
                _messages(ws, op, "next")
            subscribe("3", s=sid, c="penguins?")
            (refused,) = _messages(ws, "3", "error")
            assert refused["type"] == "error"
            assert "RAGCHAT_API__MAX_OPERATIONS_PER_SOCKET" in refused["payload"][0]["message"]
            subscribe("4", "{ health { ok } }")
            assert _messages(ws, "4", "error")[0]["type"] == "error"
            # Once one finishes, the socket takes new operations again.
            ws.send(json.dumps({"id": "1", "type": "complete"}))
            subscribe("5", "{ health { ok } }")
            assert _messages(ws, "5", "next")[0]["payload"]["data"]["health"]["ok"] is True
