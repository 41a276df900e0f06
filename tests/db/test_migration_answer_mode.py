"""Revision 0007: sessions get an answer mode (existing ones: auto); citations may be 'extracted'."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import CHECK_FAILED, execute
from tests.db.test_migrations import _fill_revision_1_compatible_rows


def _fill(url: str) -> None:
    _fill_revision_1_compatible_rows(url)  # project 1, session 1, message 1
    engine = make_engine(url)
    with engine.begin() as conn:
        execute(
            conn,
            "INSERT INTO citations(message_id, marker, kind, score, rank, document_name, location, snippet) "
            "VALUES (1, 1, 'attributed', 0.5, 1, 'd.md', '{}', 's')",
        )
    engine.dispose()


def test_existing_sessions_get_auto_and_extracted_citations_survive_a_downgrade(database_url: str) -> None:
    migrate.upgrade(database_url, "0006")
    _fill(database_url)
    migrate.upgrade(database_url, "0007")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT answer_mode FROM chat_sessions").scalar() == "auto"
        execute(
            conn,
            "INSERT INTO citations(message_id, marker, kind, score, rank, document_name, location, snippet) "
            "VALUES (1, 2, 'extracted', 0.7, 2, 'd.md', '{}', 's')",
        )
        for bad in ("UPDATE chat_sessions SET answer_mode = 'creative'", "UPDATE citations SET kind = 'guessed'"):
            with pytest.raises(IntegrityError, match=CHECK_FAILED), conn.begin_nested():
                execute(conn, bad)
    engine.dispose()

    migrate.downgrade(database_url, "0006")
    engine = make_engine(database_url)
    with engine.connect() as conn:
        kinds = execute(conn, "SELECT marker, kind FROM citations ORDER BY marker").all()
        columns = {c["name"] for c in inspect(conn).get_columns("chat_sessions")}
    engine.dispose()
    assert kinds == [(1, "attributed"), (2, "attributed")]
    assert "answer_mode" not in columns
