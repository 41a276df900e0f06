"""GraphQL output types, built from the rows the services return (app.services.records). Nested lists
resolve through per-request DataLoaders."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app.graphql.connections import PAGE_OR_MISTAKE, After, Before, Connection, Cursor, First, Last, paged
from app.graphql.context import Info
from app.graphql.enums import AnswerMode, CitationKind, DocumentStatus, MessageStatus, Role
from app.graphql.errors import ValidationError
from app.graphql.rag_settings import RagSettingsFields
from app.graphql.trace_types import Location, RetrievalTrace, trace_from_json
from app.rag.session_settings import RagSettings
from app.services import records

# Cursors name their list and carry its sort key (the orders are the services': projects.ORDER, ...).
CHUNK_CURSOR = Cursor("Chunk", (int, int))
DOCUMENT_CURSOR = Cursor("Document", (str, int))
PROJECT_CURSOR = Cursor("Project", (str, int))
MESSAGE_CURSOR = Cursor("ChatMessage", (int,))
SESSION_CURSOR = Cursor("ChatSession", (datetime, int))


@strawberry.type(description="Is the server up, migrated, and which versions are running.")
class Health:
    ok: bool = strawberry.field(description="True when the database is migrated to the latest revision.")
    version: str
    sqlite_version: str
    sqlite_vec_version: str
    migration_revision: str | None
    head_revision: str


@strawberry.type(description="The embedding model a knowledge base's vectors were made with.")
class EmbeddingSpace:
    label: str


@strawberry.type
class Chunk:
    id: strawberry.ID
    document_id: strawberry.ID
    ordinal: int
    text: str
    token_count: int
    location: Location

    @classmethod
    def of(cls, row: records.Chunk) -> Chunk:
        loc = Location(
            char_start=row.char_start,
            char_end=row.char_end,
            line_start=row.line_start,
            line_end=row.line_end,
            page=row.page,
            heading_path=row.heading_path,
        )
        return cls(
            id=strawberry.ID(str(row.id)),
            document_id=strawberry.ID(str(row.document_id)),
            ordinal=row.ordinal,
            text=row.text,
            token_count=row.token_count,
            location=loc,
        )


@strawberry.type(description="A page of a document's chunks, in document order.")
class ChunkConnection(Connection[Chunk]):
    pass


ChunkConnectionResult = Annotated[
    ChunkConnection | ValidationError,
    strawberry.union("ChunkConnectionResult", description=PAGE_OR_MISTAKE),
]


@strawberry.type
class Document:
    id: strawberry.ID
    project_id: strawberry.ID
    name: str
    kind: str
    size_bytes: int
    content_hash: str
    chunk_count: int
    status: DocumentStatus
    error: str | None
    ingested_at: datetime

    @classmethod
    def of(cls, row: records.Document) -> Document:
        return cls(
            id=strawberry.ID(str(row.id)),
            project_id=strawberry.ID(str(row.project_id)),
            name=row.name,
            kind=row.kind,
            size_bytes=row.size_bytes,
            content_hash=row.content_hash,
            chunk_count=row.chunk_count,
            status=row.status,
            error=row.error,
            ingested_at=row.ingested_at,
        )

    @strawberry.field(description="The document's chunks in document order; the first 50 unless asked otherwise.")
    async def chunks(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> ChunkConnectionResult:
        load = info.context.loaders.chunk_pages.load
        return await paged(
            info,
            ChunkConnection,
            CHUNK_CURSOR,
            lambda request: load((int(self.id), request)),
            Chunk.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )


@strawberry.type(description="A page of a knowledge base's documents, by name.")
class DocumentConnection(Connection[Document]):
    pass


DocumentConnectionResult = Annotated[
    DocumentConnection | ValidationError,
    strawberry.union("DocumentConnectionResult", description=PAGE_OR_MISTAKE),
]


@strawberry.type(description="A knowledge base.")
class Project:
    id: strawberry.ID
    name: str
    description: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: records.Project) -> Project:
        return cls(
            id=strawberry.ID(str(row.id)),
            name=row.name,
            description=row.description,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    @strawberry.field
    async def document_count(self, info: Info) -> int:
        return (await info.context.loaders.project_stats.load(int(self.id))).documents

    @strawberry.field
    async def chunk_count(self, info: Info) -> int:
        return (await info.context.loaders.project_stats.load(int(self.id))).chunks

    @strawberry.field(description="The space searches use; null until the first document is ingested.")
    async def embedding_space(self, info: Info) -> EmbeddingSpace | None:
        label = (await info.context.loaders.project_stats.load(int(self.id))).embedding_space
        return EmbeddingSpace(label=label) if label else None

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


@strawberry.type(description="A page of the knowledge bases, by name.")
class ProjectConnection(Connection[Project]):
    pass


@strawberry.type(description="A source an answer relies on, as it was when the answer was written.")
class Citation:
    id: strawberry.ID
    marker: int
    kind: CitationKind
    score: float = strawberry.field(description="Cosine similarity of the chunk to the question (0-1).")
    rank: int = strawberry.field(description="The chunk's rank in retrieval (1 = best).")
    document_id: strawberry.ID | None
    chunk_id: strawberry.ID | None
    document_name: str
    location: Location
    snippet: str

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


@strawberry.type
class TokenUsage:
    prompt: int
    completion: int
    context: int


@strawberry.type
class ChatMessage:
    id: strawberry.ID
    session_id: strawberry.ID
    role: Role
    content: str
    status: MessageStatus
    error: str | None
    created_at: datetime
    completed_at: datetime | None
    trace: RetrievalTrace | None = strawberry.field(description="Why this answer is what it is (assistant only).")

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
            trace=trace_from_json(row.trace) if row.trace else None,
        )

    @strawberry.field
    async def citations(self, info: Info) -> list[Citation]:
        return [Citation.of(c) for c in await info.context.loaders.citations_by_message.load(int(self.id))]

    @strawberry.field(description="True when RAG was on and no source passed the threshold.")
    def no_context(self) -> bool:
        return bool(self.trace and self.trace.no_context)

    @strawberry.field(description="Why the answer had less to work with than usual (empty when all went well).")
    def degraded(self) -> list[str]:
        return list(self.trace.degraded) if self.trace else []

    @strawberry.field
    def usage(self) -> TokenUsage | None:
        if not self.trace or not self.trace.tokens:
            return None
        t = self.trace.tokens
        return TokenUsage(prompt=t.prompt, completion=t.completion, context=t.context)


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

    id: strawberry.ID
    project_id: strawberry.ID
    title: str
    system_prompt: str
    provider: str
    model: str


@strawberry.type(description="A conversation over one knowledge base, with its own model and RAG settings.")
class ChatSession(_ChatSessionHead, RagSettingsFields):
    answer_mode: AnswerMode = strawberry.field(  # RagSettingsFields' own, described here
        description="GENERATIVE: the chat model writes; EXTRACTIVE: sentences quoted from the sources; "
        "AUTO: generative when the model writes grounded answers reliably, else extractive."
    )
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: records.ChatSession) -> ChatSession:
        return cls(
            id=strawberry.ID(str(row.id)),
            project_id=strawberry.ID(str(row.project_id)),
            title=row.title,
            system_prompt=row.system_prompt,
            provider=row.provider,
            model=row.model,
            **RagSettings.of(row).model_dump(),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

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

    @strawberry.field
    async def last_message(self, info: Info) -> ChatMessage | None:
        row = await info.context.loaders.last_message.load(int(self.id))
        return ChatMessage.of(row) if row else None

    @strawberry.field
    async def project(self, info: Info) -> Project | None:
        row = await info.context.loaders.project.load(int(self.project_id))
        return Project.of(row) if row else None


@strawberry.type(description="A page of chat sessions, most recently active first.")
class ChatSessionConnection(Connection[ChatSession]):
    pass
