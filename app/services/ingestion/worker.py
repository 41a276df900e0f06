"""The ingestion worker: takes queued items and ingests them, reporting each step.

:class:`ItemRunner` ingests one item (synchronously: parsing in its own process, embedding and
writing in the calling thread); the server's :class:`JobWorker` runs ``RAGCHAT_JOBS__WORKERS`` of
them in worker threads, started and stopped with the app's lifespan, and the CLI runs one in the
foreground. Every change of an item is published on :class:`JobEvents` for the
``ingestionProgress`` subscription. At start-up, items a stopped server left half-way go back to
the queue and start again from scratch: a document commits with its item's end, so nothing of
theirs is visible.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from app.db.database import Database
from app.db.enums import ItemState
from app.db.models import IngestionItem
from app.errors import RagchatError
from app.llm.base import Embedder
from app.ops import tracing
from app.rag.ingest.parse_worker import ParseWorker
from app.rag.ingest.parsing import ParseLimits
from app.rag.ingest.pipeline import Ingestor, Source
from app.services.ingestion import jobs
from app.settings import IngestSettings, JobSettings

log = logging.getLogger(__name__)

Listener = Callable[[IngestionItem], None]
T = TypeVar("T")
IDLE_POLL = 5.0  # seconds an idle worker waits before looking for items another process queued
# How long stopping waits for an item's current step (a parse, an embedding batch, a write) to end
# before giving up on it (it is then recovered as a stopped server's: app/services/leases.py).
STOP_SECONDS = 10.0
EXPIRE_EVERY = 60.0  # seconds between looks for failed and cancelled uploads past their retention time


class JobEvents:
    """Item changes, fanned out to subscribers in this process (any thread may publish)."""

    def __init__(self) -> None:
        self._queues: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[IngestionItem]]] = {}
        self._lock = threading.Lock()

    def publish(self, row: IngestionItem) -> None:
        with self._lock:
            targets = list(self._queues.values())
        for loop, queue in targets:
            with suppress(RuntimeError):  # that subscriber's loop has closed
                loop.call_soon_threadsafe(queue.put_nowait, row)

    @contextmanager
    def subscribe(self) -> Iterator[asyncio.Queue[IngestionItem]]:
        """Every item change from now on, until the block ends (call from the event loop)."""
        queue: asyncio.Queue[IngestionItem] = asyncio.Queue()
        key = id(queue)
        with self._lock:
            self._queues[key] = (asyncio.get_running_loop(), queue)
        try:
            yield queue
        finally:
            with self._lock:
                del self._queues[key]


class Stopping(Exception):
    """The worker is stopping: the item is left as it is and resumes at the next start."""


class ItemRunner:
    """Ingests items one at a time with one warm parser process. Not thread-safe: one per thread."""

    def __init__(
        self,
        store: Database,
        embedder: Embedder,
        settings: IngestSettings,
        publish: Listener,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self.ingestor = Ingestor(store, embedder, settings)
        limits = ParseLimits(settings.max_pages, settings.max_chars_per_page, settings.max_chars_per_file)
        self.parser = ParseWorker(limits, settings.parse_timeout)
        self.publish = publish
        self.stopping = stopping

    def run(self, row: IngestionItem, *, owned: bool) -> IngestionItem | None:
        """Ingest a started item (PARSING); its file is removed once it is ready when ``owned`` (a
        spooled copy). Returns the item as it ended (None: the worker is stopping, or it is gone)."""
        # Its span (when tracing is on) names ids and sizes, never the file's name or text.
        ids = {"ragchat.item_id": row.id, "ragchat.job_id": row.job_id, "ragchat.project_id": row.project_id}
        with tracing.span("ingestion item", ids) as traced:
            final = self._run(row, owned=owned)
            if traced is not None:
                traced.set_attribute("ragchat.state", str(final.state) if final is not None else "requeued")
                if final is not None:
                    traced.set_attribute("ragchat.chunks", final.chunks_done)
            return final

    def _run(self, row: IngestionItem, *, owned: bool) -> IngestionItem | None:
        self.publish(row)
        path = Path(row.source_path)

        def embedded(done: int, total: int) -> None:
            if self.stopping():
                raise Stopping
            changed = jobs.embedding(self.store, row.id, done, total)
            if changed is None:
                raise jobs.ItemCancelled(row.id)
            self.publish(changed)

        try:
            self.ingestor.ingest_one(
                row.project_id,
                Source(row.name, path.read_bytes, row.source_url, tags=jobs.tags_of(row)),
                self.parser,
                embedded,
                lambda db, outcome: jobs.finish_in(db, row.id, outcome),
            )
        except Stopping:
            jobs.requeue(self.store, row.id)
            return None
        except jobs.ItemCancelled:
            pass
        except RagchatError as exc:  # the embedder failed, the database refused, the project is gone
            jobs.fail(self.store, row.id, exc.message)
        except Exception:
            log.exception("ingesting %s (item %s) failed unexpectedly", row.name, row.id)
            jobs.fail(self.store, row.id, "an unexpected error stopped it (logged on the server); retry it")
        final = jobs.item(self.store, row.id)
        if final is not None:
            self.publish(final)
            if owned and final.state is ItemState.READY:
                path.unlink(missing_ok=True)
        return final

    def close(self) -> None:
        self.parser.close()


class JobWorker:
    """The server's worker: ``settings.workers`` loops, each taking the oldest queued item of a
    spooled job and ingesting it in a worker thread. :meth:`wake` after queueing items.

    Stopping waits for those threads: cancelling the task that awaits one does not stop the thread,
    which would go on using the store after its engine was disposed (and, in tests, open the
    database again during the next test). :meth:`stop` lets the loops end at the item's next step
    (it is queued again) and :meth:`join` waits for any thread still in a step, each at most
    ``STOP_SECONDS``; ``Container.close()`` joins before it disposes the engine."""

    def __init__(
        self,
        store: Database,
        embedder: Callable[[], Embedder],
        ingest: IngestSettings,
        settings: JobSettings,
        spool: Path,
        events: JobEvents,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.ingest = ingest
        self.settings = settings
        self.spool = spool
        self.events = events
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy = 0  # worker threads inside a step
        self._idle = threading.Condition()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._stopping = False
        # Items a stopped server left half-way were queued again before (app/services/leases.py).
        swept = await anyio.to_thread.run_sync(jobs.sweep_spool, self.store, self.spool)
        if swept:
            log.info("removed %d spooled upload folders no job needs", swept)
        self._tasks = [
            asyncio.create_task(self._loop_forever(), name=f"ingest-{i}") for i in range(self.settings.workers)
        ]
        self._tasks.append(asyncio.create_task(self._expire_forever(), name="spool-retention"))

    def wake(self) -> None:
        """New items are queued (callable from any thread)."""
        if self._loop is not None and self._wake is not None:
            with suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._wake.set)

    async def stop(self) -> None:
        """Stop taking items; an item being ingested stops at its next step and is queued again.
        Waits up to ``STOP_SECONDS`` for the loops to end, then cancels what is left."""
        self._stopping = True
        if self._wake is not None:
            self._wake.set()
        if self._stop is not None:
            self._stop.set()
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=STOP_SECONDS)
        if late:
            log.warning("an item was still being ingested %s s after the worker began to stop", STOP_SECONDS)
        for task in late:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task

    def join(self, timeout: float = STOP_SECONDS) -> bool:
        """Stop, and wait up to ``timeout`` seconds for every worker thread to leave its step (any
        thread; safe without a running loop). False if one is still in it."""
        self._stopping = True
        with self._idle:
            left = self._idle.wait_for(lambda: self._busy == 0, timeout)
        if not left:
            log.warning("the ingestion worker was still using the database %s s after it was asked to stop", timeout)
        return left

    def _step(self, work: Callable[[], T]) -> T:
        """Run one step of a loop in this worker thread, counted for :meth:`join`."""
        with self._idle:
            self._busy += 1
        try:
            return work()
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    async def _loop_forever(self) -> None:
        assert self._wake is not None
        runner: ItemRunner | None = None
        try:
            while not self._stopping:
                self._wake.clear()  # before looking, so a wake during the look is not lost
                try:
                    row = await anyio.to_thread.run_sync(self._step, lambda: jobs.claim(self.store))
                    if row is not None and self._stopping:  # claimed as the server began to stop
                        await anyio.to_thread.run_sync(self._step, lambda: jobs.requeue(self.store, row.id))  # noqa: B023
                        break
                    if row is not None:
                        if runner is None:
                            runner = await anyio.to_thread.run_sync(self._runner)
                        await anyio.to_thread.run_sync(self._step, lambda: runner.run(row, owned=True))  # noqa: B023
                        continue
                except Exception:  # the database refused (full, locked): wait and look again
                    log.exception("the ingestion worker could not take or record an item; retrying shortly")
                with suppress(TimeoutError):  # another process (a second server) may queue too
                    await asyncio.wait_for(self._wake.wait(), IDLE_POLL)
        finally:
            if runner is not None:
                await anyio.to_thread.run_sync(runner.close)

    async def _expire_forever(self) -> None:
        """Remove failed and cancelled uploads' files once they are older than the retention time
        (jobs.expire_spooled), now and then every ``EXPIRE_EVERY`` seconds, so the spool's size is
        bounded by what may wait plus what is kept for a retry."""
        assert self._stop is not None
        retention = self.settings.spool_retention
        while not self._stopping:
            try:
                expired = await anyio.to_thread.run_sync(self._step, lambda: jobs.expire_spooled(self.store, retention))
            except Exception:  # the database refused (full, locked): the next pass tries again
                log.exception("could not remove the spooled files of failed or cancelled uploads; retrying later")
                expired = []
            for row in expired:
                self.events.publish(row)
            if len(expired) < jobs.EXPIRE_BATCH:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), min(EXPIRE_EVERY, retention))

    def _runner(self) -> ItemRunner:
        return ItemRunner(self.store, self.embedder(), self.ingest, self.events.publish, lambda: self._stopping)
