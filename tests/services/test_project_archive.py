"""`ragchat export-project` / `import-project`: one knowledge base as a file, moved SQLite → the
backend under test → SQLite with its documents, chunks, vectors, chats, citations and tool calls
equal; re-embedded when the target's model differs; refused whole when the archive is wrong."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, func, select

from app.db import migrate
from app.db.database import Database
from app.db.enums import MemberRole, MessageStatus, Role, ToolCallStatus
from app.db.models import (
    ChatMessage,
    ChatSession,
    Document,
    DocumentTag,
    EmbeddingSpace,
    Membership,
    Project,
    StoredToolCall,
    Tool,
    User,
)
from app.errors import ConflictError, ForbiddenError, ValidationError
from app.rag.index import spaces
from app.services import database_copy, project_archive, projects
from app.services.people.access import Caller, CallerKind, KeyScope
from app.services.project_archive import TABLES, export_project, import_project
from app.settings import Settings, ToolSettings
from tests.fakes import FakeEmbedder
from tests.services.test_database_copy import build_source

pytestmark = pytest.mark.sqlite_too(reason="moves a knowledge base through the backend under test")

# The target lends the archive's tool its secret, for its origin, as an operator would.
TOOLS = ToolSettings(
    secrets={"GLOSSARY": "s3cret"},  # type: ignore[dict-item]
    secret_origins={"GLOSSARY": ["https://glossary.example"]},
    knowledge_base_secrets=["GLOSSARY"],
)

# Columns whose values are the database's own (ids, the knowledge base, who is writing now).
LOCAL = {"id", "project_id", "owner", "followed_until"}


def contents(url: str, name: str) -> dict[str, Any]:
    """The knowledge base ``name`` with every id replaced by its row's place in its table (rows in
    id order), so two databases holding the same knowledge base under other ids compare equal."""
    store = Database.from_url(url)
    try:
        with store.read() as db:
            project = db.scalar(select(Project).where(Project.name == name))
            assert project is not None
            tables = {t.name: [dict(r) for r in project_archive._rows_of(db, t, project.id)] for t in TABLES}
            place = {
                n: {r["id"]: i for i, r in enumerate(rows)} for n, rows in tables.items() if rows and "id" in rows[0]
            }
            out: dict[str, Any] = {"description": project.description}
            for n, rows in tables.items():
                refs = project_archive._REFERENCES.get(n, {})
                out[n] = [
                    {
                        k: (place[refs[k]].get(v) if k in refs and v is not None else v)
                        for k, v in r.items()
                        if k not in LOCAL
                    }
                    for r in rows
                ]
            space = spaces.active_space(db, project.id)
            out["space"] = space.label if space else None
            vectors: dict[int, list[float]] = {}
            if space is not None:
                for ids, batch in database_copy.read_vectors(db.connection(), space.table):
                    vectors.update({place["chunks"][i]: v.tolist() for i, v in zip(ids, batch, strict=True)})
            out["vectors"] = vectors
            return out
    finally:
        store.dispose()


def add_unfinished(url: str, owner_email: str) -> None:
    """An answer still streaming and a tool call waiting for approval, a chat owned by a person, and
    a tool of the knowledge base's own that a call names."""
    store = Database.from_url(url)
    try:
        with store.write() as db:
            person = User(email=owner_email, name="Olga", password_hash=None, is_admin=False)
            db.add(person)
            chat = db.scalar(select(ChatSession))
            assert chat is not None
            first = db.scalar(select(Document).where(Document.project_id == chat.project_id).order_by(Document.id))
            assert first is not None
            db.add_all(
                [DocumentTag(document_id=first.id, tag="handbook"), DocumentTag(document_id=first.id, tag="2026")]
            )
            mine = Tool(
                name="kb_lookup",
                description="Looks a term up in the glossary",
                input_schema={"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]},
                examples=[],
                tool_group="glossary",
                core=False,
                kind="http",
                http_method="GET",
                url_template="https://glossary.example/{term}",
                header_secrets={"Authorization": "glossary"},
                timeout_seconds=5.0,
                side_effects=False,
                project_id=chat.project_id,
            )
            db.add(mine)
            db.flush()
            chat.owner_id = person.id
            streaming = ChatMessage(session_id=chat.id, role=Role.ASSISTANT, status=MessageStatus.STREAMING, owner=7)
            db.add(streaming)
            db.flush()
            db.add(
                StoredToolCall(
                    message_id=streaming.id,
                    session_id=chat.id,
                    position=0,
                    call_id="call-2",
                    tool_id=mine.id,
                    tool_name="kb_lookup",
                    arguments='{"city": "Bergen"}',
                    status=ToolCallStatus.PREVIEW,
                    preview="GET https://w.example/Bergen",
                )
            )
    finally:
        store.dispose()


@pytest.fixture
def source_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'source.db'}"


