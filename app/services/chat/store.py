"""The chat turn's writes, each one short transaction (called from worker threads).

A turn's late writes (``finish``, ``fail``) touch its answer only while that row is still the one it
started: same id, same session, still 'streaming'. Ids are never reused (0008), and this scoping
keeps a stale turn from writing anywhere else even so.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, cast

from sqlalchemy import Integer, Row, Select, Table, bindparam, case, delete, insert, select, update
from sqlalchemy.orm import Session

from app.db import locks
from app.db.database import Database
from app.db.enums import CitationKind, MessageStatus, Role
from app.db.models import ChatMessage, ChatSession, Chunk, Citation, Document, StoredToolCall, utcnow
from app.db.rows import require
from app.errors import ConflictError, NotFoundError, ValidationError
from app.llm.base import Message
from app.rag.search.candidates import Location
from app.rag.session_settings import RagSettings
from app.services.chat.events import SourceRef, StoredAnswer
from app.services.tools import calls as tool_calls
from app.services.tools import catalog as tool_catalog

INTERRUPTED = "interrupted: the server stopped before the answer was finished; regenerate it to try again"


@dataclass(frozen=True)
class SessionSnapshot:
    """The session's settings as this turn read them (later edits apply to the next turn)."""

    id: int
    project_id: int
    system_prompt: str
    provider: str
    model: str
    rag: RagSettings


@dataclass(frozen=True)
class Turn:
    chat: SessionSnapshot  # the chat session's settings as the turn read them
    user_message_id: int
    message_id: int  # the assistant message being written
    question: str
    history: list[Message]
    tool_groups: list[str]  # the tool groups the session allowed when the turn began (sorted)


def snapshot(row: ChatSession | Row[Any]) -> SessionSnapshot:
    """A session's settings from its ORM row or a Core row of its columns."""
    return SessionSnapshot(row.id, row.project_id, row.system_prompt, row.provider, row.model, RagSettings.of(row))


def _history_query(*, before: bool) -> Select[Role, str, StoredToolCall]:
    query = (
        select(ChatMessage.role, ChatMessage.content, StoredToolCall)
        .outerjoin(StoredToolCall, StoredToolCall.outcome_message_id == ChatMessage.id)
        .where(ChatMessage.session_id == bindparam("session_id"), ChatMessage.status == MessageStatus.COMPLETE)
    )
    if before:
        query = query.where(ChatMessage.id < bindparam("before_id"))
    return query.order_by(ChatMessage.id.desc()).limit(bindparam("turns", type_=Integer))


# A turn's statements are built once, with bind parameters, and reused: building one (its operators
# and coercions) and deriving its cache key (which a statement object keeps) was about a third of
# the Python work of storing a question.
_HISTORY = _history_query(before=False)
_HISTORY_BEFORE = _history_query(before=True)


def _history(db: Session, session_id: int, before_id: int | None, turns: int) -> list[Message]:
    """The last ``turns`` complete messages of the session (before message ``before_id``, if given).
    An approved tool call's outcome is the tool's output, not the model's words: it goes back as a
    fenced tool result (tool_calls.for_model), never as an assistant message."""
    if turns <= 0:
        return []
    if before_id is None:
        rows = db.execute(_HISTORY, {"session_id": session_id, "turns": turns}).all()
    else:
        rows = db.execute(_HISTORY_BEFORE, {"session_id": session_id, "before_id": before_id, "turns": turns}).all()
    return [
        Message("user" if role is Role.USER else "assistant", content) if call is None else tool_calls.for_model(call)
        for role, content, call in reversed(rows)
    ]


def recent(store: Database, session_id: int, turns: int) -> list[Message]:
    """The messages the session's next turn would take as its history (``turns`` at most)."""
    with store.read() as db:
        return _history(db, session_id, None, turns)


@dataclass(frozen=True)
class Keyed:
    """What a client key (clientMessageId) already names in a session."""

    answer_id: int
    question: str | None  # the question the key was sent with; None when it named a regeneration


