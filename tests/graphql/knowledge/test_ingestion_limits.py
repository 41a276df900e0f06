"""Ingestion's queue limits hold against a client that works around them (through the live GraphQL
API): per knowledge base and for the whole server, on upload and on retry, with failed and cancelled
files counted in the spool until their retention time removes them; and two databases whose files
share a folder keep their spools apart."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from app.container import Container
from app.db import migrate
from app.db.models import IngestionItem
from app.services.ingestion import jobs
from app.services.ingestion.jobs import spool_dir
from app.settings import Settings
from tests.fakes import FakeEmbedder
from tests.graphql.client import Api, live_api
from tests.graphql.knowledge.test_ingestion_jobs import SlowEmbedder
from tests.graphql.ops import CANCEL_JOB, CREATE_PROJECT, JOB, RETRY_JOB, UPLOAD
from tests.waiting import wait_until

RETRY = RETRY_JOB.replace(
    "... on Error { message }", "... on Error { message } ... on LimitExceededError { what limit }"
)


@pytest.fixture
def held(migrated: Settings) -> Iterator[tuple[Api, Container, SlowEmbedder]]:
    """A live server whose worker is held at its first file's embedding: what is queued stays queued."""
    embedder = SlowEmbedder()
    container = Container.build(migrated, embedder=embedder)
    try:
        with live_api(container) as api:
            try:
                yield api, container, embedder
            finally:
                embedder.gate.set()  # before the server stops: its worker waits for the file it holds
    finally:
        embedder.gate.set()
        container.close()


def _project(api: Api, name: str) -> str:
    return str(api.run(CREATE_PROJECT, name=name)["createProject"]["id"])


def _upload(api: Api, pid: str, count: int, size: int = 8, tag: str = "f") -> dict[str, Any]:
    parts = {f"variables.files.{i}": (f"{tag}{i}.txt", b"w" * size) for i in range(count)}
    body = api.upload(UPLOAD, parts, {"p": pid, "wait": False})
    assert "errors" not in body, body
    return dict(body["data"]["uploadDocuments"])


def _unfinished(api: Api, job_ids: list[str]) -> int:
    states = [i["state"] for j in job_ids for i in api.run(JOB, id=j)["ingestionJob"]["items"]]
    return sum(state in {"QUEUED", "PARSING", "EMBEDDING"} for state in states)


def test_upload_cancel_reupload_retry_cannot_pass_the_queue_limit(held: tuple[Api, Container, SlowEmbedder]) -> None:
    api, container, embedder = held
    container.settings.jobs.max_queued_files = 5
    pid = _project(api, "kb")
    first = _upload(api, pid, 5, tag="a")
    assert first["__typename"] == "IngestionJob"
    wait_until(lambda: embedder.started >= 1, 20, "the worker to take the first file")
    assert api.run(CANCEL_JOB, id=first["id"], items=None)["cancelIngestionJob"]["__typename"] == "IngestionJob"
    second = _upload(api, pid, 5, tag="b")  # the queue is empty again: allowed
    assert second["__typename"] == "IngestionJob"
    refused = api.run(RETRY, id=first["id"], items=None)["retryIngestionJob"]
    assert refused["__typename"] == "LimitExceededError" and (refused["what"], refused["limit"]) == ("files", 5)
    assert "the knowledge base's ingestion queue holds 5 files" in refused["message"]
    assert _unfinished(api, [first["id"], second["id"]]) == 5  # nothing was queued again
    # One file fits.
    one = api.run(JOB, id=first["id"])["ingestionJob"]["items"][1]["id"]
    api.run(CANCEL_JOB, id=second["id"], items=[api.run(JOB, id=second["id"])["ingestionJob"]["items"][4]["id"]])
    assert api.run(RETRY, id=first["id"], items=[one])["retryIngestionJob"]["__typename"] == "IngestionJob"
    assert _unfinished(api, [first["id"], second["id"]]) == 5


def test_the_server_wide_queue_limit_holds_across_knowledge_bases(held: tuple[Api, Container, SlowEmbedder]) -> None:
    api, container, _ = held
    container.settings.jobs.max_queued_files = 5
    container.settings.jobs.server_max_queued_files = 6
    assert _upload(api, _project(api, "kb1"), 4)["__typename"] == "IngestionJob"
    refused = _upload(api, _project(api, "kb2"), 4)
    assert refused["__typename"] == "LimitExceededError" and (refused["what"], refused["limit"]) == ("files", 6)
    assert "the server's ingestion queue (all knowledge bases) holds 4 files" in refused["message"]
    container.settings.jobs.server_max_queued_files = 100
    container.settings.jobs.server_max_queued_bytes = 40
    too_big = _upload(api, _project(api, "kb3"), 2, size=8)
    assert too_big["__typename"] == "LimitExceededError" and too_big["what"] == "bytes" and too_big["limit"] == 40


