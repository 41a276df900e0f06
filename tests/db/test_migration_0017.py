"""0017: the tool_calls table is added without touching existing rows, refuses an unknown status,
nulls a deleted tool's id (keeping the call and its name), goes with its answer, and the downgrade
drops only it."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

NOW = "2026-01-01 00:00:00"
CALL = (
    "INSERT INTO tool_calls(message_id, session_id, position, call_id, tool_id, tool_name, arguments, status, "
    "result_chars, created_at) VALUES (?, 1, ?, 'c', ?, 'ping', '{}', ?, 0, ?)"
)


def test_0017_adds_tool_calls_keeping_messages_and_downgrades(database_url: str) -> None:
    migrate.upgrade(database_url, "0016")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)", (NOW, NOW)
        )
        run("INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, threshold, "
            "created_at, updated_at) VALUES (1, 1, 't', '', 'openai', 'gpt-4o', 0.3, ?, ?)", (NOW, NOW))  # fmt: skip
        for mid, role in ((1, "user"), (2, "assistant"), (3, "assistant")):
            run("INSERT INTO chat_messages(id, session_id, role, content, status, created_at) "
                "VALUES (?, 1, ?, 'x', 'complete', ?)", (mid, role, NOW))  # fmt: skip
        run("INSERT INTO tools(id, name, description, input_schema, examples, tool_group, core, kind, http_method, "
            "url_template, header_secrets, timeout_seconds, side_effects, created_at, updated_at) VALUES (50, 'ping', "
            "'d', '{}', '[]', 'ops', false, 'http', 'GET', 'https://example.com/p', '{}', 5, true, ?, ?)", (NOW, NOW))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "0017")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(CALL, (2, 0, 50, "preview", NOW))
        run(CALL, (3, 0, None, "executed", NOW))
        run("DELETE FROM tools WHERE id = 50")
        assert run("SELECT tool_id, tool_name, status FROM tool_calls ORDER BY id").all() == [
            (None, "ping", "preview"),
            (None, "ping", "executed"),
        ]
        run("DELETE FROM chat_messages WHERE id = 3")  # an answer's calls go with it
        assert run("SELECT count(*) FROM tool_calls").scalar_one() == 1
    with pytest.raises(IntegrityError), engine.begin() as conn:
        execute(conn, CALL, (2, 1, None, "done", NOW))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        execute(conn, CALL, (2, 0, None, "failed", NOW))  # one call per position of an answer
    engine.dispose()

    migrate.downgrade(database_url, "0016")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        tables = set(inspect(conn).get_table_names())
        messages = execute(conn, "SELECT id, role FROM chat_messages ORDER BY id").all()
    engine.dispose()
    assert "tool_calls" not in tables and "tools" in tables
    assert messages == [(1, "user"), (2, "assistant")]
