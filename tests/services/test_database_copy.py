"""`ragchat copy-database`: a SQLite knowledge base copied into a migrated target (PostgreSQL, or
another SQLite file) keeps every row and every vector, ids included, searches the same, hands out
fresh ids afterwards, and refuses or rolls back cleanly (issue 18, item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from app.container import Container
from app.db import migrate
from app.db.database import Database
from app.db.enums import CitationKind, ItemState, JobOrigin, MessageStatus, Role, SpaceStatus, ToolCallStatus
from app.db.models import (
    ChatMessage,
    ChatSession,
    Citation,
    EmbeddingSpace,
    IngestionItem,
    IngestionJob,
    Server,
    SessionToolGroup,
    StoredToolCall,
    Tool,
    ToolVector,
)
from app.errors import ConflictError
from app.rag.index import spaces, vector_store
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval_mode import RetrievalMode
from app.services import database_copy, projects, search
from app.settings import Settings
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.sqlite_too(reason="copies a SQLite knowledge base into the backend under test")

DOCS = {
    "penguins.md": "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter.",
    "volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava and ash.",
    "tides.md": "# Tides\n\nThe moon's gravity pulls the oceans, raising tides twice a day.",
}
QUERIES = ("how do penguins survive winter", "lava erupts", "moon gravity oceans")


def build_source(url: str, settings: Settings) -> tuple[int, FakeEmbedder]:
    """A knowledge base with every kind of row: documents, chunks, an active space and a second one
    being built (another model, another dimension), a session with its settings and tool groups,
    messages with citations and tool calls, an ingestion job, a tool and its vector."""
    migrate.upgrade(url, default_threshold=settings.rag.threshold)
    store = Database.from_url(url)
    embedder = FakeEmbedder()
    try:
        kb = projects.create(store, "kb", "a knowledge base").id
        projects.create(store, "empty")
        Ingestor(store, embedder, settings.ingest).ingest(
            kb, [Source.from_bytes(n, t.encode()) for n, t in DOCS.items()]
        )
        other = FakeEmbedder(dimensions=32, model="other")
        with store.write() as db:
            space = spaces.create_space(db, kb, other.space, status=SpaceStatus.BUILDING)
            chunks = db.execute(text("SELECT id, text FROM chunks ORDER BY id")).all()
            vector_store.put(db, space.table, [c.id for c in chunks[:2]], other.embed([c.text for c in chunks[:2]]))
            _chat_rows(db, kb, chunks[0].id)
    finally:
        store.dispose()
    return kb, embedder


def _chat_rows(db: Any, kb: int, chunk_id: int) -> None:
    chat = ChatSession(
        project_id=kb,
        title="Penguins",
        system_prompt="Be brief.",
        provider="fake",
        model="m1",
        top_k=7,
        threshold=0.25,
        include_citations=False,
        answer_mode="extractive",
        rerank="judge",
        expansion="on",
        quality="thorough",
        rewrite="off",
    )
    db.add(chat)
    tool = Tool(
        name="weather",
        description="Weather by city",
        input_schema={"type": "object"},
        examples=["rain?"],
        tool_group="outside",
        core=False,
        kind="http",
        http_method="GET",
        url_template="https://w.example/{city}",
        header_secrets={"X-Key": "WEATHER"},
        timeout_seconds=5.0,
        side_effects=False,
    )
    db.add(tool)
    db.flush()
    db.add(SessionToolGroup(session_id=chat.id, tool_group="outside"))
    db.add(ToolVector(tool_id=tool.id, space="fake/hash-words@64", text_hash="h" * 64, vector=b"\x00\x01" * 8))
    question = ChatMessage(
        session_id=chat.id, role=Role.USER, content="How do penguins survive?", client_message_id="c-1"
    )
    answer = ChatMessage(
        session_id=chat.id,
        role=Role.ASSISTANT,
        content="They huddle [1].",
        status=MessageStatus.COMPLETE,
        trace={"stages": [{"name": "search", "ms": 1.5}], "flags": ["x"]},
    )
    failed = ChatMessage(session_id=chat.id, role=Role.ASSISTANT, status=MessageStatus.FAILED, error="timeout")
    db.add_all([question, answer, failed])
    db.flush()
    db.add(
        Citation(
            message_id=answer.id,
            chunk_id=chunk_id,
            document_id=None,
            marker=1,
            kind=CitationKind.MODEL,
            score=0.8125,
            rank=1,
            document_name="penguins.md",
            location={"lines": [3, 3]},
            snippet="huddle",
        )
    )
    db.add(
        StoredToolCall(
            message_id=answer.id,
            session_id=chat.id,
            position=0,
            call_id="call-1",
            tool_id=tool.id,
            tool_name="weather",
            arguments='{"city": "Oslo"}',
            status=ToolCallStatus.EXECUTED,
            result="cold",
            result_chars=4,
            ms=12.5,
        )
    )
    db.add(Server(host="old-host", pid=4242))  # a process using the source: not copied
    job = IngestionJob(project_id=kb, origin=JobOrigin.UPLOAD, api_key_id=2)
    db.add(job)
    db.flush()
    db.add(
        IngestionItem(
            job_id=job.id,
            project_id=kb,
            name="later.md",
            size_bytes=10,
            source_path="/spool/x",
            state=ItemState.FAILED,
            error="could not parse",
            attempts=2,
        )
    )


def dump(url: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[int, list[float]]]]:
    """Every copied table's rows (in key order) and every space's vectors."""
    store = Database.from_url(url)
    try:
        with store.read() as db:
            rows = {
                t.name: [dict(r) for r in db.execute(select(t).order_by(*t.primary_key.columns)).mappings()]
                for t in database_copy.copied_tables()
            }
            vectors = {}
            for space in db.scalars(select(EmbeddingSpace)).all():
                found: dict[int, list[float]] = {}
                for ids, batch in database_copy.read_vectors(db.connection(), space.table):
                    found.update({i: v.tolist() for i, v in zip(ids, batch, strict=True)})
                vectors[space.table] = found
        return rows, vectors
    finally:
        store.dispose()


def assert_same_searches(one: Container, other: Container, embedder: FakeEmbedder, kb: int) -> None:
    """Every retrieval mode finds the same chunks with the same scores in both databases."""
    for mode in RetrievalMode:
        for query in QUERIES:
            hits = [
                [
                    (h.chunk_id, round(h.fused_score, 9))
                    for h in search.search(
                        c.store, embedder, c.settings, kb, query, top_k=3, threshold=0.0, mode=mode
                    ).kept
                ]
                for c in (one, other)
            ]
            assert hits[0] == hits[1] and hits[0], (mode, query)


@pytest.fixture
def source_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'source.db'}"


def test_a_copy_keeps_every_row_and_vector_searches_the_same_and_ids_go_on(
    source_url: str, migrated: Settings, backend: str
) -> None:
    kb, embedder = build_source(source_url, migrated)
    report = database_copy.copy_database(source_url, migrated.database_url)
    before, after = dump(source_url), dump(migrated.database_url)
    assert after[0] == before[0]
    target = Database.from_url(migrated.database_url)
    try:
        with target.read() as db:
            assert db.scalar(text("SELECT count(*) FROM servers")) == 0
    finally:
        target.dispose()
    assert after[1] == before[1]
    assert sorted(len(v) for v in after[1].values()) == [2, len(before[0]["chunks"])]
    assert report.rows["citations"] == 1 and report.rows["tool_calls"] == 1 and report.rows["chunks"] >= 3
    assert all(before[0][name] for name in ("chat_sessions", "chat_messages", "ingestion_items", "tool_vectors"))
    lite, copied = (
        Container.build(Settings(database_url=source_url), embedder=embedder),
        Container.build(migrated, embedder=embedder),
    )
    try:
        assert_same_searches(lite, copied, embedder, kb)
        if backend == "postgresql":  # each space's HNSW index, built after its vectors
            with copied.store.read() as db:
                found = db.scalars(
                    text("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'vec_space_%hnsw'")
                ).all()
            assert sorted(found) == sorted(f"{table}_hnsw" for table in after[1])
        fresh = projects.create(copied.store, "new")
        assert fresh.id == max(r["id"] for r in before[0]["projects"]) + 1
        Ingestor(copied.store, embedder, copied.settings.ingest).ingest(
            fresh.id, [Source.from_bytes("new.md", b"# New\n\nA brand new document about glaciers.")]
        )
        with copied.store.read() as db:
            newest = db.execute(text("SELECT max(id) FROM chunks")).scalar_one()
        assert newest == max(r["id"] for r in before[0]["chunks"]) + 1
    finally:
        lite.close()
        copied.close()


def test_a_round_trip_through_the_backend_back_to_sqlite_keeps_everything(
    source_url: str, migrated: Settings, tmp_path: Path
) -> None:
    """SQLite → the backend under test → a fresh SQLite file (on PostgreSQL: the way back, from
    PostgreSQL's `vector` columns and sequences to vec0 tables, FTS5 and the journals)."""
    kb, embedder = build_source(source_url, migrated)
    database_copy.copy_database(source_url, migrated.database_url)
    back = f"sqlite:///{tmp_path / 'back.db'}"
    migrate.upgrade(back, default_threshold=migrated.rag.threshold)
    report = database_copy.copy_database(migrated.database_url, back)
    before, after = dump(source_url), dump(back)
    assert after[0] == before[0]
    assert after[1] == before[1] and sum(report.vectors.values()) == sum(len(v) for v in before[1].values())
    lite, returned = (
        Container.build(Settings(database_url=source_url), embedder=embedder),
        Container.build(Settings(database_url=back), embedder=embedder),
    )
    try:
        assert_same_searches(lite, returned, embedder, kb)
        fresh = projects.create(returned.store, "new")  # ids go on past the copied ones
        assert fresh.id == max(r["id"] for r in before[0]["projects"]) + 1
        Ingestor(returned.store, embedder, returned.settings.ingest).ingest(
            fresh.id, [Source.from_bytes("new.md", b"# New\n\nA brand new document about glaciers.")]
        )
        hits = search.search(
            returned.store,
            embedder,
            returned.settings,
            fresh.id,
            "glaciers",
            top_k=3,
            threshold=0.0,
            mode=RetrievalMode.HYBRID,
        ).kept
        assert [h.document_name for h in hits] == ["new.md"]
    finally:
        lite.close()
        returned.close()


def test_a_non_empty_target_is_refused_unless_replaced(source_url: str, migrated: Settings) -> None:
    build_source(source_url, migrated)
    target = Database.from_url(migrated.database_url)
    try:
        projects.create(target, "already here")
    finally:
        target.dispose()
    with pytest.raises(ConflictError, match=r"is not empty \(1 projects\).*--replace"):
        database_copy.copy_database(source_url, migrated.database_url)
    assert [r["name"] for r in dump(migrated.database_url)[0]["projects"]] == ["already here"]
    database_copy.copy_database(source_url, migrated.database_url, replace=True)
    assert dump(migrated.database_url) == dump(source_url)


def test_a_failed_copy_leaves_the_target_as_it_was(source_url: str, migrated: Settings) -> None:
    build_source(source_url, migrated)
    empty = dump(migrated.database_url)
    # A chunk whose project is gone (written with foreign keys off): the target refuses it half-way.
    source = Database.from_url(source_url)
    try:
        with source.engine.connect() as conn:
            conn.connection.driver_connection.execute("PRAGMA foreign_keys = OFF")  # type: ignore[union-attr]
            conn.exec_driver_sql(
                "INSERT INTO chunks(document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
                "char_end, line_start, line_end, heading_path) SELECT document_id, 999, 9, text, content_hash, "
                "token_count, char_start, char_end, line_start, line_end, '' FROM chunks LIMIT 1"
            )
            conn.commit()
    finally:
        source.dispose()
    with pytest.raises(IntegrityError, match=r"(?i)foreign key"):
        database_copy.copy_database(source_url, migrated.database_url)
    assert dump(migrated.database_url) == empty


def test_both_databases_must_be_at_the_head(source_url: str, migrated: Settings) -> None:
    migrate.upgrade(source_url, "0017")
    with pytest.raises(ConflictError, match=r"source database .* is at migration 0017.*ragchat migrate"):
        database_copy.copy_database(source_url, migrated.database_url)
    with pytest.raises(ConflictError, match="same database"):
        database_copy.copy_database(migrated.database_url, migrated.database_url)


def test_the_command_copies_and_says_what(source_url: str, migrated: Settings, tmp_path: Path) -> None:
    build_source(source_url, migrated)
    env = {"PATH": "/usr/bin:/bin", "RAGCHAT_DATABASE_URL": source_url, "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")

    def copy() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app", "copy-database", "--to", migrated.database_url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    done = copy()
    assert done.returncode == 0, done.stderr
    assert "vectors in 2 embedding spaces" in done.stdout
    again = copy()
    assert again.returncode == 2 and "is not empty" in again.stderr and "Traceback" not in again.stderr