def test_cancelled_files_count_in_the_spool_until_their_retention_time_removes_them(
    held: tuple[Api, Container, SlowEmbedder],
) -> None:
    api, container, embedder = held
    container.settings.jobs.max_spool_bytes = 2048
    pid = _project(api, "kb")
    cancelled = _upload(api, pid, 3, size=500, tag="c")
    wait_until(lambda: embedder.started >= 1, 20, "the worker to take the first file")
    api.run(CANCEL_JOB, id=cancelled["id"], items=None)
    refused = _upload(api, pid, 1, size=1000)  # nothing is queued, but 1500 bytes wait for a retry
    assert refused["__typename"] == "LimitExceededError" and (refused["what"], refused["limit"]) == ("bytes", 2048)
    assert "the upload spool" in refused["message"]
    files = [Path(p) for p in _source_paths(container, cancelled["id"])]
    assert all(p.is_file() for p in files)
    # Past the retention time (a day), their files are removed and they can no longer be retried.
    with container.store.write() as db:
        db.execute(
            update(IngestionItem)
            .where(IngestionItem.job_id == int(cancelled["id"]))
            .values(finished_at=datetime.now(UTC) - timedelta(days=2))
        )
    expired = jobs.expire_spooled(container.store, container.settings.jobs.spool_retention)
    assert len(expired) == 3 and not any(p.exists() for p in files)
    items = api.run(JOB, id=cancelled["id"])["ingestionJob"]["items"]
    assert {i["state"] for i in items} == {"SKIPPED"} and "upload it again" in items[0]["error"]
    assert api.run(RETRY, id=cancelled["id"], items=None)["retryIngestionJob"]["__typename"] == "ConflictError"
    assert _upload(api, pid, 1, size=1000)["__typename"] == "IngestionJob"


def _source_paths(container: Container, job_id: str) -> list[str]:
    with container.store.read() as db:
        return [row.source_path for row in db.query(IngestionItem).filter(IngestionItem.job_id == int(job_id))]


@pytest.mark.sqlite_only(reason="two SQLite files in one folder: the default spool sits beside them")
def test_two_databases_in_one_folder_never_sweep_each_others_uploads(tmp_path: Path) -> None:
    first, second = (Settings(database_url=f"sqlite:///{tmp_path / name}") for name in ("a.db", "b.db"))
    for settings in (first, second):
        migrate.upgrade(settings.database_url, default_threshold=settings.rag.threshold)
    assert spool_dir(first) != spool_dir(second)
    a = Container.build(first, embedder=FakeEmbedder())
    try:
        with live_api(a) as api:
            parts = {
                "variables.files.0": ("blank.html", b"<html><body><script>go()</script></body></html>")
            }  # fails: its file is kept for a retry
            job = api.upload(UPLOAD, parts, {"p": _project(api, "kb"), "wait": True})["data"]["uploadDocuments"]
            assert job["items"][0]["state"] == "FAILED"
        (kept,) = [Path(p) for p in _source_paths(a, job["id"])]
    finally:
        a.close()
    assert kept.is_file()
    hour_ago = time.time() - jobs.SWEEP_AFTER_SECONDS - 1
    os.utime(kept.parent, (hour_ago, hour_ago))
    b = Container.build(second, embedder=FakeEmbedder())
    try:
        with live_api(b):  # b's start-up sweep
            pass
    finally:
        b.close()
    assert kept.is_file()  # a's upload is still there for a's retry


def test_the_worker_removes_expired_files_when_it_starts(migrated: Settings) -> None:
    container = Container.build(migrated, embedder=FakeEmbedder())
    try:
        with live_api(container) as api:
            parts = {
                "variables.files.0": ("blank.html", b"<html><body><script>go()</script></body></html>")
            }  # fails: its file is kept for a retry
            job = api.upload(UPLOAD, parts, {"p": _project(api, "kb"), "wait": True})["data"]["uploadDocuments"]
        (kept,) = [Path(p) for p in _source_paths(container, job["id"])]
        assert kept.is_file()
        with container.store.write() as db:
            db.execute(update(IngestionItem).values(finished_at=datetime.now(UTC) - timedelta(days=2)))
        with live_api(container) as api:  # a restart: the worker's first pass
            wait_until(lambda: not kept.exists(), 20, "the worker to remove the expired file")
            (item,) = api.run(JOB, id=job["id"])["ingestionJob"]["items"]
            assert item["state"] == "SKIPPED" and item["error"].startswith("failed (")
    finally:
        container.close()
