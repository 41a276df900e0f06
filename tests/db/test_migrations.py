"""The migration history: data survives upgrades, every revision downgrades. The tests that seed a
vec0 space or read SQLite's own schema (sqlite_master, AUTOINCREMENT, FTS5, the journals'
triggers) are SQLite's; the rest run on both backends (tests/db/test_migrations_both_backends.py
holds the dialect-neutral history, and the models-match check)."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from app.db import migrate
from app.db.engine import make_engine
from app.db.models import Base
from tests.backends import execute, sync_sequences

NOW = "2026-01-01 00:00:00"


def _fill_revision_1(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        execute(
            conn,
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
        for sid in (1, 2):
            execute(
                conn,
                "INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, "
                "created_at, updated_at) VALUES (?, 1, ?, 'be brief', 'local', 'm', ?, ?)",
                (sid, f"session {sid}", NOW, NOW),
            )
            for n in range(3):
                execute(
                    conn,
                    "INSERT INTO chat_messages(session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
                    (sid, "user" if n % 2 == 0 else "assistant", f"m{sid}.{n}", NOW),
                )
        sync_sequences(conn, "projects", "chat_sessions")
    engine.dispose()


def test_revision_1_data_survives_upgrade_with_defaults(database_url: str) -> None:
    migrate.upgrade(database_url, "0001")
    _fill_revision_1(database_url)

    migrate.upgrade(database_url, "head", default_threshold=0.42)

    engine = make_engine(database_url)
    with engine.connect() as conn:
        sessions = execute(
            conn,
            "SELECT id, title, system_prompt, enable_rag, top_k, threshold, include_citations "
            "FROM chat_sessions ORDER BY id",
        ).all()
        messages = execute(
            conn, "SELECT session_id, content, status, error, trace FROM chat_messages ORDER BY id"
        ).all()
    engine.dispose()
    assert sessions == [
        (1, "session 1", "be brief", 1, 5, 0.42, 1),
        (2, "session 2", "be brief", 1, 5, 0.42, 1),
    ]
    assert [m[1] for m in messages] == [f"m{s}.{n}" for s in (1, 2) for n in range(3)]
    assert {(m[2], m[3], m[4]) for m in messages} == {("complete", None, None)}


def test_rag_settings_constraints_are_enforced(migrated) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy.exc import IntegrityError

    engine = make_engine(migrated.database_url)
    with engine.begin() as conn:
        execute(
            conn,
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
    for top_k, threshold in ((0, 0.5), (51, 0.5), (5, -0.01), (5, 1.5)):
        with (
            pytest.raises(IntegrityError, match=r"CHECK constraint failed|violates check constraint"),
            engine.begin() as conn,
        ):
            execute(
                conn,
                "INSERT INTO chat_sessions(project_id, title, system_prompt, provider, model, created_at, "
                "updated_at, top_k, threshold) VALUES (1, 't', '', 'local', 'm', ?, ?, ?, ?)",
                (NOW, NOW, top_k, threshold),
            )
    engine.dispose()


def test_every_revision_downgrades_to_base_and_back(database_url: str) -> None:
    migrate.upgrade(database_url, "head")
    _fill_revision_1_compatible_rows(database_url)
    migrate.downgrade(database_url, "base")
    engine = make_engine(database_url)
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":  # every object, indexes and triggers too
            tables = {r[0] for r in execute(conn, "SELECT name FROM sqlite_master").all()}
        else:
            tables = set(inspect(conn).get_table_names())
    engine.dispose()
    # sqlite_sequence (made by the first AUTOINCREMENT table) is SQLite's own and cannot be dropped.
    assert tables <= {"alembic_version", "sqlite_autoindex_alembic_version_1", "sqlite_sequence"}
    migrate.upgrade(database_url, "head")


def _fill_revision_1_compatible_rows(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        execute(
            conn,
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
        execute(
            conn,
            "INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, created_at, "
            "updated_at, threshold) VALUES (1, 1, 't', '', 'local', 'm', ?, ?, 0.3)",
            (NOW, NOW),
        )
        execute(
            conn,
            "INSERT INTO chat_messages(session_id, role, content, created_at) VALUES (1, 'user', 'hi', ?)",
            (NOW,),
        )
        sync_sequences(conn, "projects", "chat_sessions")
    engine.dispose()


def test_step_by_step_down_keeps_messages(database_url: str) -> None:
    """Downgrading one revision at a time (batch-mode table rebuilds) loses no child rows."""
    migrate.upgrade(database_url, "head")
    _fill_revision_1_compatible_rows(database_url)
    for target in (BEFORE_0008, "0004", "0003", "0002", "0001"):
        migrate.downgrade(database_url, target)
        engine = make_engine(database_url)
        with engine.connect() as conn:
            assert execute(conn, "SELECT count(*) FROM chat_messages").scalar() == 1
        engine.dispose()


@pytest.mark.sqlite_only(
    reason="FTS5's index and its triggers (PostgreSQL's tsvector: test_migrations_both_backends.py)"
)
def test_fts_index_follows_chunk_inserts_updates_and_cascading_deletes(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
        conn.exec_driver_sql(
            "INSERT INTO documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
            "ingested_at, created_at, updated_at) VALUES (1, 1, 'd', 'text', 1, 'h', 'ready', 1, ?, ?, ?)",
            (NOW, NOW, NOW),
        )
        conn.exec_driver_sql(
            "INSERT INTO chunks(id, document_id, project_id, ordinal, text, content_hash, token_count, "
            "char_start, char_end, line_start, line_end, heading_path) "
            "VALUES (1, 1, 1, 0, 'penguins swim', 'h', 2, 0, 13, 1, 1, '')"
        )

    def hits(word: str) -> list[int]:
        with engine.connect() as conn:
            return [
                r[0] for r in conn.exec_driver_sql("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (word,))
            ]

    assert hits("swimming") == [1]  # porter stemming
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE chunks SET text = 'owls fly' WHERE id = 1")
    assert hits("swim") == [] and hits("owl") == [1]
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM projects WHERE id = 1")
    assert hits("owl") == []
    engine.dispose()


# -- 0008: ids are never handed out twice ---------------------------------------------------------

BEFORE_0008 = "0007"
NEVER_REUSED = ("projects", "embedding_spaces", "documents", "chunks", "chat_sessions", "chat_messages", "citations")
NEVER_REUSED_SINCE_0011 = (
    "tools",
    "ingestion_jobs",
    "ingestion_items",
    "tool_calls",
    "servers",
    "users",
    "person_keys",
    "invitations",
)  # 0011 tools, 0013 jobs, 0017 tool calls, 0021 servers, 0025 people and their keys, 0026 invitations


def _fill_before_0008(url: str) -> None:
    """Two projects with everything a project holds, including a vector space with its vec0 table and
    trigger, so the rebuild of ``chunks`` has its FTS, journal and vector triggers to carry over."""
    engine = make_engine(url)
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        for pid in (1, 2):
            run("INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (?, ?, '', ?, ?)",
                (pid, f"kb{pid}", NOW, NOW))  # fmt: skip
            run("INSERT INTO documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
                "ingested_at, created_at, updated_at) VALUES (?, ?, 'd', 'text', 1, 'h', 'ready', 1, ?, ?, ?)",
                (pid, pid, NOW, NOW, NOW))  # fmt: skip
            run("INSERT INTO chunks(id, document_id, project_id, ordinal, text, content_hash, token_count, "
                "char_start, char_end, line_start, line_end, heading_path) "
                "VALUES (?, ?, ?, 0, ?, 'h', 2, 0, 13, 1, 1, '')", (pid, pid, pid, f"penguins swim {pid}"))  # fmt: skip
            run("INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, created_at, "
                "updated_at, threshold) VALUES (?, ?, 't', '', 'local', 'm', ?, ?, 0.3)", (pid, pid, NOW, NOW))  # fmt: skip
            for role in ("user", "assistant"):
                run("INSERT INTO chat_messages(session_id, role, content, created_at) VALUES (?, ?, 'hi', ?)",
                    (pid, role, NOW))  # fmt: skip
        run("INSERT INTO citations(message_id, chunk_id, document_id, marker, kind, score, rank, document_name, "
            "location, snippet) VALUES (2, 1, 1, 1, 'model', 0.5, 1, 'd', '{}', 's')")  # fmt: skip
        run("INSERT INTO embedding_spaces(id, project_id, provider, model, dimensions, status, created_at) "
            "VALUES (1, 1, 'fake', 'm', 2, 'active', ?)", (NOW,))  # fmt: skip
        run("CREATE VIRTUAL TABLE vec_space_1 USING vec0(embedding float[2])")
        run("CREATE TRIGGER vec_space_1_chunk_deleted AFTER DELETE ON chunks WHEN old.project_id = 1 "
            "BEGIN DELETE FROM vec_space_1 WHERE rowid = old.id; END")  # fmt: skip
        run("INSERT INTO vec_space_1(rowid, embedding) VALUES (1, '[1, 0]')")
    engine.dispose()


def _schema(url: str) -> dict[tuple[str, str], str]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").all()
    engine.dispose()
    return {(kind, name): sql for kind, name, sql in rows}


@pytest.mark.sqlite_only(
    reason="0008 rebuilds SQLite's tables for AUTOINCREMENT (sqlite_sequence, vec0, FTS5); a no-op on PostgreSQL"
)
def test_0008_keeps_every_row_and_no_deleted_id_comes_back(database_url: str) -> None:
    migrate.upgrade(database_url, BEFORE_0008)
    _fill_before_0008(database_url)
    triggers_before = {k: v for k, v in _schema(database_url).items() if k[0] == "trigger"}
    indexes_before = {k: v for k, v in _schema(database_url).items() if k[0] == "index"}

    migrate.upgrade(database_url, "0008")

    schema = _schema(database_url)
    assert {k: v for k, v in schema.items() if k[0] == "trigger"} == triggers_before
    assert indexes_before.items() <= schema.items()
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        counts = {t: run(f"SELECT count(*) FROM {t}").scalar() for t in NEVER_REUSED}
        assert counts == {t: 1 if t in ("citations", "embedding_spaces") else 2 for t in NEVER_REUSED} | {
            "chat_messages": 4
        }
        # Seeded at the highest id in use, so the ids already handed out are never handed out again.
        sequences = dict(run("SELECT name, seq FROM sqlite_sequence").all())  # vec0's shadow tables have some too
        assert {t: sequences.get(t) for t in NEVER_REUSED} == {
            t: run(f"SELECT max(id) FROM {t}").scalar() for t in NEVER_REUSED
        }
        # The rebuilt chunks table still drives its keyword index, its vectors and the journal.
        assert run("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'swimming'").scalars().all() == [1, 2]
        run("DELETE FROM projects WHERE id = 1")
        assert run("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'swim'").scalars().all() == [2]
        assert run("SELECT count(*) FROM vec_space_1").scalar() == 0
        run("DELETE FROM chat_messages WHERE id = 4")
        run("INSERT INTO projects(name, description, created_at, updated_at) VALUES ('new', '', ?, ?)", (NOW, NOW))
        run("INSERT INTO chat_messages(session_id, role, content, created_at, status) VALUES (2, 'user', 'x', ?, "
            "'complete')", (NOW,))  # fmt: skip
        assert run("SELECT id FROM projects WHERE name = 'new'").scalar() == 3  # not 1 again
        assert run("SELECT max(id) FROM chat_messages").scalar() == 5  # not 4 again
    engine.dispose()


@pytest.mark.sqlite_only(reason="0008's SQLite table rebuilds, read back from sqlite_master")
def test_0008_downgrade_keeps_rows_and_triggers(database_url: str) -> None:
    migrate.upgrade(database_url, BEFORE_0008)
    before = _schema(database_url)
    _fill_before_0008(database_url)
    migrate.upgrade(database_url, "0008")
    migrate.downgrade(database_url, BEFORE_0008)

    after = _schema(database_url)
    assert {k for k in after if k[0] == "trigger"} == {k for k in before if k[0] == "trigger"} | {
        ("trigger", "vec_space_1_chunk_deleted")
    }
    assert {k for k in after if k[0] == "index"} == {k for k in before if k[0] == "index"}
    for table in NEVER_REUSED:
        assert "AUTOINCREMENT" not in after[("table", table)]
    assert "client_message_id" not in after[("table", "chat_messages")]
    engine = make_engine(database_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM chat_messages").scalar() == 4
        assert conn.exec_driver_sql("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'swim'").scalar() == 2
    engine.dispose()
    migrate.upgrade(database_url, "head")


def test_client_message_ids_are_unique_per_session(migrated) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy.exc import IntegrityError

    _fill_revision_1(migrated.database_url)  # sessions 1 and 2
    engine = make_engine(migrated.database_url)
    insert = (
        "INSERT INTO chat_messages(session_id, role, content, created_at, status, client_message_id) "
        "VALUES (?, 'user', 'q', ?, 'complete', ?)"
    )
    with engine.begin() as conn:
        for session_id, key in ((1, "k1"), (2, "k1"), (1, None), (1, None)):
            execute(conn, insert, (session_id, NOW, key))
    with pytest.raises(IntegrityError, match=r"UNIQUE|unique"), engine.begin() as conn:
        execute(conn, insert, (1, NOW, "k1"))
    engine.dispose()


@pytest.mark.sqlite_only(reason="SQLite's AUTOINCREMENT in sqlite_master (PostgreSQL's sequences never reuse ids)")
def test_tables_marked_never_reused_keep_autoincrement_at_head(migrated) -> None:  # type: ignore[no-untyped-def]
    """Autogenerate does not compare AUTOINCREMENT, and a later batch rebuild drops it unless the
    revision passes ``table_kwargs={"sqlite_autoincrement": True}``: this is the check that sees it."""
    marked = {t.name for t in Base.metadata.sorted_tables if t.dialect_options["sqlite"]["autoincrement"]}
    assert marked == set(NEVER_REUSED + NEVER_REUSED_SINCE_0011)
    schema = _schema(migrated.database_url)
    assert [t for t in sorted(marked) if "AUTOINCREMENT" not in schema[("table", t)]] == []


# -- 0009: a citation's score may be null -----------------------------------------------------------


@pytest.mark.sqlite_only(reason="seeds a vec0 space and checks SQLite's AUTOINCREMENT survives 0009's rebuild")
def test_0009_keeps_citation_scores_allows_none_and_downgrades_to_zero(database_url: str) -> None:
    from sqlalchemy.exc import IntegrityError

    migrate.upgrade(database_url, BEFORE_0008)
    _fill_before_0008(database_url)  # one citation, score 0.5
    migrate.upgrade(database_url, "head")
    insert = (
        "INSERT INTO citations(message_id, chunk_id, document_id, marker, kind, score, rank, document_name, "
        "location, snippet) VALUES (2, 1, 1, ?, 'model', ?, 1, 'd', '{}', 's')"
    )
    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(insert, (2, None))
        conn.exec_driver_sql("DELETE FROM citations WHERE marker = 2")
        conn.exec_driver_sql(insert, (3, None))
        rows = conn.exec_driver_sql("SELECT id, marker, score FROM citations ORDER BY id").all()
    engine.dispose()
    assert rows == [(1, 1, 0.5), (3, 3, None)]  # id 2 is not handed out again: AUTOINCREMENT survived

    migrate.downgrade(database_url, "0008")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT marker, score FROM citations ORDER BY id").all() == [(1, 0.5), (3, 0.0)]
    with pytest.raises(IntegrityError, match="NOT NULL"), engine.begin() as conn:
        conn.exec_driver_sql(insert, (4, None))
    engine.dispose()
    assert "AUTOINCREMENT" in _schema(database_url)[("table", "citations")]


# -- 0010: the keyword journal ------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="the keyword journal's triggers exist on SQLite only (the in-process index)")
def test_0010_journals_existing_projects_and_every_chunk_change(database_url: str) -> None:
    """Projects that hold chunks before 0010 get a first journal row, so the keyword index loads
    them; afterwards every insert, text update and delete of a chunk is journalled, and a deleted
    project leaves no rows behind (its cascade is not journalled)."""
    from app.db.database import Database
    from app.rag.index import keyword_index

    migrate.upgrade(database_url, "0008")
    _fill_before_0008(database_url)
    migrate.upgrade(database_url, "head")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        assert run("SELECT project_id, chunk_id FROM keyword_journal ORDER BY seq").all() == [(1, None), (2, None)]
        run("INSERT INTO chunks(id, document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
            "char_end, line_start, line_end, heading_path) VALUES (3, 1, 1, 1, 'owls', 'h', 1, 0, 4, 1, 1, '')")  # fmt: skip
        run("UPDATE chunks SET text = 'owls fly' WHERE id = 3")
        run("UPDATE chunks SET token_count = 2 WHERE id = 3")  # not the text: nothing to journal
        run("DELETE FROM chunks WHERE id = 3")
        assert run("SELECT project_id, chunk_id FROM keyword_journal WHERE chunk_id IS NOT NULL ORDER BY seq").all() == [
            (1, 3), (1, 3), (1, 3), (1, 3)
        ]  # fmt: skip
    engine.dispose()
    store = Database.from_url(database_url)
    try:
        with store.read() as db:
            assert [cid for cid, _ in keyword_index.search(db, 1, "swimming penguins", 10)] == [1]
        with store.write() as db:
            db.connection().exec_driver_sql("DELETE FROM projects WHERE id = 1")
        with store.read() as db:
            journal = db.connection().exec_driver_sql("SELECT DISTINCT project_id FROM keyword_journal").all()
            assert journal == [(2,)]
            assert keyword_index.search(db, 1, "swimming penguins", 10) == []
    finally:
        store.dispose()


# -- 0013: ingestion jobs ------------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="seeds a vec0 space and reads AUTOINCREMENT and tables from sqlite_master")
def test_0013_keeps_documents_checks_item_states_and_downgrades_without_touching_documents(database_url: str) -> None:
    from sqlalchemy.exc import IntegrityError

    migrate.upgrade(database_url, BEFORE_0008)
    _fill_before_0008(database_url)
    migrate.upgrade(database_url, "0012")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        before = conn.exec_driver_sql("SELECT id, name, status, chunk_count FROM documents ORDER BY id").all()
    engine.dispose()
    migrate.upgrade(database_url, "0013")
    engine = make_engine(database_url)
    item = (
        "INSERT INTO ingestion_items(job_id, project_id, name, size_bytes, source_path, state, chunks_done, "
        "chunks_total, attempts, created_at) VALUES (1, 1, 'a.md', 3, '/x', ?, 0, 0, 0, '2026-11-25')"
    )
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT id, name, status, chunk_count FROM documents ORDER BY id").all() == before
        conn.exec_driver_sql(
            "INSERT INTO ingestion_jobs(project_id, origin, created_at) VALUES (1, 'upload', '2026-11-25')"
        )
        conn.exec_driver_sql(item, ("queued",))
    with pytest.raises(IntegrityError, match="CHECK"), engine.begin() as conn:
        conn.exec_driver_sql(item, ("half-done",))
    with pytest.raises(IntegrityError, match="CHECK"), engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO ingestion_jobs(project_id, origin, created_at) VALUES (1, 'ftp', '2026-11-25')"
        )
    engine.dispose()
    assert "AUTOINCREMENT" in _schema(database_url)[("table", "ingestion_items")]

    migrate.downgrade(database_url, "0012")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT id, name, status, chunk_count FROM documents ORDER BY id").all() == before
        tables = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")}
    engine.dispose()
    assert not {"ingestion_jobs", "ingestion_items"} & tables
