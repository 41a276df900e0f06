"""The perimeter: what an HTTP request or a websocket handshake must show before anything runs.

:class:`Perimeter` (a pure ASGI middleware, so websockets and streamed responses pass through it
untouched) checks, in this order:

1. ``Host`` is allowed (``RAGCHAT_API__ALLOWED_HOSTS``): a DNS-rebinding page sends its own name.
   A host that is an IP address always passes, since rebinding needs a name the attacker controls.
2. ``Origin``, when sent, is this server's own (the request's scheme and Host) or listed in
   ``RAGCHAT_API__CORS_ORIGINS``. Browsers apply no CORS to websockets, so this is their only guard.
3. Who is calling: ``Authorization: Bearer <key>`` (the scheme in any case, RFC 7235; a server key
   or a person's key, never logged or echoed) or the session cookie, named by the ``identify``
   function the app passes in (app/services/people/identify.py); a request it refuses (a wrong key,
   or no key on a server with keys and no people) is answered 401. The caller it names goes to the
   API in ``scope["state"]["caller"]``. Websockets carry their key in connection_init
   (``connectionParams: {authorization: "Bearer <key>"}``), identified by the GraphQL router.
   GraphiQL's page is public: it holds no data, and what it sends carries the key.
   Behind an authenticating proxy, :class:`TrustedProxies` reads the header that names the person,
   only on a connection from one of the proxies; the single sign-on pages (``/auth/oidc/login``,
   ``/auth/oidc/callback``) are GETs outside :data:`API_PATHS`, public like the frontend's pages.
4. CSRF, as Apollo Server does it: a request a page elsewhere could send without a CORS preflight
   (no content type, or multipart/form-data, x-www-form-urlencoded or text/plain: GETs and HTML
   forms) needs a non-empty ``Apollo-Require-Preflight`` or ``X-Apollo-Operation-Name`` header.
   GETs of the frontend and of /healthz run no operation and are exempt.

And at start-up, :func:`check_exposure`: a server reachable from other machines needs API keys or
the operator's explicit ``RAGCHAT_API__ALLOW_OPEN_NETWORK``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

from starlette.datastructures import Headers, QueryParams
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from app.errors import SettingsError

_log = logging.getLogger("ragchat.security")

GRAPHQL_PATH = "/graphql"
SESSION_COOKIE = "ragchat_session"
# Where data lives. Every other GET is the frontend (its files, or index.html for a client-side
# route such as /sessions/7): no data, and the browser must load it before it can send a key.
API_PATHS = frozenset({GRAPHQL_PATH, "/healthz", "/readyz", "/v1/models", "/mcp"})
# Data served as files (a knowledge base's archive, app/archive_api/): identified like the API.
DATA_PREFIX = "/api/"
# The OpenAI-compatible door (app/openai_api/): its clients read OpenAI's error shape.
OPENAI_PREFIX = "/v1/"
# Data a route guards itself: /metrics is for a caller with full rights or an allow-listed scraper
# (RAGCHAT_OPS__METRICS_ALLOW, app/main.py), which the perimeter cannot tell apart.
SELF_GUARDED = frozenset({"/metrics"})
KEY_REQUIRED = "an API key is required: send 'Authorization: Bearer <key>'"
CSRF_REFUSED = (
    "This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Send a "
    "content-type other than application/x-www-form-urlencoded, multipart/form-data or text/plain, "
    "or a non-empty Apollo-Require-Preflight or X-Apollo-Operation-Name header."
)
# The content types a cross-site page can send without a preflight (the Fetch standard's list).
SIMPLE_CONTENT_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
PREFLIGHT_HEADERS = ("apollo-require-preflight", "x-apollo-operation-name")
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(\d{1,5}))?")
_ORIGIN = re.compile(r"(https?)://(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(\d{1,5}))?/?")
_MIME = re.compile(r"[a-z0-9!#$%&'*+.^_`|~-]+/[a-z0-9!#$%&'*+.^_`|~-]+")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def is_public(method: str, path: str) -> bool:
    return (
        method in ("GET", "HEAD")
        and path not in API_PATHS
        and path not in SELF_GUARDED
        and not path.startswith(DATA_PREFIX)
    )


def wants_graphiql(method: str, query_params: Mapping[str, object], accept: str) -> bool:
    """A browser's GET for GraphiQL's page, which runs nothing. The router renders the page on
    exactly this test (narrower than strawberry's, which also takes ``*/*``), so the page being
    public never lets an operation through."""
    return method == "GET" and "query" not in query_params and "text/html" in accept


def bearer_token(value: object) -> str:
    """The key in ``Bearer <key>`` (the scheme in any case), or "" for anything else."""
    if not isinstance(value, str):
        return ""
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def connection_key(params: Mapping[str, object] | None) -> str:
    """The key a websocket's ``connection_init`` carries: ``authorization`` (``Bearer <key>`` or
    the bare key) or ``apiKey``; "" for none."""
    params = params or {}
    raw = params.get("authorization") or params.get("Authorization") or params.get("apiKey")
    return (bearer_token(raw) or raw.strip()) if isinstance(raw, str) else ""


def session_cookie(header: str | None) -> str:
    """The session token in a ``Cookie`` header, or "" for none (or an unreadable header)."""
    if not header:
        return ""
    try:
        jar = SimpleCookie(header)
    except CookieError:
        return ""
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel is not None else ""


# Headers a proxy in front of the server adds: a request carrying one was relayed, so its socket
# address (the proxy's, often loopback) says nothing about where it came from.
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def client_address(scope: Scope) -> str:
    """The address the request came from, as the ASGI server gives it ("" when unknown)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def from_loopback(scope: Scope) -> bool:
    """Whether the request was made on the server's own machine: a loopback peer, not relayed by a
    proxy (a proxy on the same machine would make every visitor look local)."""
    try:
        local = ipaddress.ip_address(client_address(scope)).is_loopback
    except ValueError:
        return False
    headers = Headers(scope=scope)
    return local and not any(name in headers for name in FORWARDING_HEADERS)


