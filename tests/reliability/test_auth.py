"""API keys: with keys configured, every HTTP route the app has (enumerated from ``app.routes``, so a
new route is covered the day it is added) and the websocket refuse a missing or wrong key, and the
keys never appear in a log line, a response body or a header."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute
from pydantic import SecretStr
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from app.container import Container
from app.main import create_app
from app.security import is_public
from tests.live import serve
from tests.tally import CASES

KEY = "rk-live-0123456789abcdef"
OTHER = "second-key-abcdef"
WRONG = [
    {},
    {"authorization": ""},
    {"authorization": "Bearer"},
    {"authorization": "Bearer wrong"},
    {"authorization": f"Bearer {KEY[:-1]}"},  # a prefix of the key
    {"authorization": f"Bearer {KEY}x"},
    {"authorization": f"Basic {KEY}"},
    {"authorization": KEY},
    {"x-api-key": KEY},
    {"cookie": f"authorization=Bearer {KEY}"},
]


@pytest.fixture
def keyed(
    rig: Container, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Iterator[tuple[str, list[tuple[str, str]], list[str]]]:
    """A live app with two keys and a built frontend; yields its URL, every (method, path) it routes
    over HTTP, and every websocket path."""
    frontend = tmp_path / "dist"
    (frontend / "assets").mkdir(parents=True)
    (frontend / "index.html").write_text("<!doctype html><title>ragchat</title>", encoding="utf-8")
    (frontend / "assets" / "app.js").write_text("console.log('ui')", encoding="utf-8")
    rig.settings.frontend_dir = frontend
    rig.settings.api.api_keys = [SecretStr(KEY), SecretStr(OTHER)]
    app = create_app(rig.settings, rig)
    http, sockets = _routes(app.routes)
    assert {"/graphql", "/healthz"} <= {path for _, path in http}
    with caplog.at_level(logging.DEBUG), serve(app) as base:
        yield base, http, sockets
    for secret in (KEY, OTHER):
        assert secret not in caplog.text


def _routes(routes: Iterable[BaseRoute], prefix: str = "") -> tuple[list[tuple[str, str]], list[str]]:
    """(method, path) of every HTTP route and the path of every websocket, included routers too."""
    http: list[tuple[str, str]] = []
    sockets: list[str] = []
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI wraps include_router()'s routers
        if included is not None:
            more_http, more_sockets = _routes(included.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
            http += more_http
            sockets += more_sockets
        elif isinstance(route, APIRoute | Route):
            http += [(method, prefix + route.path) for method in sorted(route.methods or ()) if method != "HEAD"]
        elif isinstance(route, APIWebSocketRoute | WebSocketRoute):
            sockets.append(prefix + route.path)
        elif isinstance(route, Mount):  # the frontend: its files, and client-side routes
            http += [("GET", "/"), ("GET", "/index.html"), ("GET", "/assets/app.js"), ("GET", "/sessions/7")]
        else:
            raise AssertionError(f"a route of unknown kind: {route!r}")
    return http, sockets


def _public(method: str, path: str) -> bool:
    return is_public(method, path)


def _no_secret(response: httpx.Response) -> None:
    for secret in (KEY, OTHER):
        assert secret not in response.text and secret not in json.dumps(dict(response.headers))


def test_every_http_route_refuses_a_missing_or_wrong_key(keyed: tuple[str, list[tuple[str, str]], list[str]]) -> None:
    base, routes, _ = keyed
    query = {"query": "{ projects { ... on ProjectConnection { edges { node { id name } } } } }"}
    with httpx.Client(base_url=base, timeout=10) as client:
        for method, path in routes:
            for headers in WRONG:
                response = client.request(method, path, headers=headers, json=query if method == "POST" else None)
                _no_secret(response)
                if _public(method, path):
                    # A page, or the sign-in routes' redirect to one (single sign-on is not configured here).
                    assert response.status_code in (200, 303) and "projects" not in response.text, (method, path)
                else:
                    assert response.status_code == 401, (method, path, headers, response.status_code)
                    message = "an API key is required: send 'Authorization: Bearer <key>'"
                    if path.startswith("/v1/"):  # the OpenAI door's clients read OpenAI's error shape
                        assert response.json()["error"] | {} == {
                            "message": message, "type": "authentication_error", "param": None, "code": None
                        }  # fmt: skip
                    else:
                        assert response.json() == {"errors": [{"message": message}]}
                CASES["auth: refused requests"] += 1
            for key in (KEY, OTHER):
                response = client.request(
                    method, path, headers={"authorization": f"Bearer {key}"}, json=query if method == "POST" else None
                )
                _no_secret(response)
                assert response.status_code != 401, (method, path)
        # GraphiQL's page holds no data and is public; what it sends carries the key.
        page = client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200 and "<html" in page.text.lower()


def test_the_websocket_refuses_a_missing_or_wrong_key(keyed: tuple[str, list[tuple[str, str]], list[str]]) -> None:
    base, _, sockets = keyed
    assert sockets == ["/graphql"]
    url = base.replace("http://", "ws://") + "/graphql"
    params: list[dict[str, object]] = [
        {},
        {"authorization": "Bearer wrong"},
        {"authorization": f"Bearer {KEY[:-1]}"},
        {"authorization": f"Basic {KEY}"},
        {"authorization": 12345},
        {"authorization": None},
        {"Authorization": ["Bearer", KEY]},
    ]
    for payload in params:
        with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
            ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403, payload
        assert KEY not in str(closed.value)
        CASES["auth: refused websockets"] += 1
    for key in (KEY, OTHER):
        with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
            ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {key}"}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"


def test_keys_stay_out_of_settings_reprs_and_errors(rig: Container) -> None:
    rig.settings.api.api_keys = [SecretStr(KEY)]
    assert KEY not in repr(rig.settings) and KEY not in str(rig.settings.model_dump())
    assert KEY not in rig.settings.model_dump_json()
