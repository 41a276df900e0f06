"""Fetch a URL a user gave, without letting it reach what the server can reach.

:func:`fetch` allows http and https only; resolves the host once, checks the address against an
:class:`~app.net.addresses.AddressPolicy` and connects to that very address (the ``Host`` header and
TLS SNI carry the name, and the certificate is verified against it), so a second, different DNS
answer has no effect. Redirects are followed by hand, a bounded number of times, and each hop is
checked again. The body is read as a stream and cut off past ``max_bytes`` — counted after
decompression, which is done here with a bound, so a small gzip that expands is refused — and the
whole fetch, redirects included, has one wall-clock deadline that closes the connection when it
passes, however the remote paces its bytes. It runs on the event loop, never in a worker thread,
within a slot of the loop's outbound gate (app/net/outbound.py). Proxies from the environment are
ignored (a proxy would connect on our behalf to an address nobody checked).

:func:`fetch` also sends an HTTP tool's request: another ``method``, a ``body`` and extra
``headers``; a request that is not a GET never follows a redirect (it would be resent somewhere
nobody chose), a redirect to another origin drops the extra headers (they may carry a secret
meant for the first), and a policy may accept any 2xx status and any content type.

Errors (app/errors.py): :class:`UrlRefusedError` (the URL or an address it leads to is not
allowed), :class:`TooLargeError`, :class:`UnsupportedTypeError` (a content type outside the
policy's list), and :class:`FetchError` for everything else (cannot connect, timed out, an HTTP
error status, too many redirects, no free outbound slot). A refusal names the URL's host, never the
address a name resolved to.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from email.message import Message
from urllib.parse import unquote, urljoin

import httpx

from app.errors import FetchError, TooLargeError, UnsupportedTypeError, UrlRefusedError
from app.net import outbound
from app.net.addresses import AddressPolicy, IPAddress, Refusal, check, resolve

REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class FetchPolicy:
    """The limits of one fetch. ``content_types`` are media types without parameters, lowercase."""

    addresses: AddressPolicy
    max_bytes: int
    timeout: float
    max_redirects: int
    content_types: frozenset[str] | None  # None: any media type
    user_agent: str = "ragchat"
    # Certificates are verified against the system's CAs (certifi's); a CA bundle file replaces them.
    ca_file: str | None = None
    any_success: bool = False  # accept every 2xx status, not only 200 (an HTTP tool's answer)


@dataclass(frozen=True)
class Fetched:
    """What a fetch brought back: the final URL (after redirects), the file name the server or the
    URL gives (not yet sanitised), the media type and the decoded body."""

    url: str
    name: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class _Target:
    url: httpx.URL  # with the checked address in place of the name
    host_header: str
    sni: str | None


async def fetch(
    url: str,
    policy: FetchPolicy,
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Fetched:
    """Request ``url`` (GET unless told) within ``policy``, holding a slot of the loop's outbound
    gate (app/net/outbound.py). See the module docstring for what is refused and raised."""
    async with outbound.current().slot():
        try:
            # One clock for everything: resolving, connecting, each redirect, the headers and the
            # body. When it runs out the task is cancelled wherever it waits, and httpx closes the
            # connection, however the remote paces its bytes.
            async with asyncio.timeout(policy.timeout):
                return await _exchange(url, policy, method, body, dict(headers or {}))
        except TimeoutError as exc:
            raise FetchError(f"no complete answer within {policy.timeout:g} s") from exc


async def _exchange(url: str, policy: FetchPolicy, method: str, body: bytes | None, extra: dict[str, str]) -> Fetched:
    current = url
    if body is not None:
        extra.setdefault("Content-Type", "application/json")
    for _hop in range(policy.max_redirects + 1):
        target = await _target(current, policy.addresses)
        # httpx's own timeout is per operation, renewed by every byte: only a backstop here.
        async with httpx.AsyncClient(
            trust_env=False, follow_redirects=False, verify=_tls(policy.ca_file), timeout=policy.timeout
        ) as client:
            try:
                request = client.build_request(
                    method,
                    target.url,
                    content=body,
                    headers={
                        **extra,
                        "Host": target.host_header,
                        "User-Agent": policy.user_agent,
                        "Accept-Encoding": "gzip, deflate",
                    },
                    extensions={"sni_hostname": target.sni} if target.sni else {},
                )
                response = await client.send(request, stream=True)
                try:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        if method != "GET":
                            raise FetchError(
                                f"the server redirected the {method} request (HTTP {response.status_code}); "
                                "only GET requests follow redirects",
                                status=response.status_code,
                            )
                        following = urljoin(current, response.headers["location"])
                        if _origin(following) != _origin(current):
                            extra = {}  # the caller's headers (an HTTP tool's secrets) stay with their origin
                        current = following
                        continue
                    return await _read(current, response, policy)
                finally:
                    await response.aclose()
            except httpx.TimeoutException as exc:
                raise FetchError(f"no complete answer within {policy.timeout:g} s") from exc
            except httpx.HTTPError as exc:
                raise FetchError(f"cannot fetch the URL: {exc}") from exc
    raise FetchError(f"more than {policy.max_redirects} redirects")


@functools.cache
def _tls(ca_file: str | None) -> ssl.SSLContext:
    """The TLS settings, built once per CA file: loading a CA bundle is about 25 ms of CPU, which
    would otherwise land on the event loop at every fetch. Certificates are verified against the
    system's CAs (certifi's) unless a CA file replaces them."""
    return ssl.create_default_context(cafile=ca_file) if ca_file else httpx.create_ssl_context()


def _origin(url: str) -> tuple[str, str, int | None]:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return ("", url, None)
    return (parsed.scheme, parsed.host, parsed.port)


async def _target(url: str, policy: AddressPolicy) -> _Target:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise UrlRefusedError(f"not a URL: {exc}", Refusal.MALFORMED) from exc
    if parsed.scheme not in ("http", "https"):
        raise UrlRefusedError("only http and https URLs can be fetched", Refusal.SCHEME)
    if not parsed.host:
        raise UrlRefusedError("the URL has no host", Refusal.MALFORMED)
    if parsed.userinfo:
        raise UrlRefusedError("the URL carries a user name or password", Refusal.MALFORMED)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = await resolve(parsed.host, port)
    except (OSError, UnicodeError) as exc:
        raise UrlRefusedError(f"{parsed.host} does not resolve to an address", Refusal.UNRESOLVABLE) from exc
    address, refusal = _first_allowed(addresses, policy)
    if address is None:
        assert refusal is not None
        # The host as given, never the address it resolved to: a client may not learn the
        # addresses of names only the server's network knows.
        kind = refusal.value.replace("_", "-")
        said = "is" if parsed.host.strip("[]") == str(addresses[0]) else "leads to"
        raise UrlRefusedError(f"{parsed.host} {said} a {kind} address, which this server does not fetch from", refusal)
    literal = parsed.host == str(address) or parsed.host.strip("[]") == str(address)
    return _Target(
        url=parsed.copy_with(host=str(address), fragment=None),
        host_header=parsed.netloc.decode("ascii"),
        sni=None if literal or parsed.scheme != "https" else parsed.host,
    )


def _first_allowed(addresses: list[IPAddress], policy: AddressPolicy) -> tuple[IPAddress | None, Refusal | None]:
    first: Refusal | None = None
    for address in addresses:
        refusal = check(address, policy)
        if refusal is None:
            return address, None
        first = first or refusal
    return None, first or Refusal.UNRESOLVABLE


async def _read(url: str, response: httpx.Response, policy: FetchPolicy) -> Fetched:
    success = 200 <= response.status_code < 300 if policy.any_success else response.status_code == 200
    if not success:
        raise FetchError(f"the server answered HTTP {response.status_code}", status=response.status_code)
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if policy.content_types is not None and media not in policy.content_types:
        raise UnsupportedTypeError(
            f"the server sent {media or 'no content type'}; the documents that can be added are "
            + ", ".join(sorted(policy.content_types)),
            media,
        )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise TooLargeError(f"the server announces {declared} bytes; the limit is {policy.max_bytes}", policy.max_bytes)
    body = bytearray()
    async for piece in _decoded(response, policy.max_bytes):
        body += piece
        if len(body) > policy.max_bytes:
            raise TooLargeError(f"the document is larger than the limit of {policy.max_bytes} bytes", policy.max_bytes)
    return Fetched(url, _name(url, response), media, bytes(body))


async def _decoded(response: httpx.Response, max_bytes: int) -> AsyncIterator[bytes]:
    """The body, decompressed with a bound: never more than ``max_bytes + 1`` bytes out of one
    piece, however well it compresses."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        async for raw in response.aiter_raw():
            yield raw
        return
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise FetchError(f"the server sent the document encoded as {encoding!r}, which ragchat does not decode")
    # 47: gzip or zlib header, detected; deflate servers that send a raw stream are rare enough to refuse.
    inflater = zlib.decompressobj(47)
    produced = 0
    try:
        async for raw in response.aiter_raw():
            data = raw
            while data:
                out = inflater.decompress(data, max_bytes + 1 - produced)
                produced += len(out)
                yield out
                if produced > max_bytes:
                    return
                data = inflater.unconsumed_tail
        yield inflater.flush()
    except zlib.error as exc:
        raise FetchError(f"the server's {encoding} data is damaged: {exc}") from exc


def _name(url: str, response: httpx.Response) -> str:
    """The server's file name (Content-Disposition), else the URL path's last part, else its host."""
    disposition = response.headers.get("content-disposition")
    if disposition:
        message = Message()
        message["content-disposition"] = disposition
        given = message.get_filename()
        if given:
            return given.replace("\\", "/").rsplit("/", 1)[-1]
    parsed = httpx.URL(url)
    last = unquote(parsed.path.rstrip("/").rsplit("/", 1)[-1])
    return last or parsed.host
