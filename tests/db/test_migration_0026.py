"""0026: invitations are added beside the people of 0025 (who stay as they were), take one-time
links for a person, and the downgrade drops only them."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

NOW = "2026-01-01 00:00:00"
LATER = "2026-01-08 00:00:00"


def test_0026_adds_invitations_keeping_people_and_downgrades(database_url: str) -> None:
    migrate.upgrade(database_url, "0025")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        execute(conn, "INSERT INTO users(id, email, name, credentials_since, created_at, updated_at) "
                "VALUES (1, 'ada@example.org', 'Ada', ?, ?, ?)", (NOW, NOW, NOW))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "0026")
    engine = make_engine(database_url)
    insert = "INSERT INTO invitations(token_hash, user_id, created_at, expires_at) VALUES (?, 1, ?, ?)"
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(insert, ("ab" * 32, NOW, LATER))
        assert run("SELECT user_id, used_at FROM invitations").all() == [(1, None)]
        assert run("SELECT email FROM users").scalar_one() == "ada@example.org"
    with pytest.raises(IntegrityError), engine.begin() as conn:
        execute(conn, insert, ("ab" * 32, NOW, LATER))  # a token names one link
    engine.dispose()

    migrate.downgrade(database_url, "0025")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        tables = set(inspect(conn).get_table_names())
        kept = execute(conn, "SELECT email FROM users").scalar_one()
    engine.dispose()
    assert "invitations" not in tables and kept == "ada@example.org"
