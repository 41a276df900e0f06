"""Reads about the server itself: the defaults a new chat session gets, what uploads it accepts, its
health; and the Query root, composed from each feature's reads."""

from __future__ import annotations

import anyio.to_thread
import strawberry

from app.graphql import rag_settings, types
from app.graphql.chat.queries import ChatQuery, ProviderQuery
from app.graphql.context import Info
from app.graphql.enums import RetrievalMode
from app.graphql.knowledge.queries import KnowledgeQuery
from app.graphql.people.queries import PeopleQuery
from app.graphql.rag_settings import RagSettingsFields
from app.graphql.search.queries import SearchQuery
from app.graphql.tools.resolvers import ToolQuery
from app.rag.ingest.parsing import KINDS_BY_EXTENSION
from app.rag.session_settings import RagSettings
from app.services import health


@strawberry.type(description="What a new chat session gets for the settings the client leaves out.")
class SessionDefaults(RagSettingsFields):
    provider: str = strawberry.field(description="The chat model's provider.")
    model: str = strawberry.field(description="The chat model.")
    mode: RetrievalMode = strawberry.field(
        description="How retrieval ranks chunks, for every session (a server setting, RAGCHAT_RAG__MODE)."
    )


@strawberry.type(description="What uploadDocuments accepts.")
class UploadLimits:
    max_bytes: int = strawberry.field(description="Largest accepted file, in bytes.")
    extensions: list[str] = strawberry.field(description="File name endings a parser reads, like '.md'.")


@strawberry.type
class ServerQuery:
    @strawberry.field(description="What a new chat session gets for the settings the client leaves out.")
    def session_defaults(self, info: Info) -> SessionDefaults:
        settings = info.context.container.settings
        return SessionDefaults(
            **rag_settings.shown(RagSettings.of(settings.rag)),
            provider=settings.llm.provider,
            model=settings.llm.model,
            mode=settings.rag.mode,
        )

    @strawberry.field(description="What uploadDocuments accepts.")
    def upload_limits(self, info: Info) -> UploadLimits:
        return UploadLimits(
            max_bytes=info.context.container.settings.api.max_upload_bytes, extensions=sorted(KINDS_BY_EXTENSION)
        )

    @strawberry.field(description="Server health: versions and migration state.")
    async def health(self, info: Info) -> types.Health:
        found = await anyio.to_thread.run_sync(health.check, info.context.container.store)
        return types.Health(**vars(found))


@strawberry.type(
    description="Reads: people, knowledge bases, documents, chat sessions, search, tools, and the server's state."
)
class Query(PeopleQuery, ToolQuery, ServerQuery, KnowledgeQuery, ChatQuery, SearchQuery, ProviderQuery):
    """Each feature's reads, in the order the schema lists them."""