def cookie_secure(setting: str, scheme: str) -> bool:
    """The session cookie's Secure flag: RAGCHAT_PEOPLE__COOKIE_SECURE, "auto" following the
    request's own scheme (forwarding headers are not trusted for it)."""
    return setting == "always" or (setting == "auto" and scheme in ("https", "wss"))


def set_session_cookie(response: Response, token: str, *, secure: bool, max_age: int) -> None:
    """The browser session's cookie: script cannot read it, other sites' requests do not carry it
    (except top-level navigations, which run no operation), it lives as long as the session may."""
    response.set_cookie(SESSION_COOKIE, token, max_age=max_age, path="/", secure=secure, httponly=True, samesite="lax")


def clear_session_cookie(response: Response, *, secure: bool) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", secure=secure, httponly=True, samesite="lax")


# (scope, bearer key, session cookie) -> the caller, or None to refuse the request with a 401.
Identify = Callable[[Scope, str, str], Awaitable[object | None]]


def key_matches(given: str, keys: list[str]) -> bool:
    ok = False
    for key in keys:
        ok |= hmac.compare_digest(given.encode(), key.encode())
    return bool(given) and ok


def key_number(given: str, keys: list[str]) -> int | None:
    """Which of ``keys`` ``given`` is, counting from 1 (a job records who sent it); None for none."""
    found = None
    for number, key in enumerate(keys, 1):
        if hmac.compare_digest(given.encode(), key.encode()) and given:
            found = number
    return found


