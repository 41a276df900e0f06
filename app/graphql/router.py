"""The GraphQL router: GraphiQL (bundled with the frontend, so it works offline) with an example
operation, API-key checks on websockets, and HTTP-level
errors (malformed JSON or multipart bodies) answered as GraphQL errors in JSON, with their 4xx status.
Over the websocket, a document refused before it runs gets an ``error`` message for its id (the
socket and its other operations carry on), and each socket runs a bounded number of operations."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import anyio.to_thread
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from fastapi import Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response
from graphql import GraphQLError
from starlette.exceptions import HTTPException as StarletteHTTPException
from strawberry.exceptions import ConnectionRejectionError
from strawberry.fastapi import GraphQLRouter
from strawberry.http.base import BaseRequestProtocol
from strawberry.schema.schema import StreamResult
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler, Operation
from strawberry.subscriptions.protocols.graphql_transport_ws.types import SubscribeMessage
from strawberry.types.unset import UNSET, UnsetType

from app.graphql import json_body
from app.graphql.context import Context
from app.graphql.uploads import place_files
from app.security import connection_key, session_cookie, wants_graphiql
from app.services.people.identify import Credentials
from app.web import GRAPHIQL_PAGE, built_page

EXAMPLE_OPERATION = """# Welcome to ragchat. Press the run button to try this.
# With API keys on, add {"Authorization": "Bearer <key>"} in the Headers tab below
# (a key saved in the app is sent for you). Then create a session with createChatSession and ask with sendMessage,
# or stream an answer with: subscription { chat(sessionId: "1", content: "...") { __typename } }
query KnowledgeBases {
  health { ok version sqliteVersion sqliteVecVersion migrationRevision }
  # Lists are Relay connections: pass after: pageInfo.endCursor for the next page.
  projects(first: 10) {
    ... on ProjectConnection {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id name documentCount chunkCount embeddingSpace { label } } }
    }
    ... on ValidationError { message }
  }
  chatSessions(first: 5) {
    ... on ChatSessionConnection { edges { node { id title topK threshold enableRag includeCitations } } }
    ... on ValidationError { message }
  }
}
"""
# What the built graphiql.html (frontend/graphiql.html) holds for the server to fill in.
IDE_CONFIG_SLOT = '<script type="application/json" id="graphiql-config">{}</script>'
IDE_NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ragchat · GraphiQL is not built</title></head>
<body style="font-family: sans-serif; max-width: 40rem; margin: 3rem auto">
<h1>GraphiQL is not built</h1>
<p>The GraphQL playground is bundled with the frontend, and <code>{page}</code> does not exist.
Build it with <code>make frontend</code> (or <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>)
and reload this page. The API itself works: POST JSON to <code>/graphql</code>.</p>
</body></html>
"""


def graphiql_html(page: str | None, missing: Path) -> str:
    """The built GraphiQL page with the example operation as its default query, or a page saying
    how to build it (never Strawberry's, which loads GraphiQL from a CDN)."""
    if page is None:
        return IDE_NOT_BUILT.replace("{page}", html.escape(str(missing)))
    # JSON inside <script>: "<" escaped so that no "</script>" in the text can end the element.
    config = json.dumps({"defaultQuery": EXAMPLE_OPERATION}).replace("<", "\\u003c")
    return page.replace(IDE_CONFIG_SLOT, IDE_CONFIG_SLOT.replace("{}", config), 1)


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    def forget_id(self, id: str) -> None:
        # A client's "complete" can race the end of its stream: both forget the operation, and
        # strawberry's ``del`` raised KeyError in the second (a traceback per race, under load).
        self.operations.pop(id, None)

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        limit = self.max_subscriptions_per_connection
        if (
            self.connection_acknowledged
            and limit is not None
            and message["id"] not in self.operations
            and len(self.operations) >= limit
        ):
            # An `error` for this id, not a close: graphql-ws clients fail every operation of a
            # socket closed with a 4xxx code (and do not retry it), the well-behaved ones included.
            error = GraphQLError(
                f"too many operations at once on this socket (at most {limit}, "
                "RAGCHAT_API__MAX_OPERATIONS_PER_SOCKET): wait for one to complete"
            )
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        await super().handle_subscribe(message)

    async def _send_result_stream(self, operation: Operation[Context, None], result_source: StreamResult) -> None:
        try:
            await super()._send_result_stream(operation, result_source)
        except GraphQLError as error:
            # The parser cache and the token limit parse inside an extension hook, where strawberry's
            # stream does not catch: a syntax error ended with a bare `complete` and a traceback.
            await operation.send_initial_errors([error])

    @staticmethod
    def _get_pre_execution_close_reason(error: GraphQLError) -> str | None:
        return None  # a bad document fails its own operation (`error`), not the whole socket (4400)


class RagchatGraphQLRouter(GraphQLRouter[Context, None]):
    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(self, *args: Any, frontend_dir: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ide_page = frontend_dir / GRAPHIQL_PAGE

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        # The one test the perimeter also uses to let GraphiQL's page through without a key.
        return wants_graphiql(request.method, request.query_params, request.headers.get("accept", ""))

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        # Read per request: a frontend built after the server started is served without a restart.
        return HTMLResponse(graphiql_html(built_page(self._ide_page), self._ide_page))

    async def run(  # type: ignore[override]
        self, request: Request | WebSocket, context: Any = UNSET, root_value: Any = UNSET
    ) -> Response | WebSocket:
        try:
            return await super().run(request, context, root_value)
        except HTTPException as exc:
            return JSONResponse({"errors": [{"message": exc.reason}]}, status_code=exc.status_code)
        finally:
            if isinstance(request, Request):
                # Uploaded files are spooled to temporary files; a request refused before a resolver
                # read them (a bad map, say) would otherwise leave them open.
                await request.close()

    def parse_json(self, data: str | bytes) -> Any:
        value = super().parse_json(data)
        if not isinstance(value, dict | list):  # strawberry would call .get() on it: a 500
            raise HTTPException(400, "The request must be a JSON object (or a list of them for a batch)")
        return value

    def decode_json(self, data: str | bytes) -> object:
        return json_body.decode(data)  # HTTP bodies, multipart operations and websocket messages alike

    async def parse_multipart(self, request: AsyncHTTPRequestAdapter) -> dict[str, str]:
        try:
            form = await request.get_form_data()
        except (ValueError, StarletteHTTPException) as exc:  # starlette: no boundary, too many parts
            detail = getattr(exc, "detail", "") or "unreadable body"
            raise HTTPException(400, f"Unable to parse the multipart body: {detail}") from exc
        operations = self.parse_json(form.form.get("operations", "{}"))
        files_map = self.parse_json(form.form.get("map", "{}"))
        return place_files(operations, files_map, form.files)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        # Named once per connection, like an HTTP request: the key in connection_init, else the
        # session cookie of the handshake (a browser sends it; the perimeter checked the Origin).
        cookie = session_cookie(context.request.headers.get("cookie")) if context.request is not None else ""
        identifier = context.container.identifier
        proxied = context.container.trusted_proxies.email(context.request.scope) if context.request is not None else ""
        given = Credentials(bearer=connection_key(context.connection_params), cookie=cookie, proxy_email=proxied)
        if identifier.needs_database(given):
            caller = await anyio.to_thread.run_sync(identifier.identify, given)
        else:
            caller = identifier.identify(given)
        if caller is None:
            raise ConnectionRejectionError({"message": "an API key is required: connectionParams.authorization"})
        context.caller = caller
        return await super().on_ws_connect(context)
