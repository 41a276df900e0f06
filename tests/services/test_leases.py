"""Servers sharing a database recover what a stopped one left, and only that (app/services/leases.py):
answers, approved tool calls and files being ingested (an upload's, queued again; a CLI command's,
failed), by owner, on both backends. Rows with no owner (written by a ragchat from before leases)
are recovered by a server starting, never by the periodic look."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete, select, text

from app.db.database import Database
from app.db.enums import ItemState, JobOrigin, MessageStatus, Role, ToolCallStatus
from app.db.models import ChatMessage, ChatSession, IngestionItem, IngestionJob, Server, StoredToolCall
from app.services import leases, projects
from app.services.ingestion import jobs
from app.settings import Settings
from tests.waiting import wait_until


@pytest.fixture
def stores(migrated: Settings) -> Iterator[list[Database]]:
    made = [Database.from_url(migrated.database_url) for _ in range(3)]
    yield made
    for store in made:
        store.dispose()


def _work(store: Database, owners: list[int | None]) -> None:
    """An answer streaming, an approved call running, an upload being ingested and a CLI command's
    file waiting its turn, for each owner."""
    kb = projects.create(store, "kb").id
    with store.write() as db:
        chat = ChatSession(project_id=kb, title="t", provider="fake", model="m", threshold=0.3)
        job = IngestionJob(project_id=kb, origin=JobOrigin.UPLOAD)
        command = IngestionJob(project_id=kb, origin=JobOrigin.CLI)
        db.add_all([chat, job, command])
        db.flush()
        for n, owner in enumerate(owners):
            answer = ChatMessage(session_id=chat.id, role=Role.ASSISTANT, status=MessageStatus.STREAMING, owner=owner)
            db.add(answer)
            db.flush()
            db.add(
                StoredToolCall(
                    message_id=answer.id,
                    session_id=chat.id,
                    position=0,
                    call_id=f"c{n}",
                    tool_name="x",
                    arguments="{}",
                    status=ToolCallStatus.RUNNING,
                    owner=owner,
                )
            )
            db.add(
                IngestionItem(
                    job_id=job.id,
                    project_id=kb,
                    name=f"f{n}",
                    source_path=f"/spool/{n}",
                    state=ItemState.EMBEDDING,
                    owner=owner,
                    chunks_done=3,
                    chunks_total=9,
                )
            )
            db.add(IngestionItem(job_id=command.id, project_id=kb, name=f"c{n}", source_path=f"/home/{n}", owner=owner))


def _states(store: Database) -> list[tuple[str, str, str, str]]:
    with store.read() as db:
        answers = [m.status.value for m in db.scalars(select(ChatMessage).order_by(ChatMessage.id))]
        calls = [c.status.value for c in db.scalars(select(StoredToolCall).order_by(StoredToolCall.id))]
        items = [i.state.value for i in db.scalars(select(IngestionItem).order_by(IngestionItem.id))]
    return list(zip(answers, calls, items[0::2], items[1::2], strict=True))


def test_only_what_a_stopped_server_owned_is_recovered(stores: list[Database]) -> None:
    first, second, third = (leases.ServerLease(store) for store in stores)
    try:
        _recover_by_owner(stores, first, second, third)
    finally:  # a failed assertion leaves no lock connection open
        for lease in (first, second, third):
            if lease._lock is not None:
                lease._lock.release()


def _recover_by_owner(
    stores: list[Database], first: leases.ServerLease, second: leases.ServerLease, third: leases.ServerLease
) -> None:
    a, b = first.acquire(), second.acquire()
    assert stores[0].owner == a and stores[1].owner == b and a != b
    _work(stores[2], [a, b, None])
    assert leases.recover(stores[1], b, startup=False) == leases.Recovered()  # everyone is alive

    assert first._lock is not None
    first._lock.release()  # A's process ends without deregistering (SIGKILL)

    # PostgreSQL frees a session's locks once its backend has noticed the client left: soon, not at once.
    def recovered() -> leases.Recovered | None:
        found = leases.recover(stores[1], b, startup=False)
        return found if found.servers else None

    found = wait_until(recovered, 10, "A's lock to be free")
    assert found == leases.Recovered(servers=1, answers=1, calls=1, items=1, failed_items=1)
    running = ("streaming", "running", "embedding", "queued")
    assert _states(stores[2]) == [("failed", "approved", "queued", "failed"), running, running]
    with stores[2].read() as db:
        assert list(db.scalars(select(Server.id))) == [b]
        item, command_item = db.scalars(select(IngestionItem).order_by(IngestionItem.id)).all()[:2]
        assert (item.chunks_done, item.chunks_total, item.owner) == (0, 0, None)
        assert (command_item.error, command_item.outcome) == (jobs.INTERRUPTED, "failed")

    # A server starting recovers what no one owns (written by a ragchat from before leases: migration
    # 0021, or a CLI command before it held one), never what B holds. The periodic looks above left it.
    c = third.acquire()
    assert leases.recover(stores[2], c, startup=True) == leases.Recovered(answers=1, calls=1, items=1, failed_items=1)
    assert _states(stores[2])[1] == running

    # B stops cleanly: its row goes; what it still owned is recovered by the next look.
    second.release()
    assert leases.recover(stores[2], c, startup=False) == leases.Recovered(answers=1, calls=1, items=1, failed_items=1)
    third.release()
    with stores[2].read() as db:
        assert list(db.scalars(select(Server.id))) == []


def test_a_server_that_lost_its_lease_registers_again_and_keeps_its_work(stores: list[Database]) -> None:
    """Its lock ended with its connection (PostgreSQL: the lock backend terminated) or another server
    deleted its row: :meth:`ServerLease.keep` registers again and takes over what was still its own."""
    lease = leases.ServerLease(stores[0])
    try:
        old = lease.acquire()
        _work(stores[2], [old, old])
        assert lease.keep() is True  # nothing lost: nothing changes
        with stores[2].write() as db:
            if db.get_bind().dialect.name == "postgresql":
                ended = db.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                        "AND objid = CAST(:id AS oid) AND objsubid = 2"
                    ),
                    {"id": old},
                ).all()
                assert len(ended) == 1
            else:  # a file lock cannot end while its process runs: what a peer that recovered it does
                db.execute(delete(Server).where(Server.id == old))
        assert lease.keep() is False
        new = lease.id
        assert new is not None and new > old and stores[0].owner == new
        with stores[2].read() as db:
            assert list(db.scalars(select(Server.id))) == [new]
            owners = [m.owner for m in db.scalars(select(ChatMessage))]
            calls = [c.owner for c in db.scalars(select(StoredToolCall))]
        assert owners == [new, new] and calls == [new, new]
        assert lease.keep() is True
    finally:
        lease.release()
