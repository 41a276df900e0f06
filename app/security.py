"""Optional API keys: when configured, every API request must carry one.

HTTP: ``Authorization: Bearer <key>``. Websockets: ``connectionParams: {authorization: "Bearer <key>"}``.
Keys are compared in constant time and never logged or echoed in errors.
"""

from __future__ import annotations

import hmac

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

# Where data lives. Every other GET is the frontend (its files, or index.html for a client-side
# route such as /sessions/7): no data, and the browser must load it before it can send a key.
API_PATHS = frozenset({"/graphql", "/healthz"})


def is_public(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and path not in API_PATHS


def key_matches(given: str, keys: list[str]) -> bool:
    ok = False
    for key in keys:
        ok |= hmac.compare_digest(given.encode(), key.encode())
    return bool(given) and ok


class ApiKeyMiddleware(BaseHTTPMiddleware):
    def __init__(self, app: object, keys: list[str]) -> None:
        super().__init__(app)  # type: ignore[arg-type]
        self.keys = keys

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        path = request.url.path
        if request.method == "OPTIONS" or is_public(request.method, path):
            return await call_next(request)
        if request.method == "GET" and path == "/graphql" and "text/html" in request.headers.get("accept", ""):
            return await call_next(request)  # the GraphiQL page itself; its queries carry the key
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if not key_matches(given, self.keys):
            return JSONResponse(
                {"errors": [{"message": "an API key is required: send 'Authorization: Bearer <key>'"}]},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return await call_next(request)