def keyed(store: Database, session_id: int, client_key: str) -> Keyed | None:
    with store.read() as db:
        row = db.scalar(
            select(ChatMessage).where(ChatMessage.session_id == session_id, ChatMessage.client_message_id == client_key)
        )
        if row is None:
            return None
        if row.role is Role.ASSISTANT:
            return Keyed(row.id, None)
        answer_id = db.scalar(
            select(ChatMessage.id)
            .where(ChatMessage.session_id == session_id, ChatMessage.id > row.id, ChatMessage.role == Role.ASSISTANT)
            .order_by(ChatMessage.id)
            .limit(1)
        )
        if answer_id is None:
            raise NotFoundError("answer to message", row.id)
        return Keyed(answer_id, row.content)


def keyed_for_message(store: Database, message_id: int, client_key: str) -> Keyed | None:
    """What ``client_key`` names in the session of message ``message_id`` (which must exist)."""
    with store.read() as db:
        session_id = db.scalar(select(ChatMessage.session_id).where(ChatMessage.id == message_id))
    if session_id is None:
        raise NotFoundError("message", message_id)
    return keyed(store, session_id, client_key)


def _key_in_use(db: Session, session_id: int, client_key: str | None, by: int | None = None) -> None:
    if client_key is None:
        return
    locks.take_turns(db, "client keys", session_id)  # PostgreSQL: a repeat sent to another server at once
    holder = db.scalar(
        select(ChatMessage.id).where(ChatMessage.session_id == session_id, ChatMessage.client_message_id == client_key)
    )
    if holder is not None and holder != by:
        raise ConflictError(f"clientMessageId {client_key!r} is already used by another message in this session")


def settings_of(store: Database, session_id: int) -> SessionSnapshot:
    """The session's settings now: what a turn about to start will need (its provider's slot)."""
    with store.read() as db:
        row = require(db, ChatSession, session_id)
        return snapshot(row)


def settings_for_answer(store: Database, message_id: int) -> SessionSnapshot:
    """The settings of the session of message ``message_id`` (``settings_of``, for regenerating)."""
    with store.read() as db:
        session_id = db.scalar(select(ChatMessage.session_id).where(ChatMessage.id == message_id))
        row = db.get(ChatSession, session_id) if session_id is not None else None
        if row is None:
            raise NotFoundError("message", message_id)
        return snapshot(row)


DEFAULT_TITLE = "New chat"
TITLE_CHARS = 60


def title_of(question: str) -> str:
    """A chat's title from its first question: its first line, spaces collapsed, cut at a word
    within TITLE_CHARS (deterministic; no model is asked)."""
    line = " ".join(question.strip().splitlines()[0].split()) if question.strip() else DEFAULT_TITLE
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1].rsplit(" ", 1)[0] or line[: TITLE_CHARS - 1]
    return cut.rstrip(" ,;:-") + "…"


def begin(store: Database, session_id: int, question: str, history_turns: int, client_key: str | None = None) -> Turn:
    """Store the user's message and a placeholder for the answer, before any model is called."""
    with store.write() as db:
        chat = _touch(db, session_id, question)
        _key_in_use(db, session_id, client_key)
        # Core statements, not the ORM's unit of work (~1k Python calls a turn for two rows and a
        # timestamp): nothing here is read back as an object. Both rows in one INSERT, the question's
        # first: SQLite and PostgreSQL insert VALUES rows in their order, taking ids as they go, so it
        # gets the smaller id, as history and clientMessageId lookups expect (RETURNING's order is not
        # promised: the role tells the two apart).
        common = {"session_id": session_id, "created_at": utcnow()}
        question_row = {
            "role": Role.USER,
            "content": question,
            "status": MessageStatus.COMPLETE,
            "client_message_id": client_key,
            "owner": None,
        }
        answer_row = {
            "role": Role.ASSISTANT,
            "content": "",
            "status": MessageStatus.STREAMING,
            "client_message_id": None,
            "owner": store.owner,
        }
        rows = db.execute(_ASK, [common | question_row, common | answer_row]).all()
        ids = {row.role: row.id for row in rows}
        user_id = ids[Role.USER]
        history = _history(db, session_id, user_id, history_turns)
        groups = tool_catalog.groups_in(db, [session_id])[session_id]
        return Turn(chat, user_id, ids[Role.ASSISTANT], question, history, groups)


