"""Several processes on one database: each registers, owns what it works on, and recovers what a
stopped one left.

A server — or a CLI command that streams an answer or ingests files (:func:`command_lease`) —
registers a ``servers`` row and holds a lock that ends with its process (app/db/server_locks.py);
answers it writes, tool calls it runs and files it ingests carry its id (``owner``, written by the
services through ``Database.owner``). :func:`recover` — at a server's start-up and then every
``RAGCHAT_RECOVERY_SECONDS`` — finds the registrations whose lock is free, and in one transaction
marks their streaming answers failed (interrupted), their running tool calls approved with an
unknown outcome, puts their uploads back in the queue, fails a command's files (nobody else can
read them), and deletes their rows. At start-up it also recovers rows with no owner (written by a
ragchat from before leases: migration 0021, or a CLI command before it held one), as a single
server always did. A row owned by a live server or command is never touched.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import anyio
from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.orm import InstrumentedAttribute

from app.db import server_locks
from app.db.database import Database
from app.db.enums import UNFINISHED_ITEM_STATES, ItemState, MessageStatus, ToolCallStatus
from app.db.models import ChatMessage, IngestionItem, IngestionJob, Server, StoredToolCall, utcnow
from app.errors import StorageError
from app.services import health
from app.services.chat import store as chat_store
from app.services.ingestion import jobs
from app.services.tools import calls as tool_calls

log = logging.getLogger("ragchat")
STOP_SECONDS = 10.0  # how long stopping waits for a recovery under way


@dataclass(frozen=True)
class Recovered:
    """What one recovery found left by stopped servers (or, at start-up, by no server)."""

    servers: int = 0
    answers: int = 0
    calls: int = 0
    items: int = 0  # uploads queued again
    failed_items: int = 0  # a command's files, marked failed


class ServerLease:
    """A server's (or a command's) registration: :meth:`acquire` at start-up, :meth:`keep` at each
    periodic look, :meth:`release` at shutdown."""

    def __init__(self, store: Database) -> None:
        self.store = store
        self.id: int | None = None
        self._lock: server_locks.HeldLock | None = None

    def acquire(self) -> int:
        with self.store.write() as db:
            row = Server(host=socket.gethostname()[:255], pid=os.getpid(), started_at=utcnow())
            db.add(row)
            db.flush()
            self._lock = server_locks.hold(self.store.engine, db.connection(), row.id)
            self.id = row.id
        self.store.owner = self.id
        return self.id

    def keep(self) -> bool:
        """Make sure this process still holds its lease; False if it had lost it and registered
        again. A lock that ended with its connection (PostgreSQL restarted, a network failure) while
        the process runs on tells the other servers it stopped: they may have recovered what it was
        doing (its answers under way failed, its files queued again) and deleted its row. Whatever
        they did, the rows it owned would from then on be taken for a stopped server's, every one it
        starts included. So it registers under a new id and, in one transaction, takes over what is
        still its own under the old one (what was not recovered meanwhile) and deletes the old row."""
        if self.id is None:
            return True
        old = self.id
        if self._lock is not None and self._lock.alive():
            with self.store.read() as db:
                if db.get(Server, old) is not None:
                    return True
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        new = self.acquire()  # the database may be down still: the next look tries again
        with self.store.write() as db:
            running = (
                (ChatMessage, ChatMessage.status == MessageStatus.STREAMING),
                (StoredToolCall, StoredToolCall.status == ToolCallStatus.RUNNING),
                (IngestionItem, IngestionItem.state.in_(jobs.RUNNING)),
            )
            kept = [
                _count(db.execute(update(model).where(model.owner == old, still).values(owner=new)))
                for model, still in running
            ]
            db.execute(delete(Server).where(Server.id == old))
        log.warning(
            "this server's lease (id %d) was lost: its lock's connection to the database ended; registered "
            "again as %d and kept %d answers, %d tool calls and %d files that were not recovered meanwhile",
            old,
            new,
            *kept,
        )
        return False

    def release(self) -> None:
        """Deregister (what it still owned is recovered by the next server to look), then let go
        of the lock."""
        if self.id is None:
            return
        self.store.owner = None
        try:
            with self.store.write() as db:
                db.execute(delete(Server).where(Server.id == self.id))
        finally:
            if self._lock is not None:
                self._lock.release()
            self.id = None


@contextmanager
def command_lease(store: Database) -> Iterator[int]:
    """Register a CLI command for the block, as a server registers for its lifetime: the answers
    and files it works on are its own, so a server starting (or looking every few seconds) leaves
    them alone while it runs, and recovers them once it is killed. Raises :class:`StorageError`
    when the database is not at this version's migration (it names the command to run)."""
    state = health.check(store)
    if not state.ok:
        at = f"at revision {state.migration_revision}" if state.migration_revision else "not migrated"
        raise StorageError(f"the database is {at}, this ragchat expects {state.head_revision}: run `ragchat migrate`")
    lease = ServerLease(store)
    me = lease.acquire()
    try:
        yield me
    finally:
        lease.release()


