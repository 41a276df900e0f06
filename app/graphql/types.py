"""GraphQL output types, built from the rows the services return (app.services.records). Nested lists
resolve through per-request DataLoaders."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from typing import Annotated

import strawberry

from app.errors import NotFoundError
from app.graphql import rag_settings
from app.graphql.chat.trace_types import SCORE, Degradation, Location, RetrievalTrace
from app.graphql.connections import PAGE_OR_MISTAKE, After, Before, Connection, Cursor, First, Last, paged
from app.graphql.context import Info
from app.graphql.enums import AnswerMode, CitationKind, MessageStatus, Role
from app.graphql.errors import ValidationError
from app.graphql.knowledge.document_types import DOCUMENT_CURSOR, Document, DocumentConnection, DocumentConnectionResult
from app.graphql.knowledge.job_types import (
    JOB_CURSOR,
    IngestionJob,
    IngestionJobConnection,
    IngestionJobConnectionResult,
)
from app.graphql.people.types import Person
from app.graphql.rag_settings import RagSettingsFields
from app.graphql.tools.call_types import ToolCall
from app.rag.session_settings import RagSettings
from app.services import records
from app.services.chat import trace_model
from app.services.chat.events import StoredAnswer

# Cursors name their list and carry its sort key (the orders are the services': projects.ORDER, ...).
PROJECT_CURSOR = Cursor("Project", (str, int))
MESSAGE_CURSOR = Cursor("ChatMessage", (int,))
SESSION_CURSOR = Cursor("ChatSession", (datetime, int))
_UNPARSED = object()


@strawberry.type(description="Is the server up, migrated, and which versions are running.")
class Health:
    ok: bool = strawberry.field(description="True when the database is migrated to the latest revision.")
    version: str = strawberry.field(description="ragchat's version.")
    sqlite_version: str | None = strawberry.field(description="The SQLite library's version; null on PostgreSQL.")
    sqlite_vec_version: str | None = strawberry.field(
        description="The sqlite-vec extension's version; null on PostgreSQL."
    )
    database: str = strawberry.field(description='The database engine: "sqlite" or "postgresql".')
    database_version: str = strawberry.field(description="The database engine's version.")
    vector_extension_version: str = strawberry.field(
        description="The vector extension's version: sqlite-vec on SQLite, pgvector on PostgreSQL."
    )
    migration_revision: str | None = strawberry.field(
        description="The database's migration revision; null when it was never migrated."
    )
    head_revision: str = strawberry.field(description="The latest revision this version knows (`ragchat migrate`).")


@strawberry.type(description="The embedding model a knowledge base's vectors were made with.")
class EmbeddingSpace:
    label: str = strawberry.field(description='"provider/model@dimensions", like "local/all-MiniLM-L6-v2@384".')


@strawberry.type(description="A tag of a knowledge base's documents, with how many have it.")
class TagCount:
    tag: str = strawberry.field(description="The tag.")
    documents: int = strawberry.field(description="How many of the knowledge base's documents have it.")


@strawberry.type(description="A knowledge base: documents to search, and the chat sessions over them.")
class Project:
    id: strawberry.ID = strawberry.field(description="The knowledge base's id.")
    name: str = strawberry.field(description="Its name, unique ignoring case.")
    description: str = strawberry.field(description="What it holds (may be empty).")
    created_at: datetime = strawberry.field(description="When it was created.")
    updated_at: datetime = strawberry.field(description="When its name or description last changed.")

    @classmethod
    def of(cls, row: records.Project) -> Project:
        return cls(
            id=strawberry.ID(str(row.id)),
            name=row.name,
            description=row.description,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    @strawberry.field(description="How many documents it has, failed ones included.")
    async def document_count(self, info: Info) -> int:
        return (await info.context.loaders.project_stats.load(int(self.id))).documents

    @strawberry.field(description="How many chunks its documents have in all.")
    async def chunk_count(self, info: Info) -> int:
        return (await info.context.loaders.project_stats.load(int(self.id))).chunks

    @strawberry.field(description="The space searches use; null until the first document is ingested.")
    async def embedding_space(self, info: Info) -> EmbeddingSpace | None:
        label = (await info.context.loaders.project_stats.load(int(self.id))).embedding_space
        return EmbeddingSpace(label=label) if label else None

    @strawberry.field(
        description="The tags its documents carry, by tag, each with how many documents have it: what a "
        "document filter (tagsAny, tagsAll) can select."
    )
    async def document_tags(self, info: Info) -> list[TagCount]:
        found = await info.context.loaders.project_tags.load(int(self.id))
        return [TagCount(tag=tag, documents=count) for tag, count in found]

    @strawberry.field(description="The knowledge base's documents by name; the first 50 unless asked otherwise.")
    async def documents(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> DocumentConnectionResult:
        load = info.context.loaders.document_pages.load
        return await paged(
            info,
            DocumentConnection,
            DOCUMENT_CURSOR,
            lambda request: load((int(self.id), request)),
            Document.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="Its ingestion jobs, newest first; the first 50 unless asked otherwise.")
    async def ingestion_jobs(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> IngestionJobConnectionResult:
        load = info.context.loaders.job_pages.load
        return await paged(
            info,
            IngestionJobConnection,
            JOB_CURSOR,
            lambda request: load((int(self.id), request)),
            IngestionJob.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )


@strawberry.type(description="A page of the knowledge bases, by name.")
class ProjectConnection(Connection[Project]):
    pass


@strawberry.type(description="A source an answer relies on, as it was when the answer was written.")
class Citation:
    id: strawberry.ID = strawberry.field(description="The citation's id.")
    marker: int = strawberry.field(description="The [n] the answer's text shows for it (the source's number).")
    kind: CitationKind = strawberry.field(description="How it came about.")
    score: float | None = strawberry.field(description=SCORE)
    rank: int = strawberry.field(description="The chunk's rank in retrieval (1 = best).")
    document_id: strawberry.ID | None = strawberry.field(
        description="The cited document; null once it has been deleted (the citation keeps its name)."
    )
    chunk_id: strawberry.ID | None = strawberry.field(
        description="The cited chunk; null once it has been deleted or its text changed in a re-ingest."
    )
    document_name: str = strawberry.field(description="The document's name when the answer was written.")
    location: Location = strawberry.field(
        description="Where the cited text sits: the chunk's span, or the quoted sentence's for EXTRACTED."
    )
    snippet: str = strawberry.field(description="The cited text as it was, at most 600 characters.")

    @classmethod
    def of(cls, row: records.Citation) -> Citation:
        return cls(
            id=strawberry.ID(str(row.id)),
            marker=row.marker,
            kind=row.kind,
            score=row.score,
            rank=row.rank,
            document_id=strawberry.ID(str(row.document_id)) if row.document_id else None,
            chunk_id=strawberry.ID(str(row.chunk_id)) if row.chunk_id else None,
            document_name=row.document_name,
            location=Location.from_json(row.location),
            snippet=row.snippet,
        )


@strawberry.type(description="Tokens an answer took.")
class TokenUsage:
    prompt: int = strawberry.field(description="Tokens sent to the model.")
    completion: int = strawberry.field(description="Tokens the model generated.")
    context: int = strawberry.field(description="Of the prompt's tokens, the sources'.")


@strawberry.type(description="A question or an answer in a chat session.")
class ChatMessage:
    id: strawberry.ID = strawberry.field(description="The message's id; later messages have greater ids.")
    session_id: strawberry.ID = strawberry.field(description="Its chat session.")
    role: Role = strawberry.field(description="Who wrote it.")
    content: str = strawberry.field(
        description="Its text (Markdown, with [n] citation markers); of a failed answer, what had streamed."
    )
    status: MessageStatus = strawberry.field(description="Where it is in its life.")
    error: str | None = strawberry.field(description="Why the answer failed; null unless status is FAILED.")
    created_at: datetime = strawberry.field(description="When it was asked, or the answer begun.")
    completed_at: datetime | None = strawberry.field(
        description="When an answer was finished or failed; null while STREAMING, and for questions."
    )
    # The stored trace (JSON), validated on first use (most results need only its noContext, degraded
    # and usage) and then handed to GraphQL as it was read.
    stored_trace: strawberry.Private[object]

    @strawberry.field(description="Why this answer is what it is (assistant only).")
    def trace(self) -> RetrievalTrace | None:
        return self._trace()

    def _trace(self) -> RetrievalTrace | None:
        parsed = self.__dict__.get("_parsed_trace", _UNPARSED)
        if parsed is _UNPARSED:
            parsed = self.__dict__["_parsed_trace"] = trace_model.parse(self.stored_trace)
        return parsed

    @classmethod
    def of(cls, row: records.ChatMessage) -> ChatMessage:
        return cls(
            id=strawberry.ID(str(row.id)),
            session_id=strawberry.ID(str(row.session_id)),
            role=row.role,
            content=row.content,
            status=row.status,
            error=row.error,
            created_at=row.created_at,
            completed_at=row.completed_at,
            stored_trace=row.trace,
        )

    @classmethod
    def stored(cls, info: Info, answer: StoredAnswer) -> ChatMessage:
        """An answer just stored, as its transaction read it back: its citations go to this
        request's loader, so neither is read again."""
        # force: a websocket's loaders live as long as it, and a regenerated answer's citations change.
        info.context.loaders.citations_by_message.prime(answer.message.id, answer.citations, force=True)
        with suppress(KeyError):  # a regeneration changes them too: read them again (KeyError: never read)
            info.context.loaders.tool_calls_by_message.clear(answer.message.id)
        return cls.of(answer.message)

    @strawberry.field(description="The sources the answer relies on, by marker (empty for a question).")
    async def citations(self, info: Info) -> list[Citation]:
        return [Citation.of(c) for c in await info.context.loaders.citations_by_message.load(int(self.id))]

    @strawberry.field(
        description="The tool calls the model made while writing this answer, in order (empty for a question and "
        "when the session allows no tools); previews among them wait for approveToolCall / rejectToolCall."
    )
    async def tool_calls(self, info: Info) -> list[ToolCall]:
        return [ToolCall.of(c) for c in await info.context.loaders.tool_calls_by_message.load(int(self.id))]

    @strawberry.field(description="True when RAG was on and no source passed the threshold.")
    def no_context(self) -> bool:
        trace = self._trace()
        return bool(trace and trace.no_context)

    @strawberry.field(
        description="True when an extractive answer found no sentence in its kept sources that answers the "
        "question and says so; the trace's answer.considered says why each candidate fell short. Unlike "
        "noContext, sources were kept: lowering the threshold does not help."
    )
    def no_answer(self) -> bool:
        trace = self._trace()
        return bool(trace and trace.answer and trace.answer.no_answer)

    @strawberry.field(description="Why the answer had less to work with than usual (empty when all went well).")
    def degraded(self) -> list[Degradation]:
        trace = self._trace()
        return list(trace.degraded) if trace else []

    @strawberry.field(
        description="Tokens the answer took; null for questions, extractive answers and older or failed ones."
    )
    def usage(self) -> TokenUsage | None:
        trace = self._trace()
        tokens = trace.budgeted_tokens if trace else None
        if tokens is None or tokens.context is None:
            return None
        return TokenUsage(prompt=tokens.prompt, completion=tokens.completion, context=tokens.context)