_SESSIONS = cast(Table, ChatSession.__table__)
_TOUCH = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("chat_id"))
    .values(
        updated_at=bindparam("touched_at", type_=_SESSIONS.c.updated_at.type),
        title=case(
            (_SESSIONS.c.title == DEFAULT_TITLE, bindparam("first_title", type_=_SESSIONS.c.title.type)),
            else_=_SESSIONS.c.title,
        ),
    )
    .returning(_SESSIONS)
)


def _touch(db: Session, session_id: int, question: str) -> SessionSnapshot:
    """The session's settings now, read by the UPDATE that marks its new message (and names a chat
    nobody named by its first question): one statement, where a read and a write were two."""
    params = {"chat_id": session_id, "touched_at": utcnow(), "first_title": title_of(question)}
    row = db.execute(_TOUCH, params).one_or_none()
    if row is None:
        raise NotFoundError("chat session", session_id)
    return snapshot(row)


def begin_regenerate(store: Database, message_id: int, history_turns: int, client_key: str | None = None) -> Turn:
    """Reuse the question an assistant message answered; clear the old answer for the new one.
    The answer takes ``client_key``: it names this regeneration until the next one."""
    with store.write() as db:
        answer = require(db, ChatMessage, message_id)
        if answer.role is not Role.ASSISTANT:
            raise ValidationError("messageId", "only an assistant message can be regenerated")
        if answer.status is MessageStatus.STREAMING:
            raise ConflictError("this answer is still being generated")
        if db.scalar(select(StoredToolCall.id).where(StoredToolCall.outcome_message_id == message_id).limit(1)):
            raise ValidationError(
                "messageId", "this message records how an approved tool call ended; it is not an answer"
            )
        user = db.scalar(
            select(ChatMessage)
            .where(
                ChatMessage.session_id == answer.session_id, ChatMessage.id < message_id, ChatMessage.role == Role.USER
            )
            .order_by(ChatMessage.id.desc())
        )
        if user is None:
            raise ValidationError("messageId", "there is no question before this answer")
        chat = db.get(ChatSession, answer.session_id)
        assert chat is not None
        _key_in_use(db, answer.session_id, client_key, by=answer.id)
        db.execute(delete(Citation).where(Citation.message_id == message_id))
        answer.content, answer.status, answer.error, answer.trace, answer.completed_at = (
            "",
            MessageStatus.STREAMING,
            None,
            None,
            None,
        )
        answer.client_message_id = client_key
        answer.owner = store.owner
        db.flush()
        history = _history(db, answer.session_id, user.id, history_turns)
        groups = tool_catalog.groups_in(db, [answer.session_id])[answer.session_id]
        return Turn(snapshot(chat), user.id, answer.id, user.content, history, groups)


def finish(
    store: Database,
    turn: Turn,
    content: str,
    trace: dict[str, object],
    citations: list[tuple[SourceRef, CitationKind]],
) -> StoredAnswer | None:
    """Store the answer, its trace and its citations ``(source, kind)`` in one transaction, and
    return them as stored. None when there is nothing to store it in: the session was deleted while
    the answer streamed."""
    with store.write() as db:
        # Core statements, not the ORM's (~1 ms of Python a turn for one row and its citations): the
        # answer as stored is what this turn wrote, plus the two columns the database set (an UPDATE
        # that touched nothing, the session deleted, returns no row).
        written = {"content": content, "status": MessageStatus.COMPLETE, "error": None, "trace": trace}
        stored = db.execute(_FINISH, _still_streaming(turn) | written | {"completed_at": utcnow()}).one_or_none()
        if stored is None:
            return None
        answer = ChatMessage(
            id=turn.message_id,
            session_id=turn.chat.id,
            role=Role.ASSISTANT,
            created_at=stored.created_at,
            completed_at=stored.completed_at,
            **written,
        )
        return StoredAnswer(answer, _cite(db, turn, citations))


