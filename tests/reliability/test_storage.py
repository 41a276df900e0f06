"""A full disk and a read-only database: clear StorageErrors through the API, reads keep working,
nothing is half-written, and the server neither crashes nor needs a restart once space is back.

The full disk is simulated portably with ``PRAGMA max_page_count`` (the file may not grow). The
read-only database is real: a tmpfs remounted read-only when the tests run as root, or file
permissions otherwise.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from app.container import Container
from app.db import migrate
from app.db.database import Database
from app.services import leases
from app.settings import Settings
from benchmarks.load import audit, problems
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, SEND, nodes
from tests.reliability.helpers import fake_container, row_counts
from tests.waiting import wait_until

pytestmark = pytest.mark.sqlite_only(
    reason="a full SQLite file (PRAGMA max_page_count) and a read-only file or tmpfs under it; PostgreSQL's "
    "read-only database is tests/db/test_engine.py's"
)

UPLOAD = (
    "mutation($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files) { "
    "__typename ... on IngestionJob { id } ... on Error { message } } }"
)
JOB_STATES = "query($id: ID!) { ingestionJob(id: $id) { ... on IngestionJob { items { state error } } } }"

READS = [
    "{ projects { __typename } }",
    '{ project(id: "1") { __typename } }',
    '{ document(id: "1") { __typename } }',
    '{ chatSession(id: "1") { __typename } }',
    '{ message(id: "1") { __typename } }',
    '{ search(projectId: "1", query: "penguins") { __typename } }',
    '{ retrievalPreview(sessionId: "1", message: "penguins") { __typename } }',
    "{ health { ok } }",
    "{ chatSessions { __typename } }",
]
PROJECTS = "{ projects { ... on ProjectConnection { edges { node { name documentCount } } } } }"
BIG_TEXT = "\n\n".join(f"Paragraph {i} tells of penguin colony {i} and its {i * 7} chicks." for i in range(1500))


@contextmanager
def disk_full(store: Database) -> Iterator[None]:
    """No connection may grow the database file beyond the size it has now."""

    def cap(dbapi_connection: Any, _record: Any) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(store.engine, "connect", cap)
    store.engine.dispose()  # pooled connections predate the cap
    try:
        yield
    finally:
        event.remove(store.engine, "connect", cap)
        store.engine.dispose()


def _kb(api: Api) -> tuple[str, str]:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.1})
    return pid, sid["createChatSession"]["id"]


def _refused_writes(api: Api, pid: str, sid: str, reason: str) -> None:
    added = api.run(ADD_DOC, p=pid, name="big.md", text=BIG_TEXT)["addDocument"]
    assert added["__typename"] == "StorageError" and reason in added["message"], added
    uploaded = api.upload(UPLOAD, {"variables.files.0": ("big.txt", BIG_TEXT.encode())}, {"p": pid})
    # Refused at once, or queued (a job's rows are small) and then failed by the worker, with the reason.
    job = uploaded["data"]["uploadDocuments"]
    if job["__typename"] == "IngestionJob":
        wait_until(
            lambda: api.run(JOB_STATES, id=job["id"])["ingestionJob"]["items"][0]["state"] == "FAILED",
            20,
            "the worker to fail the file",
        )
        (item,) = api.run(JOB_STATES, id=job["id"])["ingestionJob"]["items"]
        assert reason in item["error"], item
    else:
        assert job["__typename"] == "StorageError" and reason in job["message"], job
    sent = api.run(SEND, s=sid, c="penguins? " + "x" * 7000)["sendMessage"]
    assert sent["__typename"] == "StorageError" and reason in sent["message"], sent
    with api.websocket() as ws:
        (error,) = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins? " + "y" * 7000)]
    assert (error["__typename"], error["code"], error["failedMessageId"]) == ("ChatError", "STORAGE", None)
    assert reason in error["message"]


def test_a_full_disk_refuses_writes_with_storage_errors_and_loses_nothing(api: Api, rig: Container) -> None:
    pid, sid = _kb(api)
    before = row_counts(rig.store)
    with disk_full(rig.store):
        _refused_writes(api, pid, sid, "database or disk is full")
        listed = nodes(api.run(PROJECTS)["projects"])
        assert listed == [{"name": "kb", "documentCount": 1}]  # reads go on
    assert row_counts(rig.store) == before

    # Space is back: the same server writes again, no restart needed.
    assert api.run(ADD_DOC, p=pid, name="big.md", text=BIG_TEXT)["addDocument"]["added"] == 1
    assert problems(audit(Path(rig.settings.database_url.removeprefix("sqlite:///")))) == []


def test_the_disk_filling_up_while_an_answer_streams(rig: Container, model: FakeChatModel) -> None:
    with live_api(rig) as api:
        _, sid = _kb(api)
        model.token_delay = 0.005
        model.enqueue(" ".join(f"penguinfact{i}" for i in range(700)))  # long, and not a loop the guard would stop
        with api.websocket() as ws:
            stream = ws.subscribe(CHAT, s=sid, c="tell me everything about penguins")
            retrieval = next(stream)["data"]["chat"]
            with disk_full(rig.store):
                events = [e["data"]["chat"] for e in stream]
        error = events[-1]
        assert (error["__typename"], error["code"]) == ("ChatError", "STORAGE")
        assert error["failedMessageId"] == retrieval["messageId"] and len(error["partial"]) > 8000
        wait_until(lambda: rig.chat.generations_in_flight == 0, what="the slot to be released")

    # Either the failure was stored (without its text), or the next start marks it interrupted.
    leases.recover(rig.store, None, startup=True)
    status, text = _answer(rig.store, int(retrieval["messageId"]))
    assert status == "failed" and ("database or disk is full" in text or "interrupted" in text), text


def _answer(store: Database, message_id: int) -> tuple[str, str]:
    with store.read() as db:
        row = db.connection().exec_driver_sql("SELECT status, error FROM chat_messages WHERE id = ?", (message_id,))
        status, error = row.one()
    return str(status), str(error)


# -- read-only ---------------------------------------------------------------------------------------


def _make_read_only(path: Path, read_only: bool) -> None:
    """Root ignores permissions, so as root the file is made immutable instead."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if read_only else "-i", str(path)], check=True, timeout=30)
    else:
        path.chmod(0o444 if read_only else 0o644)


