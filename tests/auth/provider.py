"""A real OpenID Connect provider on loopback (oidc-provider-mock, authlib's server underneath),
recording what it is sent so tests can check the PKCE pair."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx
import werkzeug.serving


@dataclass
class Provider:
    issuer: str
    authorize_queries: list[dict[str, str]] = field(default_factory=list)
    token_bodies: list[dict[str, str]] = field(default_factory=list)

    def set_user(self, sub: str, claims: dict[str, Any]) -> None:
        httpx.put(f"{self.issuer}/users/{sub}", json=claims, timeout=10).raise_for_status()


@contextmanager
def running_provider() -> Iterator[Provider]:
    import oidc_provider_mock  # here, not at collection: importing it warns of authlib's deprecations

    app = oidc_provider_mock.app(require_nonce=True)
    inner = app.wsgi_app
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    provider = Provider(f"http://127.0.0.1:{server.server_port}")

    def recording(environ: dict[str, Any], start_response: Any) -> Any:
        path, query = environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
        if path == "/oauth2/authorize" and environ["REQUEST_METHOD"] == "GET":
            provider.authorize_queries.append({k: v[0] for k, v in parse_qs(query).items()})
        if path == "/oauth2/token":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(size)
            provider.token_bodies.append({k: v[0] for k, v in parse_qs(body.decode()).items()})
            environ["wsgi.input"] = _Replay(body)
        return inner(environ, start_response)

    app.wsgi_app = recording  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class _Replay:
    def __init__(self, body: bytes) -> None:
        self._body, self._at = body, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._body) if size < 0 else self._at + size
        chunk, self._at = self._body[self._at : end], min(end, len(self._body))
        return chunk

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)
