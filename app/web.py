"""Serving the built frontend (frontend/dist, in a wheel app/static) at /; client-side routes get index.html."""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocketClose

from app import resources

# What `make frontend` builds (a wheel ships a copy); served unless RAGCHAT_FRONTEND_DIR says otherwise.
BUILT_FRONTEND = resources.FRONTEND

# The second page of that build: GraphiQL, which the GraphQL router serves at /graphql.
GRAPHIQL_PAGE = "graphiql.html"

# Vite names every file under assets/ by a hash of its content: a name never changes meaning, so a
# browser may keep it for a year without asking again. Pages (index.html) are revalidated each time,
# so a new build is picked up at once.
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


def built_page(path: Path) -> str | None:
    """A page of the built frontend, or None when it has not been built."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def frontend_app(directory: Path) -> GZipMiddleware:
    """The built frontend, gzip-compressed for clients that accept it.

    Only the static files are compressed (the GraphiQL and Monaco bundles are ~2.8 MB and shrink
    about 4 times), never the API's responses: compressing secrets beside attacker-chosen text in one
    response is what BREACH exploits, and the API's answers are small.
    """
    return GZipMiddleware(SinglePageApp(directory=directory, html=True), minimum_size=1024, compresslevel=6)


class SinglePageApp(StaticFiles):
    """The built frontend: its files as they are, and index.html for client-side routes."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            response = await super().get_response(path, scope)
        except HTTPException as exc:
            # A missing asset (a name with an extension) stays a 404; any other path is a route.
            if exc.status_code != 404 or "." in path.rsplit("/", 1)[-1]:
                raise
            response = await super().get_response("index.html", scope)
            path = "index.html"
        if response.status_code in (200, 304):
            response.headers["cache-control"] = IMMUTABLE if path.startswith("assets/") else REVALIDATE
        return response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # a websocket to any path but /graphql
            await WebSocketClose()(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
