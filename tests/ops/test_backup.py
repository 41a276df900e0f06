"""`ragchat backup` / `restore` (app/ops/backup.py): a backup taken while a server writes restores
into a fresh directory as a sound database that answers a question as the original did."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import pytest

from app.container import Container
from app.errors import SettingsError, StorageError
from app.ops import backup as backups
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION, SEND
from tests.waiting import wait_until

PENGUINS = "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter."
QUESTION = "How do penguins survive the winter?"
SESSION = {"provider": "fake", "model": "scripted", "threshold": 0.1, "answerMode": "GENERATIVE"}
WRITES = 40  # the writer's documents: bounded, about ledgers (nothing the question finds)


def _cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCHAT_")} | {"RAGCHAT_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def _ask(api: Api, model: FakeChatModel, pid: str) -> list[tuple[Any, ...]]:
    sid = api.run(CREATE_SESSION, p=pid, input=SESSION)["createChatSession"]["id"]
    model.enqueue("Emperor penguins huddle together [1].")
    answer = api.run(SEND, s=sid, c=QUESTION)["sendMessage"]
    assert answer["status"] == "COMPLETE", answer
    return [(c["marker"], c["kind"], c["documentName"], c["snippet"]) for c in answer["citations"]]


@pytest.mark.sqlite_only(reason="SQLite's online backup API; PostgreSQL's is pg_dump (docs/OPERATIONS.md)")
def test_a_backup_taken_while_a_server_writes_restores_and_answers_alike(tmp_path: Path, migrated: Settings) -> None:
    model = FakeChatModel()
    original = Container.build(migrated, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    written: list[int] = []
    try:
        with live_api(original) as api:
            pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
            assert api.run(ADD_DOC, p=pid, name="penguins.md", text=PENGUINS)["addDocument"]["added"] == 1
            before = _ask(api, model, pid)
            assert before and before[0][2] == "penguins.md"

            def writer() -> None:
                deadline = time.monotonic() + 60
                for n in range(WRITES):
                    if time.monotonic() > deadline:
                        return
                    text = f"# Ledger {n}\n\nInvoice {n} was reconciled against receipt {n} in the quarterly audit."
                    api.run(ADD_DOC, p=pid, name=f"ledger-{n}.md", text=text)
                    written.append(n)

            thread = threading.Thread(target=writer, name="bounded writer")
            thread.start()
            try:
                wait_until(lambda: len(written) >= 3, 30, "the writer's first documents")
                target = tmp_path / "backups" / "ragchat.db"
                done = _cli(tmp_path, migrated.database_url, "backup", str(target))
                during = len(written)
            finally:
                thread.join(90)
            assert done.returncode == 0, done.stderr
            assert during >= 3 and "checked" in done.stdout
            # A running server's database is not restored over.
            with pytest.raises(StorageError, match="a server is running"):
                backups.restore(target, migrated.database_url, replace=True)
    finally:
        original.close()

    assert _cli(tmp_path, migrated.database_url, "backup", "--check", str(target)).returncode == 0
    fresh = tmp_path / "restored" / "ragchat.db"
    restored_url = f"sqlite:///{fresh}"
    done = _cli(tmp_path, restored_url, "restore", str(target))
    assert done.returncode == 0, done.stderr
    with pytest.raises(SettingsError, match="--replace"):
        backups.restore(target, restored_url)
    conn = sqlite3.connect(str(fresh))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        ledgers = conn.execute("SELECT count(*) FROM documents WHERE name LIKE 'ledger-%'").fetchone()[0]
    finally:
        conn.close()
    assert 3 <= ledgers <= WRITES  # what had been committed when the backup's snapshot began

    again = FakeChatModel()
    restored = Container.build(
        migrated.model_copy(update={"database_url": restored_url}),
        embedder=FakeEmbedder(),
        chat_models=FakeModels(again),
    )
    try:
        with live_api(restored) as api:
            assert _ask(api, again, pid) == before
    finally:
        restored.close()


@pytest.mark.sqlite_only(reason="checks files, not a database backend")
def test_a_check_tells_a_damaged_backup(tmp_path: Path) -> None:
    junk = tmp_path / "not-a-backup"
    junk.write_bytes(b"hello")
    assert not backups.check(junk).ok
    assert _cli(tmp_path, f"sqlite:///{tmp_path / 'x.db'}", "backup", "--check", str(junk)).returncode == 1
    assert "there is no file" in backups.check(tmp_path / "missing").detail


# pg_dump and pg_restore of the tests' PostgreSQL (found without importing pgserver, which starts nothing).
PG_BIN = Path(str(importlib.util.find_spec("pgserver").origin)).parent / "pginstall" / "bin"  # type: ignore[union-attr]


def test_a_backup_restored_with_replace_brings_back_what_was_deleted_since(
    migrated: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On each backend: SQLite's backup API, or pg_dump and pg_restore for PostgreSQL."""
    from app.db.database import Database
    from app.rag.ingest.pipeline import Ingestor, Source
    from app.rag.search.retrieval_mode import RetrievalMode
    from app.services import documents, projects, search

    monkeypatch.setenv("PATH", f"{PG_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    embedder = FakeEmbedder()
    store = Database.from_url(migrated.database_url)
    try:
        kb = projects.create(store, "kb").id
        Ingestor(store, embedder, migrated.ingest).ingest(kb, [Source.from_bytes("penguins.md", PENGUINS.encode())])
        written = backups.backup(migrated.database_url, tmp_path / "ragchat.backup")
        assert backups.check(written).ok
        projects.delete(store, kb)
        assert projects.find(store, "kb") is None
    finally:
        store.dispose()
    backups.restore(written, migrated.database_url, replace=True)
    container = Container.build(migrated, embedder=embedder)
    try:
        found = projects.find(container.store, "kb")
        assert found is not None and [d.name for d in documents.list_for(container.store, found.id)] == ["penguins.md"]
        hits = search.search(
            container.store,
            embedder,
            container.settings,
            found.id,
            QUESTION,
            top_k=1,
            threshold=0.0,
            mode=RetrievalMode.VECTOR,
        )
        assert hits.kept and "huddle" in hits.kept[0].text  # the vectors came back too
    finally:
        container.close()
