"""0030 on a database with documents and chat sessions: both come through as they were (no tags, no
modification date, no filter), tags can be added and go with their document, and a downgrade
drops the new columns and table and keeps the rows."""

from __future__ import annotations

from functools import partial

import pytest

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

pytestmark = pytest.mark.postgres

NOW = "2026-01-01 00:00:00"


def test_0030_keeps_documents_and_sessions_and_adds_tags_that_go_with_their_document(database_url: str) -> None:
    migrate.upgrade(database_url, "0029")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run("INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)",
            (NOW, NOW))  # fmt: skip
        for did in (1, 2):
            run("INSERT INTO documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
                "ingested_at, created_at, updated_at) VALUES (?, 1, ?, 'text', 1, 'h', 'ready', 0, ?, ?, ?)",
                (did, f"runbooks/d{did}.txt", NOW, NOW, NOW))  # fmt: skip
        run("INSERT INTO chat_sessions(id, project_id, title, system_prompt, provider, model, threshold, "
            "created_at, updated_at) VALUES (1, 1, 't', '', 'openai', 'gpt-4o', 0.3, ?, ?)", (NOW, NOW))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "0030")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        assert run("SELECT id, name, modified_at FROM documents ORDER BY id").all() == [
            (1, "runbooks/d1.txt", None),
            (2, "runbooks/d2.txt", None),
        ]
        assert run("SELECT id, document_filter FROM chat_sessions").all() == [(1, None)]
        run("INSERT INTO document_tags(document_id, tag) VALUES (1, 'ops'), (1, 'billing'), (2, 'ops')")
        run('UPDATE chat_sessions SET document_filter = \'{"tags_any": ["ops"]}\' WHERE id = 1')
    engine.dispose()

    engine = make_engine(database_url)  # foreign keys on, as the server runs
    with engine.begin() as conn:
        execute(conn, "DELETE FROM documents WHERE id = 1")
        tags = execute(conn, "SELECT document_id, tag FROM document_tags ORDER BY document_id, tag").all()
    engine.dispose()
    assert tags == [(2, "ops")]

    migrate.downgrade(database_url, "0029")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        assert execute(conn, "SELECT id, name FROM documents").all() == [(2, "runbooks/d2.txt")]
        assert execute(conn, "SELECT id, title FROM chat_sessions").all() == [(1, "t")]
    engine.dispose()
