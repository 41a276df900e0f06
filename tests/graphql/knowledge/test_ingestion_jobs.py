"""Ingestion as jobs, through the live GraphQL API: uploads return the queued job, the worker ingests
it, progress streams over the websocket, and jobs can be looked up, cancelled, retried and limited."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy import text

from app.container import Container
from app.services.ingestion import jobs
from app.services.ingestion.jobs import spool_dir
from tests.fakes import FakeEmbedder
from tests.graphql.client import Api, live_api
from tests.graphql.ops import CANCEL_JOB, CREATE_PROJECT, JOB, PROGRESS, RETRY_JOB, UPLOAD, nodes
from tests.waiting import wait_until


def _project(api: Api, name: str = "kb") -> str:
    return str(api.run(CREATE_PROJECT, name=name)["createProject"]["id"])


def _upload(api: Api, pid: str, files: list[tuple[str, bytes]], *, wait: bool) -> dict[str, Any]:
    parts = {f"variables.files.{i}": file for i, file in enumerate(files)}
    body = api.upload(UPLOAD, parts, {"p": pid, "wait": wait})
    assert "errors" not in body, body
    return dict(body["data"]["uploadDocuments"])


def _job(api: Api, job_id: str) -> dict[str, Any]:
    return dict(api.run(JOB, id=job_id)["ingestionJob"])


def _finished(api: Api, job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(_job(api, job_id))
        return bool(found["finished"])

    wait_until(done, 30, "the ingestion job to finish")
    return found


def test_upload_returns_the_queued_job_and_the_worker_ingests_it(api: Api, fake_container: Container) -> None:
    pid = _project(api)
    # A page with no visible text fails in its parser (an empty file would be skipped instead).
    job = _upload(
        api,
        pid,
        [("a.txt", b"alpha beta gamma"), ("bad.html", b"<html><body><script>go()</script></body></html>")],
        wait=False,
    )
    assert job["__typename"] == "IngestionJob" and job["origin"] == "UPLOAD" and job["progress"]["total"] == 2
    assert [i["name"] for i in job["items"]] == ["a.txt", "bad.html"]
    done = _finished(api, job["id"])
    by_name = {i["name"]: i for i in done["items"]}
    assert (by_name["a.txt"]["state"], by_name["a.txt"]["outcome"]) == ("READY", "ADDED")
    assert by_name["a.txt"]["document"]["status"] == "READY" and by_name["a.txt"]["chunksDone"] >= 1
    assert by_name["bad.html"]["state"] == "FAILED" and by_name["bad.html"]["error"]
    assert done["progress"] | {} == {
        "total": 2, "unfinished": 0, "ready": 1, "failed": 1, "cancelled": 0, "skipped": 0,
        "chunksDone": by_name["a.txt"]["chunksDone"], "chunksTotal": by_name["a.txt"]["chunksTotal"],
    }  # fmt: skip
    # The ready file's spooled copy is gone; the failed one's stays for a retry.
    left = sorted(p.name for p in spool_dir(fake_container.settings).rglob("*") if p.is_file())
    assert left == ["1"]
    listed = api.run(
        "query($id: ID!) { project(id: $id) { ... on Project { ingestionJobs(first: 5) { "
        "... on IngestionJobConnection { totalCount edges { node { id origin finished } } } } } } }",
        id=pid,
    )["project"]["ingestionJobs"]
    assert listed["totalCount"] == 1 and nodes(listed) == [{"id": job["id"], "origin": "UPLOAD", "finished": True}]


def test_progress_streams_every_state_change_of_every_file(api: Api) -> None:
    pid = _project(api)
    files = [(f"f{i}.md", f"# File {i}\n\n".encode() + b"penguins swim in cold water. " * 40) for i in range(5)]
    with api.websocket() as ws:
        job = _upload(api, pid, files, wait=False)
        events = [e["data"]["ingestionProgress"] for e in ws.subscribe(PROGRESS, j=job["id"])]
    assert {e["__typename"] for e in events} == {"IngestionItem"}
    for name, _ in files:
        states = [e["state"] for e in events if e["name"] == name]
        assert states[-1] == "READY", (name, states)
        assert "EMBEDDING" in states or states == ["READY"]  # subscribed after it was done: its stored state
    embedding = [e for e in events if e["state"] == "EMBEDDING"]
    assert all(0 <= e["chunksDone"] <= e["chunksTotal"] for e in embedding)


def test_a_reconnecting_client_gets_the_stored_state_first(api: Api) -> None:
    pid = _project(api)
    job = _upload(api, pid, [("a.txt", b"alpha"), ("b.txt", b"beta")], wait=True)
    with api.websocket() as ws:
        events = [e["data"]["ingestionProgress"] for e in ws.subscribe(PROGRESS, j=job["id"])]
    assert [(e["name"], e["state"]) for e in events] == [("a.txt", "READY"), ("b.txt", "READY")]


class SlowEmbedder(FakeEmbedder):
    """The fake embedder, held at a gate: a test decides when the worker's embedding may go on."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.started += 1
        self.gate.wait(30)
        return super().embed(texts)


