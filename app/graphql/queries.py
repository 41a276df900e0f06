"""Query root: thin resolvers over the services."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
import strawberry

from app.errors import RagchatError, StorageError
from app.graphql import job_resolvers, types
from app.graphql.connections import After, Before, First, Last, paged
from app.graphql.context import Info
from app.graphql.enums import RetrievalMode
from app.graphql.errors import NotFoundError, parse_id, to_graphql
from app.graphql.rag_settings import RagSettingsFields
from app.graphql.results import (
    ChatSessionConnectionResult,
    ChatSessionResult,
    DocumentResult,
    IngestionJobResult,
    MessageResult,
    ProjectConnectionResult,
    ProjectResult,
    SearchResult,
    call,
    settle,
)
from app.graphql.search_types import SearchResults, search_results
from app.graphql.tool_resolvers import ToolQuery
from app.rag.parsing import KINDS_BY_EXTENSION
from app.rag.session_settings import THRESHOLD_RANGE, TOP_K_RANGE, RagSettings
from app.services import documents, health, projects, records, search, sessions
from app.services.pages import Page, PageRequest

_PROJECT_ID = strawberry.argument(description="The knowledge base.")
TOP_K = "How many hits to keep at most, {}-{}.".format(*TOP_K_RANGE)
THRESHOLD = "The cosine similarity a hit needs to be kept, {:g}-{:g}; null: the server's default.".format(
    *THRESHOLD_RANGE
)

# Their unions have no StorageError: an unreadable database is a GraphQL error there, not a member.
UNREADABLE = (StorageError,)


@strawberry.type(
    description="A pool of generation slots: how many answers a provider (or one of its models) writes at once, now."
)
class GenerationLoad:
    model: str | None = strawberry.field(
        description="The model with a pool of its own (RAGCHAT_CHAT__LIMITS names it); null: the pool the "
        "provider's other models share."
    )
    limit: int = strawberry.field(
        description="Answers it writes at once at most, server-wide: the worker processes of "
        "`ragchat serve --workers N` share it."
    )
    in_use: int = strawberry.field(description="Answers being written now, by every worker.")
    waiting: int = strawberry.field(description="Questions waiting in line for a slot now.")


@strawberry.type(description="A chat-model provider and the models it offers.")
class ProviderInfo:
    provider: str = strawberry.field(description='Its name, as ChatSession.provider takes it ("local", "openai").')
    available: bool = strawberry.field(description="The settings allow it (a key, an installed package).")
    reachable: bool = strawberry.field(
        description="It answered a quick check just now (cached for 30 s); false whenever not available."
    )
    reason: str | None = strawberry.field(description="Why it cannot be used or is not reachable, when so.")
    models: list[str] = strawberry.field(description="Known model names (suggestions when openEnded).")
    open_ended: bool = strawberry.field(description="Any model name the provider knows is accepted.")
    default_model: str | None = strawberry.field(
        description="The model to suggest for this provider (its default); null when it has none."
    )
    generations: list[GenerationLoad] = strawberry.field(
        description="Its generation slots, live: the shared pool first, then any model's own."
    )


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


@strawberry.type(description="Reads: knowledge bases, documents, chat sessions, search, tools, and the server's state.")
class Query(ToolQuery):
    @strawberry.field(description="What a new chat session gets for the settings the client leaves out.")
    def session_defaults(self, info: Info) -> SessionDefaults:
        settings = info.context.container.settings
        return SessionDefaults(
            **RagSettings.of(settings.rag).model_dump(),
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

    @strawberry.field(description="The knowledge bases, by name; the first 50 unless asked otherwise.")
    async def projects(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> ProjectConnectionResult:
        store = info.context.container.store

        async def load(request: PageRequest) -> Page[records.Project]:
            return await anyio.to_thread.run_sync(projects.list_page, store, request)

        return await paged(
            info,
            types.ProjectConnection,
            types.PROJECT_CURSOR,
            load,
            types.Project.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="One knowledge base.")
    async def project(self, info: Info, id: Annotated[strawberry.ID, _PROJECT_ID]) -> ProjectResult:
        try:
            pid = parse_id(id, "id")
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        row = await info.context.loaders.project.load(pid)
        return types.Project.of(row) if row else NotFoundError(message=f"project {id} not found", kind="project", id=id)

    @strawberry.field(description="One document.")
    async def document(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The document.")]
    ) -> DocumentResult:
        store = info.context.container.store
        return await call(lambda: types.Document.of(documents.get(store, parse_id(id, "id"))), raising=UNREADABLE)

    @strawberry.field(description="An ingestion job (uploadDocuments returns one), with its files' progress.")
    async def ingestion_job(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The ingestion job.")]
    ) -> IngestionJobResult:
        return await job_resolvers.get(info, id)

    @strawberry.field(
        description="Chat sessions, most recently active first (a session that changes moves to the front); "
        "the first 50 unless asked otherwise."
    )
    async def chat_sessions(
        self,
        info: Info,
        project_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(description="Only this knowledge base's sessions (none when it does not exist)."),
        ] = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> ChatSessionConnectionResult:
        store = info.context.container.store

        async def load(request: PageRequest) -> Page[records.ChatSession]:
            pid = parse_id(project_id, "projectId") if project_id is not None else None
            return await anyio.to_thread.run_sync(lambda: sessions.list_page(store, pid, request))

        return await paged(
            info,
            types.ChatSessionConnection,
            types.SESSION_CURSOR,
            load,
            types.ChatSession.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="One chat session.")
    async def chat_session(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The chat session.")]
    ) -> ChatSessionResult:
        store = info.context.container.store
        return await call(lambda: types.ChatSession.of(sessions.get(store, parse_id(id, "id"))))

    @strawberry.field(description="One message, with its citations and trace.")
    async def message(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The message.")]
    ) -> MessageResult:
        store = info.context.container.store
        return await call(lambda: types.ChatMessage.of(sessions.message(store, parse_id(id, "id"))))

    @strawberry.field(description="Search a knowledge base directly. threshold defaults to the server's.")
    async def search(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, _PROJECT_ID],
        query: Annotated[str, strawberry.argument(description="What to look for, in words.")],
        top_k: Annotated[int, strawberry.argument(description=TOP_K)] = 5,
        threshold: Annotated[float | None, strawberry.argument(description=THRESHOLD)] = None,
        mode: Annotated[
            RetrievalMode, strawberry.argument(description="How to rank the chunks.")
        ] = RetrievalMode.HYBRID,
    ) -> SearchResult:
        container = info.context.container
        return await call(
            lambda: search_results(
                search.search(
                    container.store,
                    container.embedder,
                    container.settings,
                    parse_id(project_id, "projectId"),
                    query,
                    top_k=top_k,
                    threshold=threshold,
                    mode=mode,
                )
            ),
            raising=UNREADABLE,
        )

    @strawberry.field(
        description="What a chat session's next turn would retrieve for a message right now: the same search, "
        "after the session's recent user turns (history-aware), with its rewrite and passes in `search`. The "
        "chat model is called only when that turn would call it (rewrite, expansion, judgement), and then the "
        "preview takes a generation slot as the turn would (BusyError when none comes free in time). Pass "
        "topK/threshold to try values before saving them to the session."
    )
    async def retrieval_preview(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, strawberry.argument(description="The chat session.")],
        message: Annotated[str, strawberry.argument(description="A question, as it would be sent.")],
        top_k: Annotated[int | None, strawberry.argument(description=TOP_K + " Null: the session's.")] = None,
        threshold: Annotated[
            float | None, strawberry.argument(description=THRESHOLD.replace("the server's", "the session's"))
        ] = None,
    ) -> SearchResult:
        container = info.context.container

        async def preview() -> SearchResults:
            found = await search.preview(
                container.store,
                lambda: container.embedder,  # built (on first use) in the search's worker thread
                container.settings,
                container.chat_models,
                container.reranker,
                parse_id(session_id, "sessionId"),
                message,
                top_k=top_k,
                threshold=threshold,
                slots=container.chat.slots,
            )
            return search_results(found.result, found.search, found.ranking)

        return await settle(preview(), raising=UNREADABLE)

    @strawberry.field(description="Chat-model providers this server knows, whether each answers now, and their models.")
    async def providers(self, info: Info) -> list[ProviderInfo]:
        slots = info.context.container.chat.slots
        return [
            ProviderInfo(
                provider=p.provider,
                available=p.available,
                reachable=p.reachable,
                reason=p.reason,
                models=list(p.models),
                open_ended=p.open_ended,
                default_model=p.default_model,
                generations=[
                    GenerationLoad(model=g.model, limit=g.limit, in_use=g.in_use, waiting=g.waiting)
                    for g in slots.loads(p.provider, p.concurrency)
                ],
            )
            for p in await info.context.container.chat_models.list_models()
        ]