def host_name(host: str) -> str | None:
    """The name in a Host header (``name``, ``name:port``, ``[v6]:port``), lower case, without the
    port or a trailing dot; None when it is not a host."""
    match = _HOST.fullmatch(host.strip().lower())
    return match.group(1).rstrip(".") if match else None


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` as browsers send it (lower case, no default port); None for
    anything else, ``null`` included."""
    match = _ORIGIN.fullmatch(origin.strip().lower())
    if match is None:
        return None
    scheme, host, port = match.groups()
    return f"{scheme}://{host.rstrip('.')}" + (f":{int(port)}" if port and port != _DEFAULT_PORTS[scheme] else "")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostPolicy:
    """Which Host headers the server answers: ``names`` (and every IP address), or any."""

    names: frozenset[str]
    any: bool = False

    @classmethod
    def build(cls, configured: list[str] | None, bound: str) -> HostPolicy:
        """``configured`` (RAGCHAT_API__ALLOWED_HOSTS), or by default ``localhost`` and the bound
        host; bound to every interface (0.0.0.0, ::), this machine's name (and ``<name>.local``)."""
        if configured is None:
            configured = ["localhost"]
            if bound.strip().lower() in WILDCARD_BINDS:
                configured += [socket.gethostname(), f"{socket.gethostname()}.local"]
            else:
                configured.append(bound)
        if "*" in configured:
            return cls(frozenset(), any=True)
        names = {entry: host_name(entry) for entry in configured}
        if bad := [entry for entry, name in names.items() if not name]:
            raise SettingsError(f"RAGCHAT_API__ALLOWED_HOSTS: not host names: {bad}")
        return cls(frozenset(name for name in names.values() if name))

    def allows(self, host: str) -> bool:
        if self.any:
            return True
        name = host_name(host)
        return name is not None and (name in self.names or _is_ip(name))


def allowed_origins(configured: Iterable[str]) -> frozenset[str]:
    """RAGCHAT_API__CORS_ORIGINS, normalized; ``*`` stays ``*`` (any origin)."""
    origins = {entry: "*" if entry.strip() == "*" else normalize_origin(entry) for entry in configured}
    if bad := [entry for entry, origin in origins.items() if not origin]:
        raise SettingsError(f"RAGCHAT_API__CORS_ORIGINS: not origins (scheme://host[:port]): {bad}")
    return frozenset(origin for origin in origins.values() if origin)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` listens only on this machine (127.0.0.0/8, ::1, or a name that
    resolves to nothing else). 0.0.0.0, ::, a LAN address or a name that does not resolve: no."""
    bare = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(bare, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]).is_loopback for info in found)


def check_exposure(host: str, *, keys: int, allow_open_network: bool) -> None:
    """Refuse to serve other machines with no API keys unless the operator said so: a misnamed or
    forgotten key setting must not leave a network-facing server open to anyone."""
    if keys or allow_open_network or is_loopback(host):
        return
    raise SettingsError(
        f"RAGCHAT_HOST={host} can be reached from other machines and no API keys are set "
        "(RAGCHAT_API__API_KEYS), so anyone who reaches it could use this server: set API keys, "
        "bind to 127.0.0.1, or set RAGCHAT_API__ALLOW_OPEN_NETWORK=true if an open server is meant"
    )


def _preflighted(headers: Headers) -> bool:
    """Whether a browser would have asked the server first (CORS) before sending this cross-site."""
    content_type = headers.get("content-type")
    if content_type is not None:
        essence = content_type.split(";", 1)[0].strip(" \t").lower()
        if _MIME.fullmatch(essence) and essence not in SIMPLE_CONTENT_TYPES:
            return True
    return any(headers.get(name, "").strip() for name in PREFLIGHT_HEADERS)


class TrustedProxies:
    """RAGCHAT_PEOPLE__TRUSTED_HEADER, believed only from RAGCHAT_PEOPLE__TRUSTED_PROXIES.

    The proxy is the connection's own peer (``scope["client"]``), never an address a header claims
    (X-Forwarded-For is whatever the client wrote). From any other peer the header is ignored: the
    request goes on as if it were absent, and the first such request is logged."""

    def __init__(self, header: str | None, proxies: Iterable[str]) -> None:
        self.header = header.lower() if header else None
        self.networks = tuple(ipaddress.ip_network(entry, strict=False) for entry in proxies)
        self._warned = False

    def email(self, scope: Scope) -> str:
        """The email the trusted header names, or "" (off, absent, or not from a trusted proxy)."""
        if self.header is None or not self.networks:
            return ""
        value = Headers(scope=scope).get(self.header, "").strip()
        if not value:
            return ""
        if self.trusts(scope.get("client")):
            return value
        if not self._warned:
            self._warned = True
            _log.warning(
                "ignored %s from %s, which is not in RAGCHAT_PEOPLE__TRUSTED_PROXIES (said once)",
                self.header,
                (scope.get("client") or ("unknown",))[0],
            )
        return ""

    def trusts(self, client: object) -> bool:
        if not isinstance(client, (tuple, list)) or not client:
            return False
        try:
            peer = ipaddress.ip_address(str(client[0]).split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(peer, ipaddress.IPv6Address) and peer.ipv4_mapped is not None:
            peer = peer.ipv4_mapped
        return any(peer in network for network in self.networks)


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    headers: Mapping[str, str] | None = None

    async def send(self, scope: Scope, receive: Receive, send: Send) -> None:
        body: dict[str, object] = {"errors": [{"message": self.message}]}
        if scope.get("path", "").startswith(OPENAI_PREFIX):
            kind = "authentication_error" if self.status == 401 else "invalid_request_error"
            body = {"error": {"message": self.message, "type": kind, "param": None, "code": None}}
        response = JSONResponse(body, self.status, headers=self.headers)
        if scope["type"] == "http":
            await response(scope, receive, send)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:  # a server without the denial-response extension answers the handshake with 403
            await send({"type": "websocket.close", "code": 1008, "reason": self.message[:120]})


class Perimeter:
    """The checks in this module's docstring, for every HTTP request and websocket handshake."""

    def __init__(self, app: ASGIApp, *, hosts: HostPolicy, origins: frozenset[str], identify: Identify) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.identify = identify

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = await self.check(scope) if scope["type"] in ("http", "websocket") else None
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await refusal.send(scope, receive, send)

    async def check(self, scope: Scope) -> Refusal | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.hosts.allows(host):
            return Refusal(
                400, f"this server does not answer to Host {host[:100]!r}: add it to RAGCHAT_API__ALLOWED_HOSTS"
            )
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, scope["scheme"], host):
            return Refusal(
                403, f"requests from Origin {origin[:100]!r} are refused: add it to RAGCHAT_API__CORS_ORIGINS"
            )
        method, path = scope.get("method", "GET"), scope["path"]
        if scope["type"] == "websocket" or method == "OPTIONS":
            return None  # websockets: the router identifies them at connection_init; OPTIONS: CORS preflights
        page = path == GRAPHQL_PATH and wants_graphiql(
            method, QueryParams(scope["query_string"]), headers.get("accept", "")
        )
        if page or is_public(method, path) or (path in SELF_GUARDED and method in ("GET", "HEAD")):
            return None
        caller = await self.identify(
            scope, bearer_token(headers.get("authorization")), session_cookie(headers.get("cookie"))
        )
        if caller is None:
            return Refusal(401, KEY_REQUIRED, {"WWW-Authenticate": "Bearer"})
        scope.setdefault("state", {})["caller"] = caller
        runs_operations = path == GRAPHQL_PATH or method not in ("GET", "HEAD")  # not GET /healthz, /readyz
        if runs_operations and not _preflighted(headers):
            return Refusal(400, CSRF_REFUSED)
        return None

    def _origin_allowed(self, origin: str, scheme: str, host: str) -> bool:
        normalized = normalize_origin(origin)
        if normalized is None:
            return False
        own = normalize_origin(f"{'https' if scheme in ('https', 'wss') else 'http'}://{host}")
        return normalized == own or normalized in self.origins or "*" in self.origins