def test_a_knowledge_base_moves_sqlite_to_the_backend_and_back_unchanged(
    source_url: str, migrated: Settings, tmp_path: Path
) -> None:
    kb, embedder = build_source(source_url, migrated)
    add_unfinished(source_url, "olga@example.com")
    archive = tmp_path / "kb.ragchat.tar.gz"
    exported = export_project(Database.from_url(source_url), "kb", archive)
    assert (
        exported.rows["citations"] == 1
        and exported.rows["tool_calls"] == 2
        and exported.vectors == exported.rows["chunks"]
    )

    target = Database.from_url(migrated.database_url)
    try:
        projects.create(target, "already here")  # the import's ids are the target's, not the archive's
        with target.write() as db:
            db.add(User(email="olga@example.com", name="Olga here", password_hash=None, is_admin=False))
        first = import_project(target, archive, embedder, TOOLS)
        assert not first.re_embedded and first.vectors == exported.vectors and first.project_id != kb
        again = tmp_path / "again.ragchat.tar.gz"
        export_project(target, "kb", again)
        with target.read() as db:
            chat = db.scalar(select(ChatSession).where(ChatSession.project_id == first.project_id))
            assert chat is not None and chat.owner_id is not None
            assert db.get(User, chat.owner_id).email == "olga@example.com"  # type: ignore[union-attr]
    finally:
        target.dispose()

    back_url = f"sqlite:///{tmp_path / 'back.db'}"
    migrate.upgrade(back_url, default_threshold=migrated.rag.threshold)
    back = Database.from_url(back_url)
    try:
        import_project(back, again, embedder, TOOLS)
    finally:
        back.dispose()

    before, through, after = contents(source_url, "kb"), contents(migrated.database_url, "kb"), contents(back_url, "kb")
    # What does not travel: the owner's id (another person here) and anything unfinished.
    assert before["chat_sessions"][0]["owner_id"] is not None and after["chat_sessions"][0]["owner_id"] is None
    streaming = [m for m in before["chat_messages"] if m["status"] == MessageStatus.STREAMING]
    assert len(streaming) == 1
    for one in (through, after):
        (cut,) = [m for m in one["chat_messages"] if m["error"] == project_archive.CUT_OFF]
        assert cut["status"] == MessageStatus.FAILED
        (call,) = [c for c in one["tool_calls"] if c["call_id"] == "call-2"]
        assert call["status"] == ToolCallStatus.FAILED and call["error"] == project_archive.CUT_OFF
    for one in (before, through, after):
        one["chat_sessions"][0]["owner_id"] = None
        for m in one["chat_messages"]:
            if m["status"] == MessageStatus.STREAMING or m["error"] == project_archive.CUT_OFF:
                m["status"], m["error"] = "unfinished", None
        for c in one["tool_calls"]:
            if c["status"] in (ToolCallStatus.PREVIEW, ToolCallStatus.FAILED) and c["call_id"] == "call-2":
                c["status"], c["error"] = "unfinished", None
    assert through == before
    assert after == before
    assert before["citations"][0]["chunk_id"] is not None and before["vectors"]
    assert sorted(t["tag"] for t in after["document_tags"]) == ["2026", "handbook"]


