"""0024: tool_calls.request_fingerprint is added (NULL for the calls already stored, which keep every
column), holds a 64-character hash, and the downgrade drops only it."""

from __future__ import annotations

from functools import partial

from sqlalchemy import inspect

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

NOW = "2026-01-01 00:00:00"
HASH = "ab" * 32


def test_0024_adds_the_request_fingerprint_keeping_calls_and_downgrades(database_url: str) -> None:
    migrate.upgrade(database_url, "0023")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)", (NOW, NOW)
        )
        run("INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, threshold, "
            "created_at, updated_at) VALUES (1, 1, 't', '', 'openai', 'gpt-4o', 0.3, ?, ?)", (NOW, NOW))  # fmt: skip
        run("INSERT INTO chat_messages(id, session_id, role, content, status, created_at) "
            "VALUES (2, 1, 'assistant', 'x', 'complete', ?)", (NOW,))  # fmt: skip
        run("INSERT INTO tool_calls(message_id, session_id, position, call_id, tool_name, arguments, status, "
            "result_chars, preview, created_at) VALUES (2, 1, 0, 'c', 'ping', '{}', 'preview', 0, 'POST x', ?)", (NOW,))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "0024")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT status, preview, request_fingerprint FROM tool_calls").all() == [
            ("preview", "POST x", None)  # a preview stored before: no fingerprint, so approval refuses it
        ]
        run("INSERT INTO tool_calls(message_id, session_id, position, call_id, tool_name, arguments, status, "
            "result_chars, request_fingerprint, created_at) VALUES (2, 1, 1, 'd', 'ping', '{}', 'preview', 0, ?, ?)",
            (HASH, NOW))  # fmt: skip
        assert run("SELECT request_fingerprint FROM tool_calls WHERE position = 1").scalar_one() == HASH
    engine.dispose()

    migrate.downgrade(database_url, "0023")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("tool_calls")}
        kept = execute(conn, "SELECT position, status, preview FROM tool_calls ORDER BY position").all()
    engine.dispose()
    assert "request_fingerprint" not in columns and "preview" in columns
    assert kept == [(0, "preview", "POST x"), (1, "preview", None)]
