"""The migration history: data survives upgrades, every revision downgrades, models match."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.db import migrate
from app.db.engine import make_engine
from app.db.models import Base
from app.db.schema_objects import is_unmodelled_table

NOW = "2026-01-01 00:00:00"


def _fill_revision_1(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
        for sid in (1, 2):
            conn.exec_driver_sql(
                "INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, "
                "created_at, updated_at) VALUES (?, 1, ?, 'be brief', 'local', 'm', ?, ?)",
                (sid, f"session {sid}", NOW, NOW),
            )
            for n in range(3):
                conn.exec_driver_sql(
                    "INSERT INTO chat_messages(session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
                    (sid, "user" if n % 2 == 0 else "assistant", f"m{sid}.{n}", NOW),
                )
    engine.dispose()


def test_revision_1_data_survives_upgrade_with_defaults(database_url: str) -> None:
    migrate.upgrade(database_url, "0001")
    _fill_revision_1(database_url)

    migrate.upgrade(database_url, "head", default_threshold=0.42)

    engine = make_engine(database_url)
    with engine.connect() as conn:
        sessions = conn.exec_driver_sql(
            "SELECT id, title, system_prompt, enable_rag, top_k, threshold, include_citations "
            "FROM chat_sessions ORDER BY id"
        ).all()
        messages = conn.exec_driver_sql(
            "SELECT session_id, content, status, error, trace FROM chat_messages ORDER BY id"
        ).all()
    engine.dispose()
    assert sessions == [
        (1, "session 1", "be brief", 1, 5, 0.42, 1),
        (2, "session 2", "be brief", 1, 5, 0.42, 1),
    ]
    assert [m[1] for m in messages] == [f"m{s}.{n}" for s in (1, 2) for n in range(3)]
    assert {(m[2], m[3], m[4]) for m in messages} == {("complete", None, None)}


def test_rag_settings_constraints_are_enforced(migrated) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from sqlalchemy.exc import IntegrityError

    engine = make_engine(migrated.database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
    for top_k, threshold in ((0, 0.5), (51, 0.5), (5, -0.01), (5, 1.5)):
        with pytest.raises(IntegrityError, match="CHECK constraint failed"), engine.begin() as conn:
            conn.exec_driver_sql(
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
        tables = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master").all()}
    engine.dispose()
    assert tables <= {"alembic_version", "sqlite_autoindex_alembic_version_1"}
    migrate.upgrade(database_url, "head")


def _fill_revision_1_compatible_rows(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW),
        )
        conn.exec_driver_sql(
            "INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, created_at, "
            "updated_at, threshold) VALUES (1, 1, 't', '', 'local', 'm', ?, ?, 0.3)",
            (NOW, NOW),
        )
        conn.exec_driver_sql(
            "INSERT INTO chat_messages(session_id, role, content, created_at) VALUES (1, 'user', 'hi', ?)",
            (NOW,),
        )
    engine.dispose()


def test_step_by_step_down_keeps_messages(database_url: str) -> None:
    """Downgrading one revision at a time (batch-mode table rebuilds) loses no child rows."""
    migrate.upgrade(database_url, "head")
    _fill_revision_1_compatible_rows(database_url)
    for target in ("0004", "0003", "0002", "0001"):
        migrate.downgrade(database_url, target)
        engine = make_engine(database_url)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM chat_messages").scalar() == 1
        engine.dispose()


def test_models_match_the_migrated_schema(migrated) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(migrated.database_url)

    def include(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
        return not (type_ == "table" and name and is_unmodelled_table(name))

    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"include_object": include, "compare_type": True, "target_metadata": Base.metadata}
        )
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    assert diff == []


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