def test_cancel_a_queued_file_and_retry_it(migrated) -> None:  # type: ignore[no-untyped-def]
    embedder = SlowEmbedder()
    container = Container.build(migrated, embedder=embedder)
    try:
        with live_api(container) as api:
            pid = _project(api)
            job = _upload(api, pid, [("a.txt", b"alpha"), ("b.txt", b"beta"), ("c.txt", b"gamma")], wait=False)
            ids = {i["name"]: i["id"] for i in job["items"]}
            wait_until(lambda: embedder.started >= 1, 20, "the worker to start embedding a.txt")
            cancelled = api.run(CANCEL_JOB, id=job["id"], items=[ids["b.txt"]])["cancelIngestionJob"]
            assert {i["name"]: i["state"] for i in cancelled["items"]}["b.txt"] == "CANCELLED"
            embedder.gate.set()
            done = _finished(api, job["id"])
            states = {i["name"]: i["state"] for i in done["items"]}
            assert states == {"a.txt": "READY", "b.txt": "CANCELLED", "c.txt": "READY"}
            again = api.run(CANCEL_JOB, id=job["id"], items=None)["cancelIngestionJob"]
            assert again["__typename"] == "ConflictError"
            retried = api.run(RETRY_JOB, id=job["id"], items=None)["retryIngestionJob"]
            # Queued again (the worker may have taken it already by the time the job is read back).
            assert {i["name"]: i["state"] for i in retried["items"]}["b.txt"] in {
                "QUEUED",
                "PARSING",
                "EMBEDDING",
                "READY",
            }
            done = _finished(api, job["id"])
            assert {i["name"]: (i["state"], i["attempts"]) for i in done["items"]}["b.txt"] == ("READY", 1)
            assert api.run(RETRY_JOB, id=job["id"], items=None)["retryIngestionJob"]["__typename"] == "ConflictError"
    finally:
        container.close()


def test_cancelling_the_file_being_embedded_stores_nothing_of_it(migrated) -> None:  # type: ignore[no-untyped-def]
    embedder = SlowEmbedder()
    container = Container.build(migrated, embedder=embedder)
    try:
        with live_api(container) as api:
            pid = _project(api)
            job = _upload(api, pid, [("a.txt", b"alpha beta")], wait=False)
            wait_until(lambda: embedder.started >= 1, 20, "the worker to start embedding")
            api.run(CANCEL_JOB, id=job["id"], items=None)
            embedder.gate.set()
            done = _finished(api, job["id"])
            assert done["items"][0]["state"] == "CANCELLED" and done["items"][0]["document"] is None
        with container.store.read() as db:
            assert db.execute(text("SELECT count(*) FROM documents")).scalar() == 0
    finally:
        container.close()