def test_a_target_embedding_with_another_model_re_embeds_every_chunk(
    source_url: str, migrated: Settings, tmp_path: Path
) -> None:
    build_source(source_url, migrated)
    archive = tmp_path / "kb.tar.gz"
    exported = export_project(Database.from_url(source_url), "kb", archive)
    other = FakeEmbedder(dimensions=32, model="other")
    target = Database.from_url(migrated.database_url)
    try:
        report = import_project(target, archive, other, TOOLS, name="kb moved")
        assert report.re_embedded and report.vectors == exported.rows["chunks"]
        with target.read() as db:
            space = spaces.active_space(db, report.project_id)
            assert space is not None and spaces.space_identity(space) == other.space
    finally:
        target.dispose()
    moved = contents(migrated.database_url, "kb moved")
    assert moved["space"] == other.space.label and len(moved["vectors"]) == exported.rows["chunks"]
    assert all(len(v) == 32 for v in moved["vectors"].values())


def _rewrite(
    archive: Path, target: Path, change: dict[str, bytes | None], extra: dict[str, bytes] | None = None
) -> None:
    with tarfile.open(archive, "r:gz") as src, tarfile.open(target, "w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name in change:
                if change[member.name] is None:
                    continue
                data = change[member.name]  # type: ignore[assignment]
            project_archive._add(dst, member.name, data)
        for name, data in (extra or {}).items():
            project_archive._add(dst, name, data)


def test_a_wrong_archive_is_refused_and_nothing_is_written(source_url: str, migrated: Settings, tmp_path: Path) -> None:
    _, embedder = build_source(source_url, migrated)
    add_unfinished(source_url, "olga@example.com")
    archive = tmp_path / "kb.tar.gz"
    export_project(Database.from_url(source_url), "kb", archive)
    target = Database.from_url(migrated.database_url)

    def counts() -> tuple[int, int]:
        with target.read() as db:
            return db.scalar(select(func.count()).select_from(Project)) or 0, db.scalar(
                select(func.count()).select_from(EmbeddingSpace)
            ) or 0

    try:
        import_project(target, archive, embedder, TOOLS)
        start = counts()
        with pytest.raises(ConflictError, match="named 'kb' exists"):
            import_project(target, archive, embedder, TOOLS)
        with pytest.raises(ConflictError, match="tools named kb_lookup exist"):
            import_project(target, archive, embedder, TOOLS, name="kb 2")
        with target.write() as db:
            db.execute(delete(Tool).where(Tool.name == "kb_lookup"))
        start = counts()
        # An archive is its exporter's word: its tools meet this server's rules for a knowledge
        # base's tools, or nothing is imported (here the secret is not lent to knowledge bases).
        with pytest.raises(ValidationError, match="not lent to knowledge bases' tools"):
            import_project(target, archive, embedder, ToolSettings(), name="kb 3")
        with pytest.raises(ForbiddenError, match="read-only"):
            reader = Caller(CallerKind.PERSON, user_id=1, key=KeyScope(1, None, read_only=True, manage_users=False))
            import_project(target, tmp_path / "not even read", embedder, TOOLS, name="kb 4", caller=reader)
        cases = {
            "unexpected member": ({}, {"../../etc/passwd": b"x"}),
            "lacks rows/chunks.jsonl": ({"rows/chunks.jsonl": None}, None),
            "columns this ragchat does not know \\(colour\\)": (
                {"rows/documents.jsonl": json.dumps({"id": 1, "name": "a.md", "colour": "red"}).encode() + b"\n"},
                None,
            ),
            "not a ragchat project archive": ({"manifest.json": b'{"format": "zip"}'}, None),
        }
        for n, (match, (change, extra)) in enumerate(cases.items()):
            bad = tmp_path / f"bad{n}.tar.gz"
            _rewrite(archive, bad, change, extra)
            with pytest.raises(ValidationError, match=match):
                import_project(target, bad, embedder, TOOLS, name=f"other {n}")
        # A small file that expands: refused once what it holds passes the bound, not after.
        bomb = tmp_path / "bomb.tar.gz"
        _rewrite(archive, bomb, {"rows/chat_messages.jsonl": b"\n" * 50_000_000})
        assert bomb.stat().st_size < 1_000_000
        with pytest.raises(ValidationError, match="expands to more than"):
            import_project(target, bomb, embedder, TOOLS, name="bomb", max_bytes=10_000_000)
        with pytest.raises(ValidationError, match="not a readable gzipped tar"):
            (tmp_path / "plain.txt").write_bytes(b"hello")
            import_project(target, tmp_path / "plain.txt", embedder, TOOLS, name="plain")
        assert counts() == start
    finally:
        target.dispose()


def test_the_commands_export_and_import_by_name(
    source_url: str, migrated: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from app.cli.main import cli

    build_source(source_url, migrated)
    archive = tmp_path / "kb.tar.gz"
    monkeypatch.setenv("RAGCHAT_DATABASE_URL", source_url)
    done = CliRunner().invoke(cli, ["export-project", "kb", str(archive)])
    assert done.exit_code == 0, done.output
    assert "exported kb:" in done.output and "1 citations" in done.output
    with tarfile.open(archive, "r:gz") as opened:
        manifest = json.loads(opened.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert (
        manifest["project"] == {"name": "kb", "description": "a knowledge base"}
        and manifest["space"]["model"] == FakeEmbedder().space.model
    )
    add_unfinished(source_url, "olga@example.com")
    done = CliRunner().invoke(cli, ["export-project", "kb", str(archive)])
    with tarfile.open(archive, "r:gz") as opened:
        tools = [json.loads(line) for line in io.BytesIO(opened.extractfile("rows/tools.jsonl").read())]  # type: ignore[union-attr]
    # The knowledge base's own tool, its secret by name; the server's tools stay on the server.
    assert [(t["name"], t["header_secrets"]) for t in tools] == [("kb_lookup", {"Authorization": "glossary"})]
    missing = CliRunner().invoke(cli, ["export-project", "nope", str(tmp_path / "nope.tar.gz")])
    assert missing.exit_code != 0 and not (tmp_path / "nope.tar.gz").exists()


def test_an_owner_s_export_holds_their_chats_and_the_shared_ones_never_another_member_s_private_chat(
    source_url: str, migrated: Settings, tmp_path: Path
) -> None:
    kb, _ = build_source(source_url, migrated)
    store = Database.from_url(source_url)
    try:
        with store.write() as db:
            olga = User(email="olga@example.com", name="Olga", password_hash=None, is_admin=False)
            bob = User(email="bob@example.com", name="Bob", password_hash=None, is_admin=False)
            db.add_all([olga, bob])
            db.flush()
            db.add_all(
                [
                    Membership(user_id=olga.id, project_id=kb, role=MemberRole.OWNER),
                    Membership(user_id=bob.id, project_id=kb, role=MemberRole.EDITOR),
                ]
            )
            for title, owner, shared in (
                ("Olga's", olga.id, False),
                ("Bob's private", bob.id, False),
                ("Bob's shared", bob.id, True),
            ):
                db.add(
                    ChatSession(
                        project_id=kb,
                        title=title,
                        provider="fake",
                        model="m",
                        threshold=0.2,
                        owner_id=owner,
                        shared=shared,
                    )
                )
            ids = (olga.id, bob.id)
        as_olga = Caller(CallerKind.PERSON, user_id=ids[0])
        report = export_project(store, kb, tmp_path / "olga.tar.gz", caller=as_olga)
        with tarfile.open(tmp_path / "olga.tar.gz", "r:gz") as opened:
            sessions = [json.loads(line) for line in io.BytesIO(opened.extractfile("rows/chat_sessions.jsonl").read())]  # type: ignore[union-attr]
        assert sorted(s["title"] for s in sessions) == ["Bob's shared", "Olga's"] and report.rows["chat_sessions"] == 2
        # The operator's export holds every chat (the one made before people existed too).
        everything = export_project(store, "kb", tmp_path / "all.tar.gz")
        assert everything.rows["chat_sessions"] == 4
        with pytest.raises(ForbiddenError):
            export_project(store, kb, tmp_path / "bob.tar.gz", caller=Caller(CallerKind.PERSON, user_id=ids[1]))
        assert not (tmp_path / "bob.tar.gz").exists()
    finally:
        store.dispose()
