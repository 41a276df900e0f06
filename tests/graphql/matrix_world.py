"""The world the permission matrix runs in: knowledge bases A and B, their people and keys, and A's
things (a document, an ingestion job, the owner's private chat with an answer and a tool call),
made through the services as the server would make them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from app.container import Container
from app.db.database import Database
from app.db.enums import MemberRole, ToolCallStatus
from app.db.models import Membership, PersonKey, utcnow
from app.services import documents, projects, sessions
from app.services.ingestion import jobs
from app.services.people import keys, users
from app.services.people.access import Caller, CallerKind
from app.services.records import JobOrigin
from app.services.sessions import SessionChanges
from app.services.tools import calls as tool_calls
from app.services.tools import catalog
from app.services.tools.definitions import ToolChanges

# The matrix's columns, as docs/SECURITY.md names them.
COLUMNS = (
    "anonymous",
    "member of another KB",
    "viewer",
    "editor",
    "owner",
    "administrator",
    "read-only key",
    "key scoped to another KB",
    "expired key",
    "disabled person's key",
)
FAKE_MODEL = SessionChanges(provider="fake", model="scripted")


@dataclass
class World:
    container: Container
    kb: int
    other_kb: int
    owner: int
    stranger: int
    document: int
    job: int
    chat: int
    answer: int
    tool_call: int
    builtin_tool: int
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # column -> request headers
    counter: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def store(self) -> Database:
        return self.container.store

    def person(self, user_id: int) -> Caller:
        return Caller(CallerKind.PERSON, user_id=user_id)

    def fresh_kb(self) -> int:
        """A knowledge base with A's people in A's roles (for changes that use up their target)."""
        kb = projects.create(self.store, f"kb {next(self.counter)}").id
        with self.store.write() as db:
            for member in db.query(Membership).filter(Membership.project_id == self.kb).all():
                db.add(Membership(user_id=member.user_id, project_id=kb, role=member.role))
        return kb

    def fresh_chat(self) -> int:
        """A new private chat of A's owner in A."""
        return sessions.create(
            self.store, self.container.settings, self.container.chat_models, self.kb, FAKE_MODEL,
            caller=self.person(self.owner),
        ).id  # fmt: skip

    def fresh_document(self) -> int:
        name = f"doc-{next(self.counter)}.md"
        summary = documents.ingest_uploads(
            self.store, self.container.embedder, self.container.settings.ingest, 10_000, self.kb,
            [(name, b"# Fresh\n\nA document to delete.")],
        )  # fmt: skip
        document_id = summary.files[0].document_id
        assert document_id is not None
        return document_id

    def fresh_person(self, role: MemberRole | None = None) -> int:
        """A new person (a viewer of A when ``role`` says so), for changes that use up their target."""
        name = f"new{next(self.counter)}"
        with self.store.write() as db:
            person = users.create(db, users.NewPerson(f"{name}@example.org", name))
            if role is not None:
                db.add(Membership(user_id=person.id, project_id=self.kb, role=role))
            return person.id

    def fresh_person_email(self) -> str:
        with self.store.read() as db:
            return users.require(db, self.fresh_person()).email

    def fresh_owner_key(self) -> int:
        """A new key of A's owner, for revoking."""
        with self.store.write() as db:
            row, _ = keys.create(db, users.require(db, self.owner), keys.NewKey(f"spare {next(self.counter)}"))
            return row.id

    def fresh_tool(self) -> int:
        changes = ToolChanges(
            name=f"tool_{next(self.counter)}",
            description="Looks a word up.",
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
            method="GET",
            url_template="https://example.org/lookup?q={q}",
        )
        return catalog.create(self.store, self.container.settings.tools, lambda: self.container.embedder, changes).id


def build(container: Container) -> World:
    """The world, before the server answers its first request (so it sees that people exist)."""
    store = container.store
    kb = projects.create(store, "A").id
    other = projects.create(store, "B").id
    with store.write() as db:
        ids = {
            name: users.create(db, users.NewPerson(f"{name}@example.org", name, is_admin=name == "admin")).id
            for name in ("admin", "owner", "editor", "viewer", "stranger", "gone")
        }
        roles = (("owner", kb, MemberRole.OWNER), ("editor", kb, MemberRole.EDITOR), ("viewer", kb, MemberRole.VIEWER))
        for name, project, role in (*roles, ("gone", kb, MemberRole.EDITOR), ("stranger", other, MemberRole.OWNER)):
            db.add(Membership(user_id=ids[name], project_id=project, role=role))
        db.add(Membership(user_id=ids["owner"], project_id=other, role=MemberRole.VIEWER))
        db.flush()
        secrets: dict[str, str] = {}
        for column, name, new in (
            ("member of another KB", "stranger", keys.NewKey("all")),
            ("viewer", "viewer", keys.NewKey("all")),
            ("editor", "editor", keys.NewKey("all")),
            ("owner", "owner", keys.NewKey("all")),
            ("administrator", "admin", keys.NewKey("all", manage_users=True)),
            ("read-only key", "owner", keys.NewKey("read", read_only=True)),
            ("key scoped to another KB", "owner", keys.NewKey("b only", projects=[other])),
            ("expired key", "owner", keys.NewKey("old", expires_at=utcnow() + timedelta(days=1))),
            ("disabled person's key", "gone", keys.NewKey("all")),
        ):
            row, secrets[column] = keys.create(db, users.require(db, ids[name]), new)
            if column == "expired key":
                db.get(PersonKey, row.id).expires_at = utcnow() - timedelta(minutes=1)  # type: ignore[union-attr]
        users.set_disabled(db, users.require(db, ids["gone"]), True)
    owner = Caller(CallerKind.PERSON, user_id=ids["owner"])
    document = (
        documents.ingest_uploads(
            store, container.embedder, container.settings.ingest, 10_000, kb, [("a.md", b"# A\n\nThe answer is 42.")]
        )
        .files[0]
        .document_id
    )
    assert document is not None
    skipped = jobs.Intake("skipped.md", 0, Path("/nonexistent"), skipped="nothing to ingest")
    job = jobs.create(store, container.settings.jobs, kb, JobOrigin.UPLOAD, [skipped]).id
    chat = sessions.create(store, container.settings, container.chat_models, kb, FAKE_MODEL, caller=owner).id
    builtin = next(t for t in catalog.list_tools(store) if t.name == "list_documents")
    world = World(container, kb, other, ids["owner"], ids["stranger"], document, job, chat, 0, 0, builtin.id)
    world.headers = {"anonymous": {}} | {c: {"Authorization": f"Bearer {s}"} for c, s in secrets.items()}
    return world


def answered(world: World, answer_id: int) -> None:
    """The owner's chat has an answer (asked through the API) with a tool call recorded on it."""
    world.answer = answer_id
    call = tool_calls.NewCall(
        call_id="c1", tool_id=world.builtin_tool, tool_name="list_documents", arguments="{}",
        status=ToolCallStatus.EXECUTED, result="[]", result_chars=2, error=None, ms=1.0,
    )  # fmt: skip
    call_id = tool_calls.record(world.store, answer_id, world.chat, 0, call)
    assert call_id is not None
    world.tool_call = call_id
