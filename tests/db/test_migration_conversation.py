"""Revision 0015: sessions get a search quality and a rewrite mode; up and down keep every row."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import CHECK_FAILED, execute
from tests.db.test_migrations import _fill_revision_1_compatible_rows


def _sessions(url: str) -> list[tuple]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = execute(
            conn, "SELECT id, project_id, title, top_k, threshold, answer_mode FROM chat_sessions ORDER BY id"
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_existing_sessions_get_balanced_and_auto_and_keep_their_rows_both_ways(database_url: str) -> None:
    migrate.upgrade(database_url, "0014")
    _fill_revision_1_compatible_rows(database_url)  # project 1, session 1, message 1
    before = _sessions(database_url)
    migrate.upgrade(database_url, "0015")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT quality, rewrite FROM chat_sessions").one() == ("balanced", "auto")
        execute(conn, "UPDATE chat_sessions SET quality = 'thorough', rewrite = 'off'")
        for bad in ("UPDATE chat_sessions SET quality = 'perfect'", "UPDATE chat_sessions SET rewrite = 'maybe'"):
            with pytest.raises(IntegrityError, match=CHECK_FAILED), conn.begin_nested():
                execute(conn, bad)
        # AUTOINCREMENT survived the rebuild (0008): a deleted session's id is not handed out again.
        execute(
            conn,
            "INSERT INTO chat_sessions(project_id, title, system_prompt, provider, model, threshold, created_at, "
            "updated_at) VALUES (1, 'gone', '', 'local', 'm', 0.3, '2026-01-01', '2026-01-01')",
        )
        gone = execute(conn, "SELECT max(id) FROM chat_sessions").scalar()
        execute(conn, f"DELETE FROM chat_sessions WHERE id = {gone}")
    engine.dispose()
    assert _sessions(database_url) == before

    migrate.downgrade(database_url, "0014")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("chat_sessions")}
        execute(
            conn,
            "INSERT INTO chat_sessions(project_id, title, system_prompt, provider, model, threshold, created_at, "
            "updated_at) VALUES (1, 'new', '', 'local', 'm', 0.3, '2026-01-01', '2026-01-01')",
        )
        newest = execute(conn, "SELECT max(id) FROM chat_sessions").scalar()
    engine.dispose()
    assert not {"quality", "rewrite"} & columns
    assert newest == gone + 1
    assert _sessions(database_url)[: len(before)] == before
    migrate.upgrade(database_url)  # and up again
    assert _sessions(database_url)[: len(before)] == before
