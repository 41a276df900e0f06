"""The SSRF-guarded fetcher against a real loopback server: what it refuses before connecting,
what it refuses while reading, and what it fetches when the operator allows loopback."""

from __future__ import annotations

import asyncio
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.errors import FetchError, TooLargeError, UnsupportedTypeError, UrlRefusedError
from app.net.addresses import AddressPolicy, Refusal
from app.net.fetch import Fetched, FetchPolicy, fetch
from tests.net.server import DOC, serving, serving_tls
from tests.net.trickle import trickling
from tests.waiting import wait_until

TYPES = frozenset({"text/plain", "text/markdown", "text/html"})


def get(url: str, limits: FetchPolicy, **request: Any) -> Fetched:
    """One fetch, on an event loop of its own."""
    return asyncio.run(fetch(url, limits, **request))


def policy(addresses: AddressPolicy = AddressPolicy(), **limits: float) -> FetchPolicy:
    return FetchPolicy(
        addresses=addresses,
        max_bytes=int(limits.get("max_bytes", 1024 * 1024)),
        timeout=limits.get("timeout", 10.0),
        max_redirects=int(limits.get("max_redirects", 3)),
        content_types=TYPES,
    )


LOOPBACK_ONLY = AddressPolicy.of(False, ["127.0.0.1/32"])


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    with serving() as running:
        yield running


def base(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://10.0.0.1/", Refusal.PRIVATE),
        ("http://192.168.0.1/admin", Refusal.PRIVATE),
        ("http://169.254.169.254/latest/meta-data/", Refusal.LINK_LOCAL),
        ("http://[::1]/", Refusal.LOOPBACK),
        ("http://[::ffff:127.0.0.1]/", Refusal.LOOPBACK),
        ("http://0.0.0.0/", Refusal.UNSPECIFIED),
        # other spellings of 127.0.0.1: the resolver's answer is what is checked
        ("http://2130706433/", Refusal.LOOPBACK),
        ("http://0x7f.1/", Refusal.LOOPBACK),
        ("http://127.1/", Refusal.LOOPBACK),
        ("http://017700000001/", Refusal.LOOPBACK),
        ("http://[0:0:0:0:0:ffff:7f00:1]/", Refusal.LOOPBACK),
        ("ftp://example.com/file.txt", Refusal.SCHEME),
        ("file:///etc/passwd", Refusal.SCHEME),
        ("http://user:secret@example.com/", Refusal.MALFORMED),
        ("http:///nohost", Refusal.MALFORMED),
        ("not a url", Refusal.SCHEME),
    ],
)
def test_urls_outside_the_public_internet_are_refused_before_connecting(url: str, why: Refusal) -> None:
    with pytest.raises(UrlRefusedError) as refused:
        get(url, policy())
    assert refused.value.reason == why


def test_loopback_is_refused_by_default_and_nothing_reaches_the_server(server: ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    for url, host in ((f"{base(server)}/notes.md", "127.0.0.1"), (f"http://localhost:{port}/notes.md", "localhost")):
        with pytest.raises(UrlRefusedError) as refused:
            get(url, policy())
        assert refused.value.reason == Refusal.LOOPBACK
        assert refused.value.message.startswith(f"{host} ")
    assert server.seen == []  # type: ignore[attr-defined]


def test_a_refusal_names_the_host_never_the_address_a_name_resolved_to() -> None:
    # Otherwise a client could use the server to learn what names resolve to on its network.
    with serving("127.0.0.2") as other:
        port = other.server_address[1]
        resolved = {str(info[4][0]) for info in socket.getaddrinfo("localhost", port, type=socket.SOCK_STREAM)}
        redirect = f"http://127.0.0.2:{port}/redirect?to=http://localhost:{port}/notes.md"
        only_other = AddressPolicy.of(False, ["127.0.0.2/32"])
        for url, allowed in ((f"http://localhost:{port}/notes.md", AddressPolicy()), (redirect, only_other)):
            with pytest.raises(UrlRefusedError) as refused:
                get(url, policy(allowed))
            assert refused.value.message.startswith("localhost leads to a loopback address")
            assert not [address for address in resolved if address in refused.value.message]
        assert [path for path, _host in other.seen] == ["/redirect"]  # type: ignore[attr-defined]


def test_fetches_from_loopback_when_the_operator_allows_it(server: ThreadingHTTPServer) -> None:
    got = get(f"{base(server)}/notes.md#section", policy(AddressPolicy(allow_private=True)))
    assert (got.name, got.content_type, got.data) == ("notes.md", "text/markdown", DOC)
    got = get(f"{base(server)}/notes.md", policy(LOOPBACK_ONLY))
    assert got.data == DOC


def test_a_name_is_resolved_once_and_the_checked_address_is_what_is_connected(server: ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    got = get(f"http://localhost:{port}/notes.md", policy(LOOPBACK_ONLY))
    assert got.data == DOC
    assert server.seen == [("/notes.md", f"localhost:{port}")]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", Refusal.LINK_LOCAL),
        ("http://10.0.0.7/internal", Refusal.PRIVATE),
        ("http://127.0.0.2/", Refusal.LOOPBACK),  # loopback, but not the allowed /32
        ("http://[::1]/", Refusal.LOOPBACK),
        ("file:///etc/passwd", Refusal.SCHEME),
    ],
)
def test_each_redirect_is_checked_again(server: ThreadingHTTPServer, target: str, why: Refusal) -> None:
    for status in (302, 307):
        with pytest.raises(UrlRefusedError) as refused:
            get(f"{base(server)}/redirect?status={status}&to={target}", policy(LOOPBACK_ONLY))
        assert refused.value.reason == why


