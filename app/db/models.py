"""ORM models. The schema itself is owned by the Alembic revisions in ``migrations/``.

Tables the ORM does not model, on purpose (created by migrations or by the vector store):
``chunks_fts`` (FTS5, kept in sync with ``chunks`` by triggers) and one ``vec_space_<id>`` vec0 table
per embedding space (its dimension is part of the table, so it is created when the space is).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import JSON, TypeDecorator

from app.db.enums import (
    CitationKind,
    DocumentStatus,
    HttpMethod,
    ItemState,
    JobOrigin,
    MemberRole,
    MessageStatus,
    Role,
    SpaceStatus,
    ToolCallStatus,
    ToolKind,
)

E = TypeVar("E", bound=StrEnum)


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes (SQLite stores them naive)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None else None


class StoredEnum(TypeDecorator[E]):
    """A ``StrEnum`` column: stored as its value in a VARCHAR(20), read back as the member."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[E]) -> None:
        super().__init__(20)
        self.enum = enum

    def process_result_value(self, value: str | None, dialect: object) -> E | None:
        return self.enum(value) if value is not None else None


def one_of(column: str, enum: type[StrEnum]) -> str:
    """The CHECK constraint's condition that ``column`` holds a value of ``enum``."""
    return f"{column} IN ({', '.join(repr(m.value) for m in enum)})"


class Base(DeclarativeBase):
    pass


# AUTOINCREMENT: an id is never handed out twice, so work still running for a deleted row (an answer
# streaming into its message, an upload into its project) can never land in a newer row (0008).
NEVER_REUSED_IDS = {"sqlite_autoincrement": True}
COMMIT_CHECKED: dict[str, Any] = {"deferrable": True, "initially": "DEFERRED"}


class Timestamps:
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class Project(Timestamps, Base):
    """A knowledge base: documents, their chunks, and the embedding space they live in."""

    __tablename__ = "projects"
    __table_args__ = NEVER_REUSED_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    # Bumped by every change of its documents' tags or modification dates: with the chunks'
    # revision, the key of a document filter's resolved chunks (app/rag/search/document_filter.py).
    metadata_revision: Mapped[int] = mapped_column(Integer, server_default=text("0"), default=0)

    documents: Mapped[list[Document]] = relationship(
        back_populates="project", cascade="all, delete-orphan", passive_deletes=True
    )


class EmbeddingSpace(Base):
    """Which model made a project's vectors. Vectors of different spaces never mix."""

    __tablename__ = "embedding_spaces"
    __table_args__ = (
        CheckConstraint("dimensions > 0", name="ck_spaces_dimensions"),
        CheckConstraint(one_of("status", SpaceStatus), name="ck_spaces_status"),
        # A project searches exactly one space at a time; reindexing builds the next one beside it.
        Index(
            "uq_spaces_one_active",
            "project_id",
            unique=True,
            sqlite_where=text(f"status = '{SpaceStatus.ACTIVE.value}'"),
            postgresql_where=text(f"status = '{SpaceStatus.ACTIVE.value}'"),
        ),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(50))
    model: Mapped[str] = mapped_column(String(200))
    dimensions: Mapped[int] = mapped_column(Integer)
    status: Mapped[SpaceStatus] = mapped_column(StoredEnum(SpaceStatus), default=SpaceStatus.BUILDING)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    @property
    def table(self) -> str:
        return f"vec_space_{self.id}"

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}@{self.dimensions}"


class VectorJournal(Base):
    """Which chunks' vectors changed in a space, in commit order, so an in-memory index can catch up
    by re-reading only those (app/rag/index/vector_index.py). Written by ``vector_store.put`` and by a
    trigger on chunk deletion. A row with no chunk id marks where a space's journal begins."""

    __tablename__ = "vector_journal"
    __table_args__ = (Index("ix_vector_journal_space_seq", "space_id", "seq"),)

    seq: Mapped[int] = mapped_column(primary_key=True)
    space_id: Mapped[int] = mapped_column(ForeignKey("embedding_spaces.id", ondelete="CASCADE"))
    chunk_id: Mapped[int | None] = mapped_column(Integer)


