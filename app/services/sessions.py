"""Chat sessions: create, update, delete, list, with their RAG settings validated up front.

Settings changes take effect from the next message: each message reads the session's settings
when it starts, and records in its trace the values it used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic.alias_generators import to_camel
from sqlalchemy import select

from app.db.database import Database
from app.db.enums import MessageStatus, Role
from app.db.models import ChatMessage, ChatSession
from app.errors import ForbiddenError, ValidationError
from app.llm.base import ChatModels
from app.rag.search.document_filter import DocumentFilter
from app.rag.session_settings import RagSettings, RagSettingsPatch
from app.services.chat.store import DEFAULT_TITLE
from app.services.pages import Order, Page, PageRequest, page, pages
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller, CallerKind
from app.services.tools import catalog as tools
from app.settings import Settings

TITLE_MAX = 200
SYSTEM_PROMPT_MAX = 4000


@dataclass(frozen=True)
class SessionChanges(RagSettingsPatch):
    """Fields to set: the session's own and its RAG settings' (RagSettingsPatch); None means "leave
    as is" (or "use the default" on create)."""

    title: str | None = None
    system_prompt: str | None = None
    provider: str | None = None
    model: str | None = None


def validate_changes(changes: SessionChanges) -> None:
    """Check every field and report all problems at once."""
    problems: list[tuple[str, str]] = []
    if changes.title is not None and not 1 <= len(changes.title.strip()) <= TITLE_MAX:
        problems.append(("title", f"must be 1 to {TITLE_MAX} characters"))
    if changes.system_prompt is not None and len(changes.system_prompt) > SYSTEM_PROMPT_MAX:
        problems.append(("systemPrompt", f"must be at most {SYSTEM_PROMPT_MAX} characters"))
    problems += [(".".join(map(to_camel, name.split("."))), message) for name, message in changes.problems()]
    if problems:
        (field, message), *more = problems
        raise ValidationError(field, message, more=more)


def _stored_filter(only: DocumentFilter | None) -> str | None:
    """A session's document filter as chat_sessions.document_filter holds it (an empty one: null)."""
    normalised = only.normalised() if only is not None else None
    return normalised.to_json() if normalised is not None else None


def get(store: Database, session_id: int, *, caller: Caller = THE_SERVER) -> ChatSession:
    with store.read() as db:
        return access.require_chat(db, caller, session_id)


def create(
    store: Database,
    settings: Settings,
    models: ChatModels,
    project_id: int,
    changes: SessionChanges,
    *,
    caller: Caller = THE_SERVER,
    history: Sequence[tuple[Role, str]] = (),
) -> ChatSession:
    """A new chat in a knowledge base the caller may search (a viewer may), owned by the person
    who asks (no one for the server: then it is the administrators'). ``history``: earlier turns a
    client brings with it (the OpenAI door), stored as complete messages in the same transaction, so
    the first question is asked with them as its conversation."""
    validate_changes(changes)
    provider = changes.provider or settings.llm.provider
    model = changes.model or settings.llm.model
    models.validate(provider, model)
    rag = changes.applied_to(RagSettings.of(settings.rag))
    with store.write() as db:
        access.require_project(db, caller, project_id)
        if caller.key is not None and caller.key.read_only:
            raise ForbiddenError("this key is read-only: it reads chats, it does not start them")
        row = ChatSession(
            project_id=project_id,
            owner_id=caller.user_id if caller.kind == CallerKind.PERSON else None,
            title=(changes.title or DEFAULT_TITLE).strip(),
            system_prompt=changes.system_prompt or "",
            provider=provider,
            model=model,
            **rag.model_dump(exclude={"document_filter"}),
            document_filter=_stored_filter(rag.document_filter),
        )
        db.add(row)
        db.flush()
        for role, content in history:
            db.add(ChatMessage(session_id=row.id, role=role, content=content, status=MessageStatus.COMPLETE))
        return row


def update(
    store: Database, models: ChatModels, session_id: int, changes: SessionChanges, *, caller: Caller = THE_SERVER
) -> ChatSession:
    validate_changes(changes)
    with store.write() as db:
        row = access.require_chat(db, caller, session_id, change=True)
        if changes.provider is not None or changes.model is not None:
            models.validate(changes.provider or row.provider, changes.model or row.model)
            tools.check_model_change(db, models, row.id, changes.provider or row.provider, changes.model or row.model)
        for name, value in vars(changes).items():
            if name == "document_filter" and value is not None:
                row.document_filter = _stored_filter(value)
            elif value is not None:
                setattr(row, name, value.strip() if name == "title" else value)
        db.flush()
        return row


def share(store: Database, session_id: int, shared: bool, *, caller: Caller = THE_SERVER) -> ChatSession:
    """Share a chat read-only with its knowledge base's members, or stop sharing it (its owner only)."""
    with store.write() as db:
        row = access.require_chat(db, caller, session_id, change=True)
        row.shared = shared
        db.flush()
        return row


def delete(store: Database, session_id: int, *, caller: Caller = THE_SERVER) -> ChatSession:
    """Delete a chat session with its messages. Returns the row as it was."""
    with store.write() as db:
        row = access.require_chat(db, caller, session_id, change=True)
        db.delete(row)
        return row


# Most recently active first. updated_at moves when a session changes, so a session edited while a
# client pages can move to a page the client has already read (the price of this order).
ORDER = Order((ChatSession.updated_at, ChatSession.id), descending=True)
# Oldest first, by id: ids only grow (AUTOINCREMENT), so a new message always lands at the end.
MESSAGE_ORDER = Order((ChatMessage.id,))


def list_page(
    store: Database, project_id: int | None, request: PageRequest, *, caller: Caller = THE_SERVER
) -> Page[ChatSession]:
    """A page of the chat sessions the caller may read (of one knowledge base, if given), most
    recently active first."""
    where: list[object] = [ChatSession.project_id == project_id] if project_id is not None else []
    with store.read() as db:
        visible = access.visible_projects(db, caller)
        if visible is not None:
            where.append(ChatSession.project_id.in_(visible))
        if (mine := access.chat_filter(caller)) is not None:
            where.append(mine)
        return page(db, ChatSession, ORDER, request, where)


def message_pages(store: Database, session_ids: list[int], request: PageRequest) -> list[Page[ChatMessage]]:
    """The same page of each session's messages (oldest first), in one statement."""
    with store.read() as db:
        return pages(db, ChatMessage, MESSAGE_ORDER, request, ChatMessage.session_id, session_ids)


def messages(store: Database, session_id: int, *, limit: int, before_id: int | None = None) -> list[ChatMessage]:
    """The latest ``limit`` messages (before ``before_id`` if given), oldest first."""
    with store.read() as db:
        query = select(ChatMessage).where(ChatMessage.session_id == session_id)
        if before_id is not None:
            query = query.where(ChatMessage.id < before_id)
        rows = list(db.scalars(query.order_by(ChatMessage.id.desc()).limit(limit)))
    return rows[::-1]


def message(store: Database, message_id: int, *, caller: Caller = THE_SERVER, change: bool = False) -> ChatMessage:
    """The message, when the caller may read its chat (``change``: and write in it)."""
    with store.read() as db:
        return access.require_message(db, caller, message_id, change=change)


def require_writable(store: Database, session_id: int, *, caller: Caller) -> ChatSession:
    """The chat, when the caller may ask in it (its owner)."""
    with store.read() as db:
        return access.require_chat(db, caller, session_id, change=True)
