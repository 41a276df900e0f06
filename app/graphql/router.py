"""The GraphQL router: GraphiQL with an example operation, and API-key checks on websockets."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from strawberry.exceptions import ConnectionRejectionError
from strawberry.fastapi import GraphQLRouter
from strawberry.types.unset import UnsetType

from app.graphql.context import Context
from app.security import key_matches

EXAMPLE_OPERATION = """# Welcome to ragchat. Press the run button to try this.
# Then create a session with createChatSession and ask with sendMessage,
# or stream an answer with: subscription { chat(sessionId: "1", content: "...") { __typename } }
query KnowledgeBases {
  health { ok version sqliteVersion sqliteVecVersion migrationRevision }
  projects { id name documentCount chunkCount embeddingSpace { label } }
  chatSessions(first: 5) { id title topK threshold enableRag includeCitations }
}
"""


class RagchatGraphQLRouter(GraphQLRouter[Context, None]):
    def __init__(self, *args: Any, api_keys: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._api_keys = api_keys

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        html = self.graphql_ide_html.replace(
            "fetcher: fetcher,", f"fetcher: fetcher, defaultQuery: {json.dumps(EXAMPLE_OPERATION)},", 1
        )
        return HTMLResponse(html)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        if not self._api_keys:
            return await super().on_ws_connect(context)
        params = context.connection_params or {}
        raw = params.get("authorization") or params.get("Authorization") or params.get("apiKey") or ""
        given = str(raw).removeprefix("Bearer ").strip()
        if not key_matches(given, self._api_keys):
            raise ConnectionRejectionError({"message": "an API key is required: connectionParams.authorization"})
        return await super().on_ws_connect(context)
