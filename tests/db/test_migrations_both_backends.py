"""The migration history on both backends (issue 18): data survives every step up and down, the
models match the migrated schema, constraints hold. Dialect-neutral SQL (named parameters), so
each test runs on SQLite and, with ``--backends=sqlite,postgresql``, on PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from app.db.models import Base
from app.db.schema_objects import is_unmodelled

pytestmark = pytest.mark.postgres

NOW = "2026-01-01 00:00:00"


def _run(engine: Engine, sql: str, **params: object) -> None:
    with engine.begin() as conn:
        conn.execute(text(sql), params)


def _rows(engine: Engine, sql: str, **params: object) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params).all()]


def _fill_at_head(engine: Engine) -> None:
    """A project with a document, two chunks, a session with an answered question and a citation."""
    _run(
        engine,
        "INSERT INTO projects(name, description, created_at, updated_at) VALUES ('kb', '', :t, :t)",
        t=NOW,
    )
    _run(
        engine,
        "INSERT INTO documents(project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
        "ingested_at, created_at, updated_at) SELECT id, 'd.txt', 'text', 10, 'h', 'ready', 2, :t, :t, :t "
        "FROM projects",
        t=NOW,
    )
    for ordinal, body in enumerate(("penguins swim in cold water", "owls fly at night")):
        _run(
            engine,
            "INSERT INTO chunks(document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
            "char_end, line_start, line_end, heading_path) SELECT id, project_id, :o, :body, 'h', 4, 0, 5, 1, 1, '' "
            "FROM documents",
            o=ordinal,
            body=body,
        )
    _run(
        engine,
        "INSERT INTO chat_sessions(project_id, title, system_prompt, provider, model, created_at, updated_at, "
        "threshold) SELECT id, 't', 'be brief', 'local', 'm', :t, :t, 0.3 FROM projects",
        t=NOW,
    )
    for role, content in (("user", "who swims?"), ("assistant", "penguins [1]")):
        _run(
            engine,
            "INSERT INTO chat_messages(session_id, role, content, created_at) SELECT id, :r, :c, :t FROM chat_sessions",
            r=role,
            c=content,
            t=NOW,
        )
    _run(
        engine,
        "INSERT INTO citations(message_id, chunk_id, document_id, marker, kind, score, rank, document_name, "
        "location, snippet) SELECT m.id, c.id, c.document_id, 1, 'model', 0.5, 1, 'd.txt', '{}', 'penguins' "
        "FROM chat_messages m, chunks c WHERE m.role = 'assistant' AND c.ordinal = 0",
    )


def _app_tables(engine: Engine) -> set[str]:
    names = set(inspect(engine).get_table_names())
    return {n for n in names if n != "alembic_version" and not n.startswith("sqlite_")}


def _revisions() -> list[str]:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def test_every_revision_downgrades_one_step_at_a_time_keeping_data_then_upgrades_again(database_url: str) -> None:
    migrate.upgrade(database_url, "head")
    engine = make_engine(database_url)
    try:
        _fill_at_head(engine)
        revisions = _revisions()
        for target in reversed(revisions[:-1]):
            migrate.downgrade(database_url, target)
            assert _rows(engine, "SELECT content FROM chat_messages ORDER BY id") == [
                ("who swims?",),
                ("penguins [1]",),
            ]
            assert _rows(engine, "SELECT text FROM chunks ORDER BY ordinal") == [
                ("penguins swim in cold water",),
                ("owls fly at night",),
            ]
            if target >= "0005":
                assert _rows(engine, "SELECT marker, snippet FROM citations") == [(1, "penguins")]
        migrate.downgrade(database_url, "base")
        assert _app_tables(engine) == set()
        migrate.upgrade(database_url, "head")
        assert _app_tables(engine) >= {"projects", "chunks", "chat_messages", "citations", "ingestion_items"}
    finally:
        engine.dispose()


def test_revision_1_rows_survive_the_upgrade_to_head_with_defaults(database_url: str) -> None:
    migrate.upgrade(database_url, "0001")
    engine = make_engine(database_url)
    try:
        _run(engine, "INSERT INTO projects(name, description, created_at, updated_at) VALUES ('kb', '', :t, :t)", t=NOW)
        _run(
            engine,
            "INSERT INTO chat_sessions(project_id, title, system_prompt, provider, model, created_at, updated_at) "
            "SELECT id, 's', 'be brief', 'local', 'm', :t, :t FROM projects",
            t=NOW,
        )
        _run(
            engine,
            "INSERT INTO chat_messages(session_id, role, content, created_at) SELECT id, 'user', 'hi', :t "
            "FROM chat_sessions",
            t=NOW,
        )
        migrate.upgrade(database_url, "head", default_threshold=0.42)
        sessions = _rows(
            engine,
            "SELECT title, enable_rag, top_k, threshold, include_citations, answer_mode, rerank, quality "
            "FROM chat_sessions",
        )
        assert sessions == [("s", True, 5, 0.42, True, "auto", "auto", "balanced")]
        assert _rows(engine, "SELECT content, status, error FROM chat_messages") == [("hi", "complete", None)]
    finally:
        engine.dispose()


def test_models_match_the_migrated_schema(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)

    def include(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
        return not (name and is_unmodelled(type_, name))

    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn, opts={"include_object": include, "compare_type": True, "target_metadata": Base.metadata}
            )
            diff = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_check_and_partial_unique_constraints_hold(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)
    try:
        _fill_at_head(engine)
        with pytest.raises(IntegrityError):
            _run(engine, "UPDATE chat_sessions SET top_k = 51")
        with pytest.raises(IntegrityError):
            _run(engine, "UPDATE chat_messages SET status = 'lost'")
        # client_message_id: unique per session when set, any number of NULLs.
        _run(engine, "UPDATE chat_messages SET client_message_id = 'turn-1' WHERE role = 'user'")
        with pytest.raises(IntegrityError):
            _run(engine, "UPDATE chat_messages SET client_message_id = 'turn-1' WHERE role = 'assistant'")
        # one active embedding space per project; retired ones may pile up.
        insert_space = (
            "INSERT INTO embedding_spaces(project_id, provider, model, dimensions, status, created_at) "
            "SELECT id, 'p', 'm', 3, :s, :t FROM projects"
        )
        for status in ("active", "retired", "retired"):
            _run(engine, insert_space, s=status, t=NOW)
        with pytest.raises(IntegrityError):
            _run(engine, insert_space, s="active", t=NOW)
    finally:
        engine.dispose()


def test_a_deleted_rows_id_is_never_handed_out_again(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)
    try:
        _fill_at_head(engine)
        (last,) = _rows(engine, "SELECT max(id) FROM chat_messages")[0]
        _run(engine, "DELETE FROM chat_messages WHERE id = :i", i=last)
        _run(
            engine,
            "INSERT INTO chat_messages(session_id, role, content, created_at) SELECT id, 'user', 'again', :t "
            "FROM chat_sessions",
            t=NOW,
        )
        assert _rows(engine, "SELECT id > :i FROM chat_messages WHERE content = 'again'", i=last) == [(True,)]
    finally:
        engine.dispose()


def _keyword_hits(engine: Engine, word: str) -> list[int]:
    if engine.dialect.name == "postgresql":
        sql = "SELECT id FROM chunks WHERE text_search @@ plainto_tsquery('ragchat_english', :w) ORDER BY id"
    else:
        sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :w ORDER BY rowid"
    return [r[0] for r in _rows(engine, sql, w=word)]


def test_the_full_text_index_follows_chunk_inserts_updates_and_cascading_deletes(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)
    try:
        _fill_at_head(engine)
        first = _rows(engine, "SELECT id FROM chunks WHERE ordinal = 0")[0][0]
        assert _keyword_hits(engine, "swimming") == [first]  # stemmed on both
        _run(engine, "UPDATE chunks SET text = 'herons wade' WHERE id = :i", i=first)
        assert _keyword_hits(engine, "swim") == []
        assert _keyword_hits(engine, "heron") == [first]
        _run(engine, "DELETE FROM projects")
        assert _keyword_hits(engine, "heron") == []
    finally:
        engine.dispose()
