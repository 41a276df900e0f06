"""CLI commands hold a lease as servers do (issue 18): a `ragchat serve` starting on the database
while `ragchat ask` streams and `ragchat ingest` embeds leaves their rows alone (at start-up and in
its recoveries every 0.5 s); the answer completes; the commands killed have their answer failed as
interrupted and their files failed by the server, retryable. Real processes, on both backends."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select, text

from app.db import migrate
from app.db.database import Database
from app.db.enums import ItemState, MessageStatus, Role
from app.db.models import ChatMessage, ChatSession, IngestionItem, Server
from app.services.chat import store as chat_store
from app.services.ingestion import jobs
from app.settings import Settings
from tests.reliability.helpers import SLOW, scripted_server
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

KEPT, KILLED = "How do penguins keep warm?", "And in a blizzard?"
FILES = 200  # one chunk each, 200 ms to embed: the ingestion runs for ~40 s (it is killed long before)


def _command(workdir: Path, env: dict[str, str], name: str, *args: str) -> subprocess.Popen[bytes]:
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "app", *args], cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT
        )


def _answers(store: Database) -> dict[str, tuple[MessageStatus, str | None]]:
    """Each answer's status and error, by its question (a new session's title)."""
    with store.read() as db:
        rows = db.execute(
            select(ChatSession.title, ChatMessage.status, ChatMessage.error)
            .join(ChatMessage, ChatMessage.session_id == ChatSession.id)
            .where(ChatMessage.role == Role.ASSISTANT)
        )
        return {title: (status, error) for title, status, error in rows}


def _items(store: Database, project: str) -> list[tuple[ItemState, str | None]]:
    with store.read() as db:
        rows = db.scalars(
            select(IngestionItem).where(IngestionItem.name.like(f"{project}-%")).order_by(IngestionItem.id)
        )
        return [(row.state, row.error) for row in rows]


def test_a_server_leaves_live_commands_alone_and_recovers_killed_ones(tmp_path: Path, migrated: Settings) -> None:
    url = migrated.database_url
    store = Database.from_url(url)
    long_answer = " ".join(SLOW.split()[:700])  # ~21 s at 30 ms a word
    env = scripted_server(tmp_path, "cli", url, [long_answer], delay_ms=30).env
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "penguins.md").write_text("# Penguins\n\nEmperor penguins huddle in winter.\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(FILES):
        (corpus / f"slow-{i:02d}.md").write_text(f"# Note {i}\n\nPenguin note number {i} about huddles.\n")
    setup = subprocess.run(
        [sys.executable, "-m", "app", "ingest", str(tmp_path / "kb"), "-p", "kb"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr

    ask = ["ask", "--project", "kb", "--threshold", "0", "--mode", "generative"]
    kept = _command(tmp_path, env, "kept", *ask, KEPT)
    killed = _command(tmp_path, env, "killed", *ask, KILLED)
    slow_env = {**env, "RAGCHAT_EMBEDDER__MODEL": "hash-words-200ms"}
    ingest = _command(tmp_path, slow_env, "ingest", "ingest", str(corpus), "-p", "notes")
    server = scripted_server(tmp_path, "server", url, ["unused"], delay_ms=0)
    try:
        streaming = {KEPT: (MessageStatus.STREAMING, None), KILLED: (MessageStatus.STREAMING, None)}
        wait_until(lambda: _answers(store) == streaming, 60, "two answers to stream")
        wait_until(lambda: any(s in jobs.RUNNING for s, _ in _items(store, "slow")), 60, "a file being embedded")

        with server:
            time.sleep(1.5)  # its start-up recovery, then three periodic ones
            ended = [
                name
                for name, proc in (("kept", kept), ("killed", killed), ("ingest", ingest))
                if proc.poll() is not None
            ]
            assert not ended, f"{ended} ended before the server had looked: too fast a test"
            assert _answers(store) == streaming
            assert all(error is None for _, error in _items(store, "slow"))
            with store.read() as db:
                assert len(db.scalars(select(Server.id)).all()) == 4  # three commands and the server

            killed.kill()
            ingest.kill()
            wait_until(lambda: _answers(store)[KILLED][0] == MessageStatus.FAILED, 20, "the killed answer to fail")
            assert _answers(store)[KILLED] == (MessageStatus.FAILED, chat_store.INTERRUPTED)
            wait_until(
                lambda: not any(s in (ItemState.QUEUED, *jobs.RUNNING) for s, _ in _items(store, "slow")),
                20,
                "the killed ingestion's files to end",
            )
            items = _items(store, "slow")
            assert (ItemState.FAILED, jobs.INTERRUPTED) in items and len(items) == FILES
            assert {s for s, _ in items} <= {ItemState.READY, ItemState.FAILED}

            assert kept.wait(120) == 0, (tmp_path / "kept.log").read_text()
            assert _answers(store)[KEPT] == (MessageStatus.COMPLETE, None)
            log = server.log_text()
        assert "1 answers were interrupted by a server or command that stopped" in log, log
        assert "files a command was ingesting when it stopped are marked failed" in log, log
    finally:
        for proc in (kept, killed, ingest):
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        store.dispose()


def test_a_command_refuses_a_database_at_another_migration_and_writes_nothing(
    tmp_path: Path, database_url: str
) -> None:
    migrate.upgrade(database_url, "0020")  # before leases: no servers table
    env = scripted_server(tmp_path, "cli", database_url, ["unused"], delay_ms=0).env
    (tmp_path / "note.md").write_text("# Note\n\nPenguins.\n")
    for args in (["ask", "--project", "kb", "Penguins?"], ["ingest", str(tmp_path / "note.md"), "-p", "kb"]):
        done = subprocess.run(
            [sys.executable, "-m", "app", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stdout + done.stderr
        said = " ".join(done.stderr.split())  # the console wraps long lines
        assert "is at revision 0020, this ragchat expects" in said and "run `ragchat migrate`" in said
        assert "Traceback" not in done.stderr
    store = Database.from_url(database_url)
    try:
        with store.read() as db:
            assert db.execute(text("SELECT count(*) FROM projects")).scalar_one() == 0
    finally:
        store.dispose()