def test_a_read_only_database_file_refuses_writes_and_keeps_serving_reads(api: Api, rig: Container) -> None:
    pid, sid = _kb(api)
    before = row_counts(rig.store)
    path = Path(rig.settings.database_url.removeprefix("sqlite:///"))
    _make_read_only(path, True)
    try:
        rig.store.engine.dispose()  # connections opened from now on see the file as it is
        _refused_writes(api, pid, sid, "readonly database")
        assert nodes(api.run(PROJECTS)["projects"]) == [{"name": "kb", "documentCount": 1}]
    finally:
        _make_read_only(path, False)
    rig.store.engine.dispose()
    assert row_counts(rig.store) == before
    assert api.run(ADD_DOC, p=pid, name="owls.md", text="Barn owls hunt at night.")["addDocument"]["added"] == 1


@contextmanager
def storage(path: Path) -> Iterator[Any]:
    """A folder for the database and a switch that makes it read-only (a tmpfs remounted read-only
    as root, permissions otherwise)."""
    path.mkdir()
    if os.geteuid() != 0:

        def by_permissions(read_only: bool) -> None:
            for item in [path, *path.iterdir()]:
                item.chmod((0o555 if item.is_dir() else 0o444) if read_only else 0o755 if item.is_dir() else 0o644)

        try:
            yield by_permissions
        finally:
            by_permissions(False)
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path)], check=True, timeout=30)

    def remount(read_only: bool) -> None:
        subprocess.run(["mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(path)], check=True, timeout=30)

    try:
        yield remount
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, timeout=30)


def test_a_server_started_on_read_only_storage_says_why_and_recovers(tmp_path: Path) -> None:
    with storage(tmp_path / "store") as set_read_only:
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'store' / 'ragchat.db'}")
        migrate.upgrade(settings.database_url, default_threshold=settings.rag.threshold)
        set_read_only(True)  # nothing has the database open now, as after a reboot onto a read-only volume
        rig = fake_container(settings)
        try:
            with live_api(rig) as api:  # the lifespan does not crash: no restart loop
                health = httpx.get(f"{api.base}/healthz", timeout=10)
                assert health.status_code == 503 and "database" in health.json()["error"], health.text
                for query in READS:
                    body = api.raw(query).json()
                    message = (body.get("errors") or [{}])[0].get("message", "")
                    storage_member = (body.get("data") or {}) and "StorageError" in str(body["data"])
                    assert "unable to open database file" in message or storage_member, (query, body)
                written = api.raw(CREATE_PROJECT, {"name": "x"}).json()
                assert written["data"]["createProject"]["__typename"] == "StorageError", written

                set_read_only(False)  # writable again: the same server recovers, no restart needed
                assert api.run(CREATE_PROJECT, name="kb")["createProject"]["name"] == "kb"
                assert httpx.get(f"{api.base}/healthz", timeout=10).json()["ok"] is True
        finally:
            rig.close()
