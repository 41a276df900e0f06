"""Who is asking, and what they may do: the one place that decides.

Every read and change of a knowledge base, a chat, a tool or a person asks here with the
:class:`Caller` and the resource. The rules (docs/SECURITY.md has the table):

- **The server** (a key from ``RAGCHAT_API__API_KEYS`` or ``__OPERATOR_KEYS``) and an **open** server
  (no people and no keys: the single-user default on loopback) may do everything, as before people
  existed.
- **An administrator** may do everything a person can in every knowledge base, manage people, and
  read the chats that have no owner (made before people existed, or whose person was deleted).
- **A member** has a role in a knowledge base: viewer (search, chat), editor (and its documents),
  owner (and its settings, members, deletion). A knowledge base they are not a member of does not
  exist for them: asking for it is ``NotFoundError``, the same as for one that does not exist.
  Where they may know it exists (they are a viewer asking to edit), it is ``ForbiddenError``.
- **A chat** is its owner's. Members of its knowledge base read it once its owner shares it; only
  its owner changes it.
- **A tool** is the server's (administrators and operator keys define it; every signed-in caller
  sees it) or a knowledge base's (its editors define it; its viewers see it; a chat in that
  knowledge base may call it). One of another knowledge base does not exist for the caller.
- **A personal key** never exceeds its person: its knowledge bases are the person's (or fewer), a
  read-only key is a viewer everywhere, and only a key allowed to manage people does.
- **Anonymous** (people exist or keys are set, and the request carries neither): nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.enums import MemberRole
from app.db.models import (
    ChatMessage,
    ChatSession,
    Document,
    IngestionJob,
    Membership,
    Project,
    StoredToolCall,
    Tool,
)
from app.errors import ForbiddenError, NotFoundError

log = logging.getLogger("ragchat.access")


class CallerKind(StrEnum):
    OPEN = "open"  # no people and no keys: the server trusts whoever reaches it (loopback only)
    SERVER = "server"  # a server key from the settings: full rights, as before people existed
    PERSON = "person"  # a signed-in browser or a personal key
    ANONYMOUS = "anonymous"  # nothing shown: may only sign in


@dataclass(frozen=True)
class KeyScope:
    """What a personal key narrows its person's rights to."""

    key_id: int
    projects: frozenset[int] | None  # None: every knowledge base of the person
    read_only: bool
    manage_users: bool


@dataclass(frozen=True)
class Caller:
    kind: CallerKind
    user_id: int | None = None
    is_admin: bool = False
    key: KeyScope | None = None  # set when a person calls with a personal key
    # The server key is an operator's (RAGCHAT_API__OPERATOR_KEYS): it may also manage tools.
    operator_key: bool = False

    @classmethod
    def open(cls) -> Caller:
        return cls(CallerKind.OPEN)

    @classmethod
    def server(cls, *, operator: bool = False) -> Caller:
        return cls(CallerKind.SERVER, operator_key=operator)

    @classmethod
    def anonymous(cls) -> Caller:
        return cls(CallerKind.ANONYMOUS)

    @property
    def unlimited(self) -> bool:
        """The server itself: every right, no person behind it."""
        return self.kind in (CallerKind.OPEN, CallerKind.SERVER)

    @property
    def manages_people(self) -> bool:
        if self.unlimited:
            return True
        return self.is_admin and (self.key is None or self.key.manage_users)

    @property
    def operator(self) -> bool:
        """May manage what the server itself trusts (tools, where their secrets go): an open server,
        an operator key, or an administrator (through a key only if it may manage people)."""
        if self.kind == CallerKind.OPEN:
            return True
        if self.kind == CallerKind.SERVER:
            return self.operator_key
        return self.manages_people

    @property
    def full_rights(self) -> bool:
        """Every right on every knowledge base: the server, or an administrator whose key (if any)
        is neither read-only nor limited to some knowledge bases."""
        if self.unlimited:
            return True
        if self.kind != CallerKind.PERSON or not self.is_admin:
            return False
        return self.key is None or (self.key.projects is None and not self.key.read_only)

    @property
    def signed_in(self) -> bool:
        return self.kind != CallerKind.ANONYMOUS

    def _capped(self, project_id: int, role: MemberRole | None) -> MemberRole | None:
        """``role`` as far as the key this call carries allows."""
        if role is None or self.key is None:
            return role
        if self.key.projects is not None and project_id not in self.key.projects:
            return None
        return MemberRole.VIEWER if self.key.read_only else role


