"""Revision 0012: sessions get rerank (existing ones: auto) and expansion (off) settings, with CHECK
constraints; a downgrade drops them and keeps every session and its other settings."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import CHECK_FAILED, execute
from tests.db.test_migrations import _fill_revision_1_compatible_rows


def test_existing_sessions_get_the_defaults_and_survive_a_downgrade(database_url: str) -> None:
    migrate.upgrade(database_url, "0006")
    _fill_revision_1_compatible_rows(database_url)  # project 1, session 1, message 1
    migrate.upgrade(database_url, "0011")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        execute(conn, "UPDATE chat_sessions SET answer_mode = 'extractive', top_k = 7")
        before = execute(conn, "SELECT * FROM chat_sessions").all()
    engine.dispose()

    migrate.upgrade(database_url, "0012")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT rerank, expansion FROM chat_sessions").one() == ("auto", "off")
        execute(conn, "UPDATE chat_sessions SET rerank = 'judge', expansion = 'on'")
        for bad in ("UPDATE chat_sessions SET rerank = 'always'", "UPDATE chat_sessions SET expansion = 'yes'"):
            with pytest.raises(IntegrityError, match=CHECK_FAILED), conn.begin_nested():
                execute(conn, bad)
    engine.dispose()

    migrate.downgrade(database_url, "0011")
    engine = make_engine(database_url)
    with engine.connect() as conn:
        after = execute(conn, "SELECT * FROM chat_sessions").all()
    engine.dispose()
    assert after == before