@strawberry.type(
    description="A page of a chat's messages, oldest first; new messages always join the end, so cursors stay put."
)
class ChatMessageConnection(Connection[ChatMessage]):
    pass


ChatMessageConnectionResult = Annotated[
    ChatMessageConnection | ValidationError,
    strawberry.union("ChatMessageConnectionResult", description=PAGE_OR_MISTAKE),
]


@strawberry.type
class _ChatSessionHead:
    """ChatSession's fields that come before its RAG settings in the schema (a base of its own so
    that RagSettingsFields' follow them)."""

    id: strawberry.ID = strawberry.field(description="The chat session's id.")
    project_id: strawberry.ID = strawberry.field(description="The knowledge base it searches.")
    title: str = strawberry.field(description="Its title, shown in the chat list.")
    system_prompt: str = strawberry.field(description="Extra instructions for the chat model (may be empty).")
    provider: str = strawberry.field(description='The chat model\'s provider, like "local" or "openai".')
    model: str = strawberry.field(description="The chat model.")
    shared: bool = strawberry.field(
        description="Its owner shares it read-only with its knowledge base's members (shareChatSession); else "
        "only its owner reads it."
    )


@strawberry.type(description="A conversation over one knowledge base, with its own model and RAG settings.")
class ChatSession(_ChatSessionHead, RagSettingsFields):
    answer_mode: AnswerMode = strawberry.field(  # RagSettingsFields' own, described here
        description="GENERATIVE: the chat model writes; EXTRACTIVE: sentences quoted from the sources; "
        "AUTO: generative when the model writes grounded answers reliably, else extractive."
    )
    created_at: datetime = strawberry.field(description="When it was created.")
    updated_at: datetime = strawberry.field(description="When it last changed: a message, or a settings change.")

    @classmethod
    def of(cls, row: records.ChatSession) -> ChatSession:
        return cls(
            id=strawberry.ID(str(row.id)),
            project_id=strawberry.ID(str(row.project_id)),
            title=row.title,
            system_prompt=row.system_prompt,
            provider=row.provider,
            model=row.model,
            shared=row.shared,
            **rag_settings.shown(RagSettings.of(row)),
            created_at=row.created_at,
            updated_at=row.updated_at,
            owner_id=row.owner_id,
        )

    owner_id: strawberry.Private[int | None] = None

    @strawberry.field(
        description="Who made it and alone may change it; null for a chat of the administrators' (made before "
        "this server had people, or by a server key)."
    )
    async def owner(self, info: Info) -> Person | None:
        if self.owner_id is None:
            return None
        row = await info.context.loaders.person.load(self.owner_id)
        return None if row is None else Person.of(row)

    @strawberry.field(
        description="The tool groups it may use, sorted (none by default: tools are opt-in per session); set them "
        "with setChatSessionToolGroups."
    )
    async def tool_groups(self, info: Info) -> list[str]:
        groups: list[str] = await info.context.loaders.tool_groups.load(int(self.id))
        return groups

    @strawberry.field(
        description="The chat's messages, oldest first. Without first or last: the newest 50. A chat view asks "
        "for `last: n` and loads older ones with `last: n, before: pageInfo.startCursor`; `first`/`after` "
        "read forward from the oldest."
    )
    async def messages(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> ChatMessageConnectionResult:
        load = info.context.loaders.message_pages.load
        return await paged(
            info,
            ChatMessageConnection,
            MESSAGE_CURSOR,
            lambda request: load((int(self.id), request)),
            ChatMessage.of,
            first=first,
            after=after,
            last=last,
            before=before,
            from_end=True,
        )

    @strawberry.field(description="Its latest message; null while it has none.")
    async def last_message(self, info: Info) -> ChatMessage | None:
        row = await info.context.loaders.last_message.load(int(self.id))
        return ChatMessage.of(row) if row else None

    @strawberry.field(description="The knowledge base it searches.")
    async def project(self, info: Info) -> Project:
        # Never missing: chat_sessions.project_id is NOT NULL with ON DELETE CASCADE, so a session
        # whose project is gone is gone too (read in the meantime: a not-found error, not a null).
        project_id = int(self.project_id)
        row = await info.context.loaders.project.load(project_id)
        if row is None:
            raise NotFoundError("project", project_id)
        return Project.of(row)


@strawberry.type(description="A page of chat sessions, most recently active first.")
class ChatSessionConnection(Connection[ChatSession]):
    pass
