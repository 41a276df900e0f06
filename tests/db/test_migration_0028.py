"""0028 on a database with tools: every tool comes through as the server's (no knowledge base), with
its vector and its id (the table is rebuilt on SQLite: nothing cascades, no id is reused), and a
knowledge base's tool goes with its knowledge base."""

from __future__ import annotations

from functools import partial

import pytest

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

pytestmark = pytest.mark.postgres

NOW = "2026-01-01 00:00:00"


def test_0028_makes_every_existing_tool_the_servers_and_keeps_its_vector_and_id(database_url: str) -> None:
    migrate.upgrade(database_url, "0027")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run("INSERT INTO tools(id, name, description, input_schema, examples, tool_group, core, kind, http_method, "
            "url_template, header_secrets, timeout_seconds, side_effects, created_at, updated_at) VALUES "
            "(50, 'crm_lookup', 'Looks a customer up.', '{\"type\": \"object\"}', '[]', 'crm', false, 'http', 'GET', "
            "'https://crm.example.com/c/{q}', '{}', 10, false, ?, ?)", (NOW, NOW))  # fmt: skip
        run("INSERT INTO tool_vectors(tool_id, space, text_hash, vector) VALUES (50, 'fake', 'h', ?)", (b"\0" * 8,))
        run("INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (7, 'kb', '', ?, ?)",
            (NOW, NOW))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "head")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT id, name, project_id FROM tools WHERE tool_group = 'crm'").all() == [
            (50, "crm_lookup", None)
        ]
        assert run("SELECT count(*) FROM tool_vectors WHERE tool_id = 50").scalar_one() == 1
        run("INSERT INTO tools(name, description, input_schema, examples, tool_group, core, kind, http_method, "
            "url_template, header_secrets, timeout_seconds, side_effects, created_at, updated_at, project_id) VALUES "
            "('kb_lookup', 'Looks up.', '{}', '[]', 'crm', false, 'http', 'GET', 'https://crm.example.com/', '{}', "
            "10, false, ?, ?, 7)", (NOW, NOW))  # fmt: skip
        new_id = run("SELECT id FROM tools WHERE name = 'kb_lookup'").scalar_one()
        if conn.dialect.name == "sqlite":  # the rebuilt table kept its AUTOINCREMENT counter (PostgreSQL's
            assert new_id > 50  # sequence never saw the explicit id the test wrote, rebuild or not)
    engine.dispose()

    engine = make_engine(database_url)  # foreign keys on, as the server runs
    with engine.begin() as conn:
        execute(conn, "DELETE FROM projects WHERE id = 7")
        names = execute(conn, "SELECT name FROM tools WHERE tool_group = 'crm'").scalars().all()
    engine.dispose()
    assert names == ["crm_lookup"]

    migrate.downgrade(database_url, "0027")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT id, name FROM tools WHERE tool_group = 'crm'").all() == [(50, "crm_lookup")]
    engine.dispose()