# The server's own code (the CLI, the ingestion worker, benchmarks) acting for itself: every right.
# Services take it as their default caller; the API always names the request's caller instead.
THE_SERVER = Caller(CallerKind.SERVER, operator_key=True)


def _log_denial(caller: Caller, what: str, why: str) -> None:
    """One line per refusal of something that exists: who (person and key ids, never a secret), what, why."""
    key = f" key {caller.key.key_id}" if caller.key is not None else ""
    log.info("access denied: person %s%s to %s (%s)", caller.user_id, key, what, why)


def require_signed_in(caller: Caller) -> None:
    if not caller.signed_in:
        raise ForbiddenError("sign in first: this server knows its people")


def project_role(db: Session, caller: Caller, project_id: int) -> MemberRole | None:
    """The caller's role in a knowledge base (None: it does not exist for them)."""
    if caller.unlimited:
        return MemberRole.OWNER
    if caller.kind != CallerKind.PERSON or caller.user_id is None:
        return None
    if caller.is_admin:
        role: MemberRole | None = MemberRole.OWNER
    else:
        role = db.scalar(
            select(Membership.role).where(Membership.user_id == caller.user_id, Membership.project_id == project_id)
        )
    return caller._capped(project_id, role)


def require_project(db: Session, caller: Caller, project_id: int, need: MemberRole = MemberRole.VIEWER) -> Project:
    """The knowledge base, when the caller has at least ``need`` in it."""
    project = db.get(Project, project_id)
    role = project_role(db, caller, project_id) if project is not None else None
    if project is None or role is None:
        if project is not None:
            _log_denial(caller, f"knowledge base {project_id}", "not theirs")
        raise NotFoundError("project", project_id)  # named as app/db/rows.py names it: the same text as missing
    if not role.includes(need):
        _log_denial(caller, f"knowledge base {project_id}", f"{role.value} needs {need.value}")
        raise ForbiddenError(f"knowledge base {project_id}: your role is {role.value}; this needs {need.value}")
    return project


def visible_projects(db: Session, caller: Caller) -> Collection[int] | None:
    """The ids of the knowledge bases the caller sees; None: every one."""
    if caller.unlimited or (caller.is_admin and (caller.key is None or caller.key.projects is None)):
        return None
    if caller.kind != CallerKind.PERSON or caller.user_id is None:
        return frozenset()
    if caller.is_admin:
        assert caller.key is not None and caller.key.projects is not None
        return caller.key.projects
    ids = set(db.scalars(select(Membership.project_id).where(Membership.user_id == caller.user_id)))
    if caller.key is not None and caller.key.projects is not None:
        ids &= caller.key.projects
    return frozenset(ids)


def _owns(caller: Caller, chat: ChatSession) -> bool:
    if caller.unlimited:
        return True
    if caller.kind != CallerKind.PERSON:
        return False
    if chat.owner_id is None:  # made before people existed, or its person is gone: the administrators'
        return caller.is_admin
    return chat.owner_id == caller.user_id


def require_chat(db: Session, caller: Caller, chat_id: int, *, change: bool = False) -> ChatSession:
    """The chat, when the caller may read it (``change``: and change it).

    Its owner reads and changes it, within what their key allows of its knowledge base; members of
    the knowledge base read it once shared. Anyone else: it does not exist.
    """
    chat = db.get(ChatSession, chat_id)
    if chat is None:
        raise NotFoundError("chat session", chat_id)
    role = project_role(db, caller, chat.project_id)
    owner = _owns(caller, chat) and role is not None
    if not owner and not (chat.shared and role is not None):
        _log_denial(caller, f"chat session {chat_id}", "not theirs")
        raise NotFoundError("chat session", chat_id)
    if change and not owner:
        _log_denial(caller, f"chat session {chat_id}", "shared read-only")
        raise ForbiddenError(f"chat session {chat_id} is shared with you read-only")
    if change and caller.key is not None and caller.key.read_only:
        _log_denial(caller, f"chat session {chat_id}", "read-only key")
        raise ForbiddenError("this key is read-only")
    return chat


