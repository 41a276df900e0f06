"""Serving the built frontend (frontend/dist, in a wheel app/static) at /; client-side routes get index.html."""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocketClose

from app import resources

# What `make frontend` builds (a wheel ships a copy); served unless RAGCHAT_FRONTEND_DIR says otherwise.
BUILT_FRONTEND = resources.FRONTEND

# The second page of that build: GraphiQL, which the GraphQL router serves at /graphql.
GRAPHIQL_PAGE = "graphiql.html"


def built_page(path: Path) -> str | None:
    """A page of the built frontend, or None when it has not been built."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


class SinglePageApp(StaticFiles):
    """The built frontend: its files as they are, and index.html for client-side routes."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as exc:
            # A missing asset (a name with an extension) stays a 404; any other path is a route.
            if exc.status_code != 404 or "." in path.rsplit("/", 1)[-1]:
                raise
            return await super().get_response("index.html", scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # a websocket to any path but /graphql
            await WebSocketClose()(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