def test_redirects_are_followed_within_the_bound(server: ThreadingHTTPServer) -> None:
    got = get(f"{base(server)}/redirect?to=/notes.md", policy(LOOPBACK_ONLY))
    assert (got.url, got.data) == (f"{base(server)}/notes.md", DOC)
    with pytest.raises(FetchError, match="more than 3 redirects"):
        get(f"{base(server)}/loop", policy(LOOPBACK_ONLY))
    with pytest.raises(FetchError, match="more than 0 redirects"):
        get(f"{base(server)}/redirect?to=/notes.md", policy(LOOPBACK_ONLY, max_redirects=0))


def test_size_is_limited_whether_announced_or_not(server: ThreadingHTTPServer) -> None:
    limited = policy(LOOPBACK_ONLY, max_bytes=4096)
    assert len(get(f"{base(server)}/big?n=4096", limited).data) == 4096
    with pytest.raises(TooLargeError, match="announces 4097 bytes") as announced:
        get(f"{base(server)}/big?n=4097", limited)
    assert announced.value.limit == 4096
    with pytest.raises(TooLargeError, match="larger than the limit"):
        get(f"{base(server)}/big-unannounced?n=100000", limited)


def test_a_small_gzip_that_expands_is_refused_on_its_decompressed_size(server: ThreadingHTTPServer) -> None:
    assert get(f"{base(server)}/gzip", policy(LOOPBACK_ONLY)).data == DOC
    with pytest.raises(TooLargeError):
        get(f"{base(server)}/gzip?bomb=1", policy(LOOPBACK_ONLY, max_bytes=1024 * 1024))


def test_a_slow_server_meets_the_total_deadline(server: ThreadingHTTPServer) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError, match="within 1 s"):
        get(f"{base(server)}/slow", policy(LOOPBACK_ONLY, timeout=1.0))
    assert time.monotonic() - started < 4  # the drip would take 5 s; generous for a loaded machine


def test_a_server_trickling_its_headers_is_cut_off_at_the_deadline() -> None:
    # Each byte renews httpx's per-read timeout: only the wall clock ends this exchange.
    with trickling() as slow:
        with pytest.raises(FetchError, match="no complete answer within 1 s"):
            get(f"http://127.0.0.1:{slow.port}/", policy(LOOPBACK_ONLY, timeout=1.0))
        wait_until(lambda: slow.sent_when_closed, 10, "the trickling server to see its connection closed")
        # Closed for it while it had sent a small part of its headers, long before it would have ended.
        assert slow.sent_when_closed[0] < len(slow.head) // 2
        assert slow.open == 0


def test_wrong_types_and_error_statuses_are_typed(server: ThreadingHTTPServer) -> None:
    with pytest.raises(UnsupportedTypeError) as wrong:
        get(f"{base(server)}/image.png", policy(LOOPBACK_ONLY))
    assert wrong.value.content_type == "image/png"
    with pytest.raises(FetchError) as missing:
        get(f"{base(server)}/nothing-here", policy(LOOPBACK_ONLY))
    assert missing.value.status == 404


def test_the_servers_file_name_is_used_without_its_path(server: ThreadingHTTPServer) -> None:
    assert get(f"{base(server)}/download", policy(LOOPBACK_ONLY)).name == "tides.txt"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its certificates with the openssl command")
def test_https_connects_to_the_checked_address_and_verifies_the_name(tmp_path: Path) -> None:
    with serving_tls(tmp_path, "localhost") as (server, ca):
        port = server.server_address[1]
        secure = replace(policy(LOOPBACK_ONLY), ca_file=ca)
        got = get(f"https://localhost:{port}/notes.md", secure)  # SNI and the certificate: "localhost"
        assert got.data == DOC
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            get(f"https://127.0.0.1:{port}/notes.md", secure)  # the certificate does not name 127.0.0.1
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            get(f"https://localhost:{port}/notes.md", policy(LOOPBACK_ONLY))  # not a CA the system trusts


def test_a_request_sends_its_method_body_and_headers_and_keeps_them_from_other_origins() -> None:
    allowed = AddressPolicy.of(True, [])
    with serving() as first, serving() as second:
        other = f"{base(second)}/notes.md"
        fetched = get(f"{base(first)}/redirect?to={other}", policy(allowed), headers={"Authorization": "Bearer s"})
        assert fetched.data == DOC
        assert first.auth == [("/redirect", "Bearer s")]  # type: ignore[attr-defined]
        assert second.auth == [("/notes.md", None)]  # type: ignore[attr-defined]
        same = get(f"{base(first)}/redirect?to=/notes.md", policy(allowed), headers={"Authorization": "Bearer s"})
        assert same.data == DOC and first.auth[-1] == ("/notes.md", "Bearer s")  # type: ignore[attr-defined]
        with pytest.raises(FetchError, match="redirected the POST request"):
            get(f"{base(first)}/redirect?to=/notes.md", policy(allowed), method="POST", body=b"{}")
