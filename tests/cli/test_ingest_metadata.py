"""`ragchat ingest --tag` and file dates: each file's document keeps its folder path, the command's
tags and the file's mtime, so a filter can select them; a tag too long is refused before any work."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from app.db.engine import make_engine
from tests.cli.test_ingest_intake import _run

JAN = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def test_tags_and_mtimes_reach_the_documents(tmp_path: Path, database_url: str) -> None:
    (tmp_path / "runbooks").mkdir()
    (tmp_path / "runbooks" / "billing.md").write_text("# Billing\n\nRestart the billing service.\n")
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing to restart.\n")
    os.utime(tmp_path / "runbooks" / "billing.md", (JAN.timestamp(), JAN.timestamp()))
    done = _run(database_url, str(tmp_path), "--tag", "ops", "--tag", "2026")
    assert done.returncode == 0, done.stderr

    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT d.name, d.modified_at, t.tag FROM documents d JOIN document_tags t ON t.document_id = d.id "
                "ORDER BY d.name, t.tag"
            )
        ).all()
    engine.dispose()
    assert [(name, tag) for name, _, tag in rows] == [
        ("notes.md", "2026"),
        ("notes.md", "ops"),
        ("runbooks/billing.md", "2026"),
        ("runbooks/billing.md", "ops"),
    ]
    billing = next(modified for name, modified, _ in rows if name == "runbooks/billing.md")
    stamp = billing if isinstance(billing, datetime) else datetime.fromisoformat(str(billing))
    assert stamp.replace(tzinfo=UTC) == JAN.replace(tzinfo=None).replace(tzinfo=UTC)


def test_a_tag_too_long_is_refused_before_anything_is_ingested(tmp_path: Path, database_url: str) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    done = _run(database_url, str(tmp_path), "--tag", "x" * 65)
    assert done.returncode != 0
    assert "at most 64 characters" in done.stderr