def recover(store: Database, me: int | None, *, startup: bool) -> Recovered:
    """Recover what servers that stopped left unfinished (and, at ``startup``, what no server owns)."""
    with store.write() as db:
        conn = db.connection()
        others = db.scalars(select(Server.id).where(Server.id != me) if me is not None else select(Server.id))
        gone = [sid for sid in others.all() if server_locks.is_gone(conn, sid)]

        def left(owner: InstrumentedAttribute[int | None]) -> ColumnElement[bool]:
            unowned = owner.not_in(select(Server.id))  # its server deregistered meanwhile
            return or_(owner.in_(gone), unowned, owner.is_(None)) if startup else or_(owner.in_(gone), unowned)

        answers = db.execute(
            update(ChatMessage)
            .where(ChatMessage.status == MessageStatus.STREAMING, left(ChatMessage.owner))
            .values(status=MessageStatus.FAILED, error=chat_store.INTERRUPTED, completed_at=utcnow(), owner=None)
        )
        calls = db.execute(
            update(StoredToolCall)
            .where(StoredToolCall.status == ToolCallStatus.RUNNING, left(StoredToolCall.owner))
            .values(status=ToolCallStatus.APPROVED, error=tool_calls.INTERRUPTED, finished_at=utcnow(), owner=None)
        )
        spooled = select(IngestionJob.id).where(IngestionJob.origin.in_(jobs.SPOOLED))
        items = db.execute(
            update(IngestionItem)
            .where(IngestionItem.state.in_(jobs.RUNNING), IngestionItem.job_id.in_(spooled), left(IngestionItem.owner))
            .values(state=ItemState.QUEUED, chunks_done=0, chunks_total=0, owner=None)
        )
        # A command's files are paths on its own machine, read by it alone: they end, retryable.
        failed = db.execute(
            update(IngestionItem)
            .where(
                IngestionItem.state.in_(UNFINISHED_ITEM_STATES),
                IngestionItem.job_id.not_in(spooled),
                left(IngestionItem.owner),
            )
            .values(state=ItemState.FAILED, outcome="failed", error=jobs.INTERRUPTED, finished_at=utcnow(), owner=None)
        )
        if gone:
            db.execute(delete(Server).where(Server.id.in_(gone)))
            for sid in gone:
                server_locks.forget(conn, sid)
        return Recovered(len(gone), _count(answers), _count(calls), _count(items), _count(failed))


def _count(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def report(found: Recovered, *, startup: bool) -> None:
    """Log what a recovery did, in the words a single server always used at start-up."""
    if found.servers:
        log.warning("%d servers or commands sharing the database stopped; recovering what they left", found.servers)
    when = "by the last shutdown" if startup else "by a server or command that stopped"
    if found.answers:
        log.warning("%d answers were interrupted %s; marked failed", found.answers, when)
    if found.calls:
        log.warning("%d approved tool calls were interrupted %s; their outcome is unknown", found.calls, when)
    if found.items:
        log.warning("%d files were being ingested when the server stopped; they start again", found.items)
    if found.failed_items:
        log.warning(
            "%d files a command was ingesting when it stopped are marked failed; run it again", found.failed_items
        )


class Recoverer:
    """Every ``seconds`` while the server runs (after the start-up recovery): checks that this server
    still holds its lease (:meth:`ServerLease.keep`), then runs :func:`recover`, on an engine of its
    own: its few statements never take a connection requests wait for, nor show up among a request's."""

    def __init__(self, lease: ServerLease, seconds: float, wake: Callable[[], None]) -> None:
        self.store = Database.from_url(lease.store.engine.url.render_as_string(hide_password=False))
        self.lease, self.seconds, self.wake = lease, seconds, wake
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="recover-stopped-servers")

    async def stop(self) -> None:
        """Stop, letting a recovery under way finish first (cancelling the task would not stop its
        thread, which would then use the engine after it is disposed), at most ``STOP_SECONDS``."""
        self._stopping.set()
        if self._task is not None:
            _, late = await asyncio.wait([self._task], timeout=STOP_SECONDS)
            for task in late:
                task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.store.dispose()

    async def _run(self) -> None:
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.seconds)
            if self._stopping.is_set():
                return
            try:
                found = await anyio.to_thread.run_sync(self._look)
            except Exception:  # a database that is down now is retried next time
                log.exception("could not check for stopped servers; trying again in %s s", self.seconds)
                continue
            report(found, startup=False)
            if found.items:
                self.wake()

    def _look(self) -> Recovered:
        """This server's own lease first (it may have lost it: :meth:`ServerLease.keep`), then the others'."""
        self.lease.keep()
        assert self.lease.id is not None
        return recover(self.store, self.lease.id, startup=False)