def require_document(db: Session, caller: Caller, document_id: int, need: MemberRole = MemberRole.VIEWER) -> Document:
    """The document, when the caller has at least ``need`` in its knowledge base; one they cannot
    see is missing, as its knowledge base is."""
    document = db.get(Document, document_id)
    if document is None or project_role(db, caller, document.project_id) is None:
        raise NotFoundError("document", document_id)
    require_project(db, caller, document.project_id, need)
    return document


def require_job(db: Session, caller: Caller, job_id: int, need: MemberRole = MemberRole.VIEWER) -> IngestionJob:
    """The ingestion job, as :func:`require_document` decides for a document."""
    job = db.get(IngestionJob, job_id)
    if job is None or project_role(db, caller, job.project_id) is None:
        raise NotFoundError("ingestion job", job_id)
    require_project(db, caller, job.project_id, need)
    return job


def require_message(db: Session, caller: Caller, message_id: int, *, change: bool = False) -> ChatMessage:
    """The message, when the caller may read its chat (``change``: and change it)."""
    message = db.get(ChatMessage, message_id)
    if message is None:
        raise NotFoundError("message", message_id)
    try:
        require_chat(db, caller, message.session_id, change=change)
    except NotFoundError:
        raise NotFoundError("message", message_id) from None
    return message


def require_tool_call(db: Session, caller: Caller, call_id: int, *, change: bool = False) -> StoredToolCall:
    """The tool call, when the caller may read its chat (``change``: approve or reject it)."""
    row = db.get(StoredToolCall, call_id)
    if row is None:
        raise NotFoundError("tool call", call_id)
    try:
        require_chat(db, caller, row.session_id, change=change)
    except NotFoundError:
        raise NotFoundError("tool call", call_id) from None
    return row


TOOLS_NEED_AN_OPERATOR = (
    "defining the server's tools (and where their secrets go) is for administrators and operator keys "
    "(RAGCHAT_API__OPERATOR_KEYS); a knowledge base's editors define tools of their knowledge base"
)


def require_tool_owner(db: Session, caller: Caller, project_id: int | None) -> None:
    """May the caller define tools of ``project_id`` (None: the server's)?"""
    if project_id is None:
        if not caller.operator:
            _log_denial(caller, "the server's tools", "not an operator")
            raise ForbiddenError(TOOLS_NEED_AN_OPERATOR)
        return
    require_project(db, caller, project_id, MemberRole.EDITOR)


def require_tool(db: Session, caller: Caller, tool_id: int, *, change: bool = False) -> Tool:
    """The tool, when the caller may see it (``change``: and change, delete or test-run it)."""
    tool = db.get(Tool, tool_id)
    if tool is None or (tool.project_id is not None and project_role(db, caller, tool.project_id) is None):
        if tool is not None:
            _log_denial(caller, f"tool {tool_id}", "another knowledge base's")
        raise NotFoundError("tool", tool_id)
    if tool.project_id is None:
        require_signed_in(caller)
    if change:
        require_tool_owner(db, caller, tool.project_id)
    return tool


def tool_filter(db: Session, caller: Caller) -> object | None:
    """A WHERE clause for the tools the caller may list: the server's, and those of the knowledge
    bases they see; None: no filter."""
    projects = visible_projects(db, caller)
    if projects is None:
        return None
    return Tool.project_id.is_(None) | Tool.project_id.in_(sorted(projects))


def chat_filter(caller: Caller) -> object | None:
    """A WHERE clause for the chats the caller may list (with :func:`visible_projects` for their
    knowledge bases); None: no filter."""
    if caller.unlimited:
        return None
    if caller.kind != CallerKind.PERSON:
        return ChatSession.id.is_(None)  # nothing
    mine = ChatSession.owner_id == caller.user_id
    if caller.is_admin:
        mine = mine | ChatSession.owner_id.is_(None)
    return mine | ChatSession.shared.is_(True)
