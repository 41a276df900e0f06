"""SIGKILL a real `ragchat serve` in the middle of a 200-file ingestion job, start it again: the job
resumes and completes, no document is duplicated or half-visible, and the database is intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from app.db.engine import make_engine
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT, JOB, UPLOAD
from tests.live import free_port
from tests.providers import REPOSITORY
from tests.waiting import wait_until

FILES = 200
WORDS = [f"word{i}" for i in range(40)]


def _env(database: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")])),
        "RAGCHAT_DATABASE_URL": database,
        "RAGCHAT_TEST_PROVIDERS": "tests.providers",
        "RAGCHAT_EMBEDDER__PROVIDER": "fake",
        "RAGCHAT_EMBEDDER__MODEL": "hash-words-20ms",  # a slow embedder: the job is under way for a while
    }


@contextmanager
def server(database: str) -> Iterator[tuple[Api, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=_env(database),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = Api(f"http://127.0.0.1:{port}")

    def up() -> bool:
        assert proc.poll() is None, "the server exited"
        try:
            return api.http.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(up, 60, "`ragchat serve` to answer", interval=0.2)
        yield api, proc
    finally:
        api.http.close()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(30)


def _text(i: int) -> bytes:
    body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(700))
    return f"# File {i}\n\n{body}\n".encode()


def _job(api: Api, job_id: str) -> dict[str, Any]:
    return dict(api.run(JOB, id=job_id)["ingestionJob"])


def _check_store(database: str) -> dict[str, int]:
    """Integrity, and every visible document complete: its chunks, and a vector for each."""
    engine = make_engine(database)  # on SQLite with sqlite-vec loaded, to count the vectors
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":  # PostgreSQL checks its foreign keys as it writes
            assert conn.exec_driver_sql("PRAGMA integrity_check").all() == [("ok",)]
            assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []

        def db_execute(sql: str) -> Any:
            return conn.execute(text(sql))

        incomplete = db_execute(
            "SELECT d.name, d.chunk_count, count(c.id) FROM documents d LEFT JOIN chunks c ON c.document_id = d.id "
            "GROUP BY d.id HAVING d.chunk_count != count(c.id) OR count(c.id) = 0"
        ).all()
        assert incomplete == []
        doubled = db_execute(
            "SELECT document_id, ordinal FROM chunks GROUP BY document_id, ordinal HAVING count(*) > 1"
        ).all()
        assert doubled == []
        (space,) = db_execute("SELECT id FROM embedding_spaces").first() or (None,)
        chunks = db_execute("SELECT count(*) FROM chunks").first()[0]
        vectors = db_execute(f"SELECT count(*) FROM vec_space_{space}").first()[0] if space else 0
        assert vectors == chunks
        documents = db_execute("SELECT count(*), count(DISTINCT name) FROM documents").first()
        assert documents[0] == documents[1]
        ready = db_execute("SELECT count(*) FROM ingestion_items WHERE state = 'ready'").first()[0]
    engine.dispose()
    return {"documents": documents[0], "chunks": chunks, "ready_items": ready}


def test_sigkill_during_a_200_file_job_then_restart_completes_it(tmp_path: Path, database_url: str) -> None:
    database = database_url
    subprocess.run([sys.executable, "-m", "app", "migrate"], env=_env(database), check=True, capture_output=True)
    files = {f"variables.files.{i}": (f"doc{i:03}.md", _text(i)) for i in range(FILES)}

    with server(database) as (api, proc):
        pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
        job = api.upload(UPLOAD, files, {"p": pid, "wait": False})["data"]["uploadDocuments"]
        assert job["__typename"] == "IngestionJob" and job["progress"]["total"] == FILES
        wait_until(lambda: _job(api, job["id"])["progress"]["ready"] >= 40, 120, "40 files to be ready")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    at_kill = _check_store(database)
    assert 40 <= at_kill["documents"] < FILES  # killed mid-job; what is visible is complete
    assert at_kill["documents"] == at_kill["ready_items"]  # a document commits with its item's end

    with server(database) as (api, _):
        done: dict[str, Any] = {}

        def finished() -> bool:
            done.update(_job(api, job["id"]))
            return bool(done["finished"])

        wait_until(finished, 180, "the resumed job to finish")
    assert done["progress"]["ready"] == FILES and done["progress"]["failed"] == 0
    assert {item["outcome"] for item in done["items"]} == {"ADDED"}
    after = _check_store(database)
    assert after["documents"] == FILES and after["ready_items"] == FILES
    assert after["chunks"] == sum(item["document"]["chunkCount"] for item in done["items"])
    spool = tmp_path / "uploads"
    assert not spool.exists() or [p for p in spool.rglob("*") if p.is_file()] == []