class KeywordJournal(Base):
    """Which chunks of a project were inserted, deleted or re-texted, in commit order, so the
    in-memory keyword index can catch up by re-reading only those (app/rag/index/keyword_index.py).
    Written by triggers on ``chunks`` (migration 0010); no foreign key, because a project's deletion
    removes its rows with a trigger. A row with no chunk id marks where a project's journal begins."""

    __tablename__ = "keyword_journal"
    __table_args__ = (Index("ix_keyword_journal_project_seq", "project_id", "seq"),)

    seq: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer)
    chunk_id: Mapped[int | None] = mapped_column(Integer)


class Document(Timestamps, Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_documents_project_name"),
        CheckConstraint(one_of("status", DocumentStatus), name="ck_documents_status"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(1000))
    kind: Mapped[str] = mapped_column(String(20))
    size_bytes: Mapped[int] = mapped_column(Integer, default=0)
    content_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[DocumentStatus] = mapped_column(StoredEnum(DocumentStatus), default=DocumentStatus.READY)
    error: Mapped[str | None] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The URL it was fetched from (after redirects); null for uploaded files and text.
    source_url: Mapped[str | None] = mapped_column(Text)
    # When the file itself last changed, as its uploader or the ingesting file system said; null
    # when nobody did. A filter's date range reads it, else ingested_at (the upload).
    modified_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    project: Mapped[Project] = relationship(back_populates="documents")
    tags: Mapped[list[DocumentTag]] = relationship(
        cascade="all, delete-orphan", passive_deletes=True, order_by="DocumentTag.tag"
    )
    chunks: Mapped[list[Chunk]] = relationship(
        back_populates="document",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Chunk.ordinal",
    )


class DocumentTag(Base):
    """A free tag on a document: a row each, so a filter on tags is an indexed lookup on either backend."""

    __tablename__ = "document_tags"
    __table_args__ = (Index("ix_document_tags_tag", "tag", "document_id"),)

    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(64), primary_key=True)


