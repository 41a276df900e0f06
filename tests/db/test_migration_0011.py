"""Migration 0011 (tools): existing sessions get no tool groups, the built-in tools arrive, the
CHECK constraints hold, and a downgrade leaves everything else as it was."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

NOW = "2026-01-01 00:00:00"


def test_0011_adds_tools_without_touching_sessions_and_downgrades_cleanly(database_url: str) -> None:
    migrate.upgrade(database_url, "0010")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)", (NOW, NOW)
        )
        run(
            "INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, threshold, "
            "created_at, updated_at) VALUES (1, 1, 't', '', 'openai', 'gpt-4o', 0.3, ?, ?)",
            (NOW, NOW),
        )
    migrate.upgrade(database_url, "head")
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT count(*) FROM chat_session_tool_groups").scalar() == 0  # tools are opt-in
        builtins = run("SELECT name, kind, tool_group, core, http_method FROM tools ORDER BY name").all()
        assert builtins == [
            ("list_documents", "builtin", "knowledge_base", 0, None),
            ("read_document", "builtin", "knowledge_base", 0, None),
            ("search_knowledge_base", "builtin", "knowledge_base", 1, None),
        ]
        insert = (
            "INSERT INTO tools(name, description, input_schema, examples, tool_group, core, kind, http_method, "
            "url_template, header_secrets, timeout_seconds, side_effects, created_at, updated_at) "
            "VALUES (?, 'd', '{}', '[]', 'g', false, ?, ?, ?, '{}', ?, false, ?, ?)"
        )
        for bad in [
            ("a", "script", None, None, 5.0),  # unknown kind
            ("b", "http", None, "https://x", 5.0),  # an HTTP tool without a method
            ("c", "http", "TRACE", "https://x", 5.0),  # a method not allowed
            ("d", "builtin", "GET", None, 5.0),  # a built-in one with HTTP fields
            ("e", "http", "GET", "https://x", 0.0),  # no timeout
        ]:
            with (
                pytest.raises(
                    IntegrityError, match=r"CHECK constraint failed: ck_tools_|violates check constraint \"ck_tools_"
                ),
                conn.begin_nested(),  # PostgreSQL: a failed statement aborts the transaction, not the savepoint's
            ):
                run(insert, (*bad, NOW, NOW))
        run(insert, ("ok", "http", "GET", "https://x", 5.0, NOW, NOW))
        run("INSERT INTO chat_session_tool_groups(session_id, tool_group) VALUES (1, 'g')")
        run("DELETE FROM chat_sessions WHERE id = 1")  # a session's groups go with it
        assert run("SELECT count(*) FROM chat_session_tool_groups").scalar() == 0
    migrate.downgrade(database_url, "0010")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        assert not tables & {"tools", "tool_vectors", "chat_session_tool_groups"}
        assert execute(conn, "SELECT name FROM projects").scalars().all() == ["kb"]
    engine.dispose()
