"""Test clients speaking to a live server as real clients do: GraphQL over HTTP (JSON and the
multipart upload spec) and graphql-transport-ws over a websocket."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

from app.container import Container
from app.main import create_app
from tests.live import serve


class Api:
    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, headers=headers or {}, timeout=60)

    def raw(self, query: str, variables: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.post("/graphql", json={"query": query, "variables": variables or {}})

    def run(self, query: str, **variables: Any) -> dict[str, Any]:
        response = self.raw(query, variables)
        body = response.json()
        assert "errors" not in body, body
        return body["data"]

    def upload(self, query: str, files: dict[str, tuple[str, bytes]], variables: dict[str, Any]) -> dict[str, Any]:
        """GraphQL multipart request spec: operations + map + one part per file."""
        mapping = {str(i): [path] for i, path in enumerate(files)}
        for path in files:  # the variables named in the map must be present (null) in operations
            target, *rest = path.removeprefix("variables.").split(".")
            if rest:
                slots = variables.setdefault(target, [])
                slots.extend([None] * (int(rest[0]) + 1 - len(slots)))
            else:
                variables[target] = None
        parts = {str(i): (name, data, "application/octet-stream") for i, (name, data) in enumerate(files.values())}
        response = self.http.post(
            "/graphql",
            data={"operations": json.dumps({"query": query, "variables": variables}), "map": json.dumps(mapping)},
            files=parts,
            headers={"Apollo-Require-Preflight": "true"},
        )
        return response.json()

    @contextmanager
    def websocket(self, params: dict[str, Any] | None = None) -> Iterator[Ws]:
        url = self.base.replace("http://", "ws://") + "/graphql"
        with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
            yield Ws(ws, params)


class Ws:
    def __init__(self, ws: ClientConnection, params: dict[str, Any] | None) -> None:
        self.ws = ws
        self.ws.send(json.dumps({"type": "connection_init", "payload": params or {}}))
        ack = json.loads(self.ws.recv(timeout=10))
        assert ack["type"] == "connection_ack", ack
        self._next = 1

    def subscribe(self, query: str, **variables: Any) -> Iterator[dict[str, Any]]:
        op = str(self._next)
        self._next += 1
        self.ws.send(json.dumps({"id": op, "type": "subscribe", "payload": {"query": query, "variables": variables}}))
        while True:
            message = json.loads(self.ws.recv(timeout=30))
            if message.get("id") != op:
                continue
            if message["type"] == "next":
                yield message["payload"]
            elif message["type"] == "complete":
                return
            else:
                raise AssertionError(message)

    def stop(self, op: str) -> None:
        self.ws.send(json.dumps({"id": op, "type": "complete"}))


@contextmanager
def live_api(container: Container, headers: dict[str, str] | None = None) -> Iterator[Api]:
    with serve(create_app(container.settings, container)) as base:
        api = Api(base, headers)
        try:
            yield api
        finally:
            api.http.close()