class Chunk(Base):
    """A piece of a document, with the exact place it came from so a citation can point at it."""

    __tablename__ = "chunks"
    __table_args__ = (Index("ix_chunks_document_ordinal", "document_id", "ordinal"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    # Denormalised so every search is scoped to one project without a join.
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    token_count: Mapped[int] = mapped_column(Integer)
    char_start: Mapped[int] = mapped_column(Integer)
    char_end: Mapped[int] = mapped_column(Integer)
    line_start: Mapped[int] = mapped_column(Integer)
    line_end: Mapped[int] = mapped_column(Integer)
    page: Mapped[int | None] = mapped_column(Integer)
    heading_path: Mapped[str] = mapped_column(Text, default="")

    document: Mapped[Document] = relationship(back_populates="chunks")


class ChatSession(Timestamps, Base):
    """A conversation over one knowledge base, with its own model and RAG settings."""

    __tablename__ = "chat_sessions"
    __table_args__ = (
        CheckConstraint("top_k BETWEEN 1 AND 50", name="ck_chat_sessions_top_k"),
        CheckConstraint("threshold >= 0 AND threshold <= 1", name="ck_chat_sessions_threshold"),
        CheckConstraint("answer_mode IN ('generative', 'extractive', 'auto')", name="ck_chat_sessions_answer_mode"),
        CheckConstraint("rerank IN ('off', 'auto', 'endpoint', 'judge')", name="ck_chat_sessions_rerank"),
        CheckConstraint("expansion IN ('off', 'on', 'auto')", name="ck_chat_sessions_expansion"),
        CheckConstraint("quality IN ('quick', 'balanced', 'thorough')", name="ck_chat_sessions_quality"),
        CheckConstraint("rewrite IN ('off', 'on', 'auto')", name="ck_chat_sessions_rewrite"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    system_prompt: Mapped[str] = mapped_column(Text, default="")
    provider: Mapped[str] = mapped_column(String(50))
    model: Mapped[str] = mapped_column(String(200))
    enable_rag: Mapped[bool] = mapped_column(Boolean, server_default=true())
    top_k: Mapped[int] = mapped_column(Integer, server_default=text("5"))
    threshold: Mapped[float] = mapped_column(Float)
    include_citations: Mapped[bool] = mapped_column(Boolean, server_default=true())
    answer_mode: Mapped[str] = mapped_column(String(20), server_default=text("'auto'"))
    rerank: Mapped[str] = mapped_column(String(10), server_default=text("'auto'"))
    expansion: Mapped[str] = mapped_column(String(10), server_default=text("'off'"))
    quality: Mapped[str] = mapped_column(String(20), server_default=text("'balanced'"))
    rewrite: Mapped[str] = mapped_column(String(20), server_default=text("'auto'"))
    # Which documents the session searches (app/rag/search/document_filter.py), as JSON; null: all.
    document_filter: Mapped[str | None] = mapped_column(Text)
    # Who made the chat; only they read and change it. NULL: made before people existed, or its
    # person was deleted: such chats belong to the server's administrators (migration 0025).
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    # Shared read-only with the knowledge base's members by its owner (revocable).
    shared: Mapped[bool] = mapped_column(Boolean, server_default=false())

    messages: Mapped[list[ChatMessage]] = relationship(
        back_populates="chat",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="ChatMessage.id",
    )


class ChatMessage(Base):
    __tablename__ = "chat_messages"
    __table_args__ = (
        CheckConstraint(one_of("role", Role), name="ck_chat_messages_role"),
        CheckConstraint(one_of("status", MessageStatus), name="ck_chat_messages_status"),
        Index("ix_chat_messages_session_id_id", "session_id", "id"),
        # A client's key for a turn (clientMessageId): a repeat of the request finds the turn it started.
        Index(
            "uq_chat_messages_client_message_id",
            "session_id",
            "client_message_id",
            unique=True,
            sqlite_where=text("client_message_id IS NOT NULL"),
            postgresql_where=text("client_message_id IS NOT NULL"),
        ),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"))
    role: Mapped[Role] = mapped_column(StoredEnum(Role))
    content: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[MessageStatus] = mapped_column(StoredEnum(MessageStatus), default=MessageStatus.COMPLETE)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # What made this answer: candidates and their fate, stage timings, token counts, flags.
    trace: Mapped[dict[str, object] | None] = mapped_column(JSON)
    client_message_id: Mapped[str | None] = mapped_column(String(100))
    owner: Mapped[int | None] = mapped_column(Integer)  # the server writing it while streaming (0021)
    # While streaming: until when a client follows it from another server process (0023, app/services/chat/follow.py).
    followed_until: Mapped[datetime | None] = mapped_column(UTCDateTime())

    chat: Mapped[ChatSession] = relationship(back_populates="messages")
    citations: Mapped[list[Citation]] = relationship(
        back_populates="message",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Citation.marker",
    )


class Citation(Base):
    """A source an answer relies on. Document name, location and snippet are kept as they were
    when the answer was written, so the citation still explains it after a re-ingest."""

    __tablename__ = "citations"
    __table_args__ = (
        CheckConstraint(one_of("kind", CitationKind), name="ck_citations_kind"),
        Index("ix_citations_message_id", "message_id"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # Checked at commit on PostgreSQL (migration 0018: a project's deletion reaches a citation by
    # two cascades); SQLite's tables, created before, keep immediate checks.
    message_id: Mapped[int] = mapped_column(ForeignKey("chat_messages.id", ondelete="CASCADE", **COMMIT_CHECKED))
    chunk_id: Mapped[int | None] = mapped_column(ForeignKey("chunks.id", ondelete="SET NULL", **COMMIT_CHECKED))
    document_id: Mapped[int | None] = mapped_column(ForeignKey("documents.id", ondelete="SET NULL", **COMMIT_CHECKED))
    marker: Mapped[int] = mapped_column(Integer)
    kind: Mapped[CitationKind] = mapped_column(StoredEnum(CitationKind), default=CitationKind.MODEL)
    score: Mapped[float | None] = mapped_column(Float)  # cosine; None when the source had none (0009)
    rank: Mapped[int] = mapped_column(Integer)
    document_name: Mapped[str] = mapped_column(String(1000))
    location: Mapped[dict[str, object]] = mapped_column(JSON)
    snippet: Mapped[str] = mapped_column(Text)

    message: Mapped[ChatMessage] = relationship(back_populates="citations")


class Tool(Timestamps, Base):
    """A tool a chat model may be offered (migration 0011). Secrets are never stored here: an HTTP
    tool's ``header_secrets`` maps each header to the *name* of a secret in the server's settings
    (RAGCHAT_TOOLS__SECRETS__<NAME>), read when the call is made."""

    __tablename__ = "tools"
    __table_args__ = (
        CheckConstraint(one_of("kind", ToolKind), name="ck_tools_kind"),
        CheckConstraint(f"http_method IS NULL OR {one_of('http_method', HttpMethod)}", name="ck_tools_http_method"),
        CheckConstraint(
            "(kind = 'http' AND http_method IS NOT NULL AND url_template IS NOT NULL) OR "
            "(kind = 'builtin' AND http_method IS NULL AND url_template IS NULL) OR "
            "(kind = 'mcp' AND http_method IS NULL AND url_template IS NOT NULL AND remote_name IS NOT NULL)",
            name="ck_tools_http_fields",
        ),
        CheckConstraint("timeout_seconds > 0 AND timeout_seconds <= 120", name="ck_tools_timeout"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(Text)
    input_schema: Mapped[dict[str, object]] = mapped_column(JSON)
    examples: Mapped[list[str]] = mapped_column(JSON)
    tool_group: Mapped[str] = mapped_column(String(64), index=True)
    core: Mapped[bool] = mapped_column(Boolean)
    kind: Mapped[ToolKind] = mapped_column(StoredEnum(ToolKind))
    http_method: Mapped[HttpMethod | None] = mapped_column(StoredEnum(HttpMethod))
    url_template: Mapped[str | None] = mapped_column(Text)
    header_secrets: Mapped[dict[str, str]] = mapped_column(JSON)
    timeout_seconds: Mapped[float] = mapped_column(Float)
    side_effects: Mapped[bool] = mapped_column(Boolean)
    # An HTTP tool with side effects may name a request that only shows what it would do:
    # {"method": ..., "url_template": ...}, run instead of it when previewing.
    dry_run: Mapped[dict[str, str] | None] = mapped_column(JSON)
    # Whose it is: NULL, the server's (administrators define it); else that knowledge base's (its
    # editors define it, and only its chats may call it). Migration 0028.
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    # An MCP tool's name on its server (``url_template`` holds the server's URL): ragchat's ``name``
    # may carry a prefix, since names are unique here and two servers may both have a "search".
    # Migration 0029.
    remote_name: Mapped[str | None] = mapped_column(String(128), default=None)


class ToolVector(Base):
    """A tool's embedded text (``{name} — {description} | {example} | ...``) in one embedding space,
    built when the tool is created or changed; ``text_hash`` says which text it was, so a stale or
    other-space vector is rebuilt rather than compared."""

    __tablename__ = "tool_vectors"

    tool_id: Mapped[int] = mapped_column(ForeignKey("tools.id", ondelete="CASCADE"), primary_key=True)
    space: Mapped[str] = mapped_column(String(300))
    text_hash: Mapped[str] = mapped_column(String(64))
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class StoredToolCall(Base):
    """One tool call a model made while writing an answer (migration 0017), in the order it made
    them. The tool may be deleted later: ``tool_name`` stays, ``tool_id`` becomes NULL. A
    side-effecting call is stored as ``preview`` and runs only when approved: the move out of
    ``preview`` is one conditional UPDATE, so it runs once however often it is approved."""

    __tablename__ = "tool_calls"
    __table_args__ = (
        CheckConstraint(one_of("status", ToolCallStatus), name="ck_tool_calls_status"),
        CheckConstraint("result_chars >= 0 AND position >= 0", name="ck_tool_calls_counts"),
        UniqueConstraint("message_id", "position", name="uq_tool_calls_message_position"),
        Index("ix_tool_calls_session_id", "session_id"),
        Index("ix_tool_calls_status", "status"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[int] = mapped_column(ForeignKey("chat_messages.id", ondelete="CASCADE"))
    session_id: Mapped[int] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)  # 0-based, in the order the model called
    call_id: Mapped[str] = mapped_column(String(200))  # the model's id for the call
    tool_id: Mapped[int | None] = mapped_column(ForeignKey("tools.id", ondelete="SET NULL"))
    tool_name: Mapped[str] = mapped_column(String(200))  # as the model called it (maybe no tool's)
    arguments: Mapped[str] = mapped_column(Text)  # the JSON text the model wrote, unparsed
    status: Mapped[ToolCallStatus] = mapped_column(StoredEnum(ToolCallStatus))
    result: Mapped[str | None] = mapped_column(Text)  # its output, capped (RESULT_MAX characters)
    result_chars: Mapped[int] = mapped_column(Integer, default=0)  # the output's size before the cap
    error: Mapped[str | None] = mapped_column(Text)
    ms: Mapped[float | None] = mapped_column(Float)  # how long it ran
    preview: Mapped[str | None] = mapped_column(Text)  # what it would do (its dry run's output, or a summary)
    # A preview's request (method, URL, body, header and secret names), hashed: approval runs only that (0024).
    request_fingerprint: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # approved or rejected
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The message that told the conversation how an approved or rejected call ended.
    outcome_message_id: Mapped[int | None] = mapped_column(ForeignKey("chat_messages.id", ondelete="SET NULL"))
    owner: Mapped[int | None] = mapped_column(Integer)  # the server running it once approved (0021)


class SessionToolGroup(Base):
    """A tool group a chat session may use (none by default: tools are opt-in per session)."""

    __tablename__ = "chat_session_tool_groups"

    session_id: Mapped[int] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True)
    tool_group: Mapped[str] = mapped_column(String(64), primary_key=True)


class IngestionJob(Base):
    """One upload batch, CLI call or fetched address: the files it brought, as ``IngestionItem``s.
    Its progress is its items'; it only records where it came from and when (0013)."""

    __tablename__ = "ingestion_jobs"
    __table_args__ = (
        CheckConstraint(one_of("origin", JobOrigin), name="ck_ingestion_jobs_origin"),
        Index("ix_ingestion_jobs_project_id_id", "project_id", "id"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    origin: Mapped[JobOrigin] = mapped_column(StoredEnum(JobOrigin))
    # Which configured API key sent it (its position in RAGCHAT_API__API_KEYS, from 1); null without keys.
    api_key_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    items: Mapped[list[IngestionItem]] = relationship(
        back_populates="job", cascade="all, delete-orphan", passive_deletes=True, order_by="IngestionItem.id"
    )


class IngestionItem(Base):
    """One file of a job, where it is (``ItemState``), its chunks embedded of those to embed, and the
    bytes waiting for the worker: a spooled upload under the data directory or a CLI path."""

    __tablename__ = "ingestion_items"
    __table_args__ = (
        CheckConstraint(one_of("state", ItemState), name="ck_ingestion_items_state"),
        CheckConstraint("chunks_done >= 0 AND chunks_total >= 0", name="ck_ingestion_items_chunks"),
        Index("ix_ingestion_items_job_id_id", "job_id", "id"),
        # The worker's queue and the per-project limits read unfinished items by state.
        Index("ix_ingestion_items_state_id", "state", "id"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("ingestion_jobs.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(1000))
    size_bytes: Mapped[int] = mapped_column(Integer, default=0)
    source_path: Mapped[str] = mapped_column(Text)
    source_url: Mapped[str | None] = mapped_column(Text)  # fetched from (addDocumentFromUrl), 0016
    state: Mapped[ItemState] = mapped_column(StoredEnum(ItemState), default=ItemState.QUEUED)
    outcome: Mapped[str | None] = mapped_column(String(20))  # FileStatus once it ended in READY or FAILED
    error: Mapped[str | None] = mapped_column(Text)
    document_id: Mapped[int | None] = mapped_column(ForeignKey("documents.id", ondelete="SET NULL"))
    chunks_done: Mapped[int] = mapped_column(Integer, default=0)
    chunks_total: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    owner: Mapped[int | None] = mapped_column(Integer)  # the server ingesting it (0021)
    # The tags its document gets (a JSON list, validated when the upload was taken; 0031); null: the
    # document's own are kept. On the item, so a retry or another server's worker still applies them.
    tags: Mapped[str | None] = mapped_column(Text)

    job: Mapped[IngestionJob] = relationship(back_populates="items")


class Server(Base):
    """An API server using the database (migration 0021): registered at start-up, deleted at
    shutdown or, once its lock is free (its process ended), by another server, which then recovers
    the rows it owned (app/services/leases.py). No foreign keys point here: an owner is a plain id."""

    __tablename__ = "servers"
    __table_args__ = NEVER_REUSED_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class User(Timestamps, Base):
    """A person who signs in (migration 0025). ``email`` is stored lower-case and is the sign-in name;
    ``password_hash`` is argon2id (app/services/people/passwords.py), NULL for a person who only
    signs in through single sign-on; ``oidc_subject`` is ``<issuer> <sub>`` once they have."""

    __tablename__ = "users"
    __table_args__ = NEVER_REUSED_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str | None] = mapped_column(String(200))
    is_admin: Mapped[bool] = mapped_column(Boolean, server_default=false())
    disabled: Mapped[bool] = mapped_column(Boolean, server_default=false())
    oidc_subject: Mapped[str | None] = mapped_column(String(400), unique=True)
    # Sessions and keys issued before this instant are void: bumped by a password change or reset.
    credentials_since: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Membership(Base):
    """A person's role in one knowledge base."""

    __tablename__ = "memberships"
    __table_args__ = (
        CheckConstraint(one_of("role", MemberRole), name="ck_memberships_role"),
        UniqueConstraint("user_id", "project_id", name="uq_memberships_user_project"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    role: Mapped[MemberRole] = mapped_column(StoredEnum(MemberRole))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BrowserSession(Base):
    """A signed-in browser. The cookie holds a random token; only its SHA-256 is stored, so a read
    of the database signs no one in. Valid while not revoked, seen within the idle timeout and
    younger than the absolute lifetime (app/services/people/sessions.py)."""

    __tablename__ = "browser_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Invitation(Base):
    """A one-time link that lets a person set their password (an invitation, or a reset by an
    administrator). Only the SHA-256 of its token is stored; used once, then ``used_at`` is set."""

    __tablename__ = "invitations"
    __table_args__ = NEVER_REUSED_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class SignInFlow(Base):
    """A single sign-on under way (migration 0027): what its callback checks, for ten minutes, used
    once (app/services/people/single_sign_on.py). Only digests of the state and of the browser's
    cookie are stored; the nonce and the PKCE verifier are useless without the provider's code."""

    __tablename__ = "sign_in_flows"

    id: Mapped[int] = mapped_column(primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    browser_hash: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(100))
    code_verifier: Mapped[str] = mapped_column(String(200))
    redirect_uri: Mapped[str] = mapped_column(String(2000))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


class PersonKey(Base):
    """A person's API key: shown once, stored as its SHA-256 (the key is 256 random bits, so a fast
    hash is enough), never more than its person may do. ``projects`` NULL: every knowledge base the
    person belongs to; else only those ids."""

    __tablename__ = "person_keys"
    __table_args__ = NEVER_REUSED_IDS

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(20))  # shown in lists, so a person can tell keys apart
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    projects: Mapped[list[int] | None] = mapped_column(JSON)
    read_only: Mapped[bool] = mapped_column(Boolean, server_default=false())
    manage_users: Mapped[bool] = mapped_column(Boolean, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
