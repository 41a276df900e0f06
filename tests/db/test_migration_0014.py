"""0014: documents.source_url is added without touching rows, and dropped again on downgrade."""

from __future__ import annotations

from functools import partial

from sqlalchemy import inspect

from app.db import migrate
from app.db.engine import make_engine
from tests.backends import execute

NOW = "2026-01-01 00:00:00"


def _rows(url: str, columns: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    with engine.begin() as conn:
        rows = [tuple(r) for r in execute(conn, f"SELECT {columns} FROM documents ORDER BY id").all()]
    engine.dispose()
    return rows


def test_0014_adds_source_url_keeping_documents_and_chunks_and_downgrades(database_url: str) -> None:
    migrate.upgrade(database_url, "0013")
    engine = make_engine(database_url)
    with engine.begin() as conn:
        run = partial(execute, conn)
        run(
            "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'kb', '', ?, ?)", (NOW, NOW)
        )
        for did in (1, 2):
            run("INSERT INTO documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
                "ingested_at, created_at, updated_at) VALUES (?, 1, ?, 'text', 1, 'h', 'ready', 1, ?, ?, ?)",
                (did, f"d{did}", NOW, NOW, NOW))  # fmt: skip
            run("INSERT INTO chunks(id, document_id, project_id, ordinal, text, content_hash, token_count, "
                "char_start, char_end, line_start, line_end, heading_path) "
                "VALUES (?, ?, 1, 0, 'penguins', 'h', 1, 0, 8, 1, 1, '')", (did, did))  # fmt: skip
    engine.dispose()

    migrate.upgrade(database_url, "0014")
    assert _rows(database_url, "id, name, source_url") == [(1, "d1", None), (2, "d2", None)]
    engine = make_engine(database_url)
    with engine.begin() as conn:
        execute(conn, "UPDATE documents SET source_url = 'https://example.com/d2' WHERE id = 2")
    engine.dispose()

    migrate.downgrade(database_url, "0013")
    assert _rows(database_url, "id, name, chunk_count") == [(1, "d1", 1), (2, "d2", 1)]
    engine = make_engine(database_url)
    with engine.begin() as conn:
        columns = [c["name"] for c in inspect(conn).get_columns("documents")]
        assert execute(conn, "SELECT count(*) FROM chunks").scalar_one() == 2
    engine.dispose()
    assert "source_url" not in columns