def _cite(db: Session, turn: Turn, citations: list[tuple[SourceRef, CitationKind]]) -> list[Citation]:
    """Store the answer's citations (in one statement), returned by marker, as stored."""
    if not citations:
        return []
    rows = [
        {
            "message_id": turn.message_id,
            "cited_chunk": source.chunk_id,
            "cited_document": source.document_id,
            "marker": source.number,
            "kind": kind,
            "score": source.score,
            "rank": source.rank,
            "document_name": source.document_name,
            "location": _location(source),
            "snippet": source.text[:600],
        }
        for source, kind in sorted(citations, key=lambda cited: cited[0].number)
    ]
    # Ids are given in the rows' order (begin's note); RETURNING's order is not promised: sorted.
    stored = sorted(db.execute(_CITE, rows))
    return [
        Citation(
            id=citation_id,
            chunk_id=chunk_id,
            document_id=document_id,
            **{k: v for k, v in row.items() if k not in ("cited_chunk", "cited_document")},
        )
        for (citation_id, chunk_id, document_id), row in zip(stored, rows, strict=True)
    ]


def _linked(column: Any, name: str) -> Any:
    """The cited chunk's (or document's) id while it still exists, else NULL: a cited chunk may have
    been deleted or re-ingested while the answer streamed; the citation keeps its name, location
    and snippet, and loses only the link. Read by the INSERT itself, not a statement before it."""
    return select(column).where(column == bindparam(name)).scalar_subquery()


_CITATIONS = cast(Table, Citation.__table__)
_CITE = (
    insert(_CITATIONS)
    .values(chunk_id=_linked(Chunk.id, "cited_chunk"), document_id=_linked(Document.id, "cited_document"))
    .returning(_CITATIONS.c.id, _CITATIONS.c.chunk_id, _CITATIONS.c.document_id)
)


_LOCATION_FIELDS = [f.name for f in fields(Location)]  # scalars only: a shallow dict is its JSON


def _location(source: SourceRef) -> dict[str, object]:
    """The stored JSON of its location (``dataclasses.asdict`` copies recursively: ~20 calls a citation)."""
    loc = source.location
    return {f: getattr(loc, f) for f in _LOCATION_FIELDS}


def fail(store: Database, turn: Turn, partial: str, error: str, trace: dict[str, object] | None) -> bool:
    """Store the answer as failed; False when its row is no longer this turn's (see ``finish``)."""
    with store.write() as db:
        written = {"content": partial, "status": MessageStatus.FAILED, "error": error, "trace": trace}
        result = db.execute(_STREAMING, _still_streaming(turn) | written | {"completed_at": utcnow()})
        return bool(result.rowcount)  # type: ignore[attr-defined]


def _still_streaming(turn: Turn) -> dict[str, object]:
    """The parameters of ``_STREAMING`` that scope it to the turn's answer."""
    return {"answer_id": turn.message_id, "chat_id": turn.chat.id}


_MESSAGES = cast(Table, ChatMessage.__table__)
# Rows given as many parameter sets go as one INSERT of many VALUES rows ("insertmanyvalues") built
# from the one-row statement compiled once; rows given as literal values were compiled on every call
# (~40 compiler calls a value). RETURNING's rows come in no promised order.
_ASK = insert(_MESSAGES).returning(_MESSAGES.c.id, _MESSAGES.c.role)  # begin's two rows
# An UPDATE of the turn's answer that touches it only while it is still this turn's; the columns it
# sets are the parameters named after them. On the table, not the ORM entity: an ORM-enabled UPDATE
# runs the unit of work's bulk-update machinery (synchronising the session's objects, none here).
_STREAMING = update(_MESSAGES).where(
    _MESSAGES.c.id == bindparam("answer_id"),
    _MESSAGES.c.session_id == bindparam("chat_id"),
    _MESSAGES.c.status == MessageStatus.STREAMING,
)
_FINISH = _STREAMING.returning(_MESSAGES.c.created_at, _MESSAGES.c.completed_at)