def test_unknown_jobs_and_items_are_typed_errors(api: Api) -> None:
    pid = _project(api)
    assert _job(api, "999")["__typename"] == "NotFoundError"
    assert _job(api, "x")["__typename"] == "ValidationError"
    job = _upload(api, pid, [("a.txt", b"alpha")], wait=True)
    wrong = api.run(CANCEL_JOB, id=job["id"], items=["12345"])["cancelIngestionJob"]
    assert wrong["__typename"] == "NotFoundError" and "ingestion item" in wrong["message"]
    with api.websocket() as ws:
        both = [e["data"]["ingestionProgress"] for e in ws.subscribe(PROGRESS, p=pid, j=job["id"])]
        missing = [e["data"]["ingestionProgress"] for e in ws.subscribe(PROGRESS, j="999")]
    assert both[0]["__typename"] == "ValidationError" and missing[0]["__typename"] == "NotFoundError"


def test_queue_limits_refuse_an_upload_as_a_whole(api: Api, fake_container: Container) -> None:
    pid = _project(api)
    fake_container.settings.jobs.max_queued_files = 2
    refused = _upload(api, pid, [("a.txt", b"a"), ("b.txt", b"b"), ("c.txt", b"c")], wait=False)
    assert refused["__typename"] == "LimitExceededError"
    assert (refused["what"], refused["limit"], refused["queued"], refused["requested"]) == ("files", 2, 0, 3)
    fake_container.settings.jobs.max_queued_files = 100
    fake_container.settings.jobs.max_queued_bytes = 1024
    too_big = _upload(api, pid, [("a.txt", b"a" * 600), ("b.txt", b"b" * 600)], wait=False)
    assert too_big["__typename"] == "LimitExceededError" and too_big["what"] == "bytes"
    with fake_container.store.read() as db:
        assert db.execute(text("SELECT count(*) FROM ingestion_jobs")).scalar() == 0
    spooled = spool_dir(fake_container.settings)
    assert not spooled.exists() or list(spooled.iterdir()) == []  # refused uploads leave no file behind


def test_bad_files_refuse_the_request_and_leave_nothing_spooled(api: Api, fake_container: Container) -> None:
    pid = _project(api)
    fake_container.settings.api.max_upload_bytes = 1024
    big = _upload(api, pid, [("ok.txt", b"ok"), ("big.txt", b"x" * 2000)], wait=False)
    assert big["__typename"] == "ValidationError" and big["fields"][0]["field"] == "files[1]"
    exe = _upload(api, pid, [("tool.exe", b"MZ\x90\x00")], wait=False)
    assert exe["fields"][0]["field"] == "files[0]"
    spooled = spool_dir(fake_container.settings)
    assert not spooled.exists() or list(spooled.iterdir()) == []


def test_spool_folders_no_job_needs_are_swept_at_start(migrated, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    container = Container.build(migrated, embedder=FakeEmbedder())
    orphan = spool_dir(migrated) / "0123abcd"
    orphan.mkdir(parents=True)
    (orphan / "0").write_bytes(b"left by a request that died")
    hour_ago = time.time() - jobs.SWEEP_AFTER_SECONDS - 1
    os.utime(orphan, (hour_ago, hour_ago))
    # Just made by an upload request (on another server sharing the spool) whose job is not stored yet.
    fresh = spool_dir(migrated) / "4567cdef"
    fresh.mkdir()
    try:
        with live_api(container):
            assert not orphan.exists()
            assert fresh.is_dir()
    finally:
        container.close()


def test_a_job_records_which_api_key_sent_it(migrated) -> None:  # type: ignore[no-untyped-def]
    migrated.api.api_keys = [SecretStr("first-key"), SecretStr("second-key")]
    container = Container.build(migrated, embedder=FakeEmbedder())
    try:
        with live_api(container, headers={"Authorization": "Bearer second-key"}) as api:
            pid = _project(api)
            job = _upload(api, pid, [("a.txt", b"alpha")], wait=True)
            found = api.run(
                "query($id: ID!) { ingestionJob(id: $id) { ... on IngestionJob { apiKeyId } } }", id=job["id"]
            )
            assert found["ingestionJob"]["apiKeyId"] == 2
    finally:
        container.close()
