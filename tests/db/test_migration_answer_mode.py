"""Revision 0007: sessions get an answer mode (existing ones: auto); citations may be 'extracted'."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine

NOW = "2026-01-01 00:00:00"


def _fill(url: str) -> None:
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
            "INSERT INTO chat_messages(id, session_id, role, content, created_at) VALUES (1, 1, 'assistant', 'a', ?)",
            (NOW,),
        )
        conn.exec_driver_sql(
            "INSERT INTO citations(message_id, marker, kind, score, rank, document_name, location, snippet) "
            "VALUES (1, 1, 'attributed', 0.5, 1, 'd.md', '{}', 's')"
        )
    engine.dispose()


def test_existing_sessions_get_auto_and_extracted_citations_survive_a_downgrade(database_url: str) -> None:
    migrate.upgrade(database_url, "0006")
    _fill(database_url)
    migrate.upgrade(database_url, "0007")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT answer_mode FROM chat_sessions").scalar() == "auto"
        conn.exec_driver_sql(
            "INSERT INTO citations(message_id, marker, kind, score, rank, document_name, location, snippet) "
            "VALUES (1, 2, 'extracted', 0.7, 2, 'd.md', '{}', 's')"
        )
        for bad in ("UPDATE chat_sessions SET answer_mode = 'creative'", "UPDATE citations SET kind = 'guessed'"):
            with pytest.raises(IntegrityError, match="CHECK constraint failed"), conn.begin_nested():
                conn.exec_driver_sql(bad)
    engine.dispose()

    migrate.downgrade(database_url, "0006")
    engine = make_engine(database_url)
    with engine.connect() as conn:
        kinds = conn.exec_driver_sql("SELECT marker, kind FROM citations ORDER BY marker").all()
        columns = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(chat_sessions)").all()}
    engine.dispose()
    assert kinds == [(1, "attributed"), (2, "attributed")]
    assert "answer_mode" not in columns
