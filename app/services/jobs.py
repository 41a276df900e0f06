"""Ingestion jobs: the rows that say what was asked to be ingested and where each file is.

A job is one upload batch, CLI call or fetched address; each of its files is an item that moves
queued -> parsing -> embedding -> ready | failed | cancelled (or is skipped), each step in its own
short transaction. ``ready``/``failed`` are stored by :func:`finish_in` inside the transaction that
stores the document (app/rag/ingest.py's ``Finish``), so an item and its document commit together.
The worker that moves items along is app/services/job_worker.py; the files wait on disk (an upload
spooled under :func:`spool_dir`, a CLI path where it is), never in memory.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db import locks
from app.db.database import Database
from app.db.engine import is_postgres, sqlite_path
from app.db.enums import RETRYABLE_ITEM_STATES, UNFINISHED_ITEM_STATES, ItemState, JobOrigin
from app.db.models import IngestionItem, IngestionJob, utcnow
from app.errors import ConflictError, LimitExceededError, NotFoundError
from app.rag.ingest import FileResult, FileStatus
from app.services import projects
from app.services.pages import Order, Page, PageRequest, pages
from app.settings import JobSettings, Settings

# The origins whose files the job owns (spooled copies, removed once ingested) and the server's
# worker takes; a CLI job reads the caller's own files, in the caller's process.
SPOOLED = (JobOrigin.UPLOAD, JobOrigin.URL)
RUNNING = (ItemState.PARSING, ItemState.EMBEDDING)
# A CLI job's file whose command was killed (app/services/leases.py): only that command reads it.
INTERRUPTED = "interrupted: the command ingesting it stopped before it ended; run it again"
SWEEP_AFTER_SECONDS = 3600


@dataclass(frozen=True)
class Intake:
    """A file to ingest, from any source: its name in the knowledge base, its size, where its bytes
    are (for a spooled upload or a fetched body, a file the job owns), and, when the caller decided
    not to ingest it, why (the item is stored as SKIPPED with that reason)."""

    name: str
    size_bytes: int
    path: Path
    skipped: str | None = None
    source_url: str | None = None  # the address it was fetched from (its document records it)


def spool_dir(settings: Settings) -> Path:
    """Where uploads wait for the worker: RAGCHAT_JOBS__SPOOL_DIR, else "uploads" beside the SQLite
    file, or in ./data (PostgreSQL: servers on several machines need a folder they all mount)."""
    if settings.jobs.spool_dir is not None:
        return settings.jobs.spool_dir
    database = sqlite_path(settings.database_url) if not is_postgres(settings.database_url) else None
    return (database.parent if database is not None else Path("data")) / "uploads"


def create(
    store: Database,
    limits: JobSettings,
    project_id: int,
    origin: JobOrigin,
    intakes: Sequence[Intake],
    api_key_id: int | None = None,
) -> IngestionJob:
    """A job with one queued item per intake (SKIPPED ones already ended). A job for the server's
    worker is refused as a whole with :class:`LimitExceededError` when the project's queue would hold
    too many files or bytes (a CLI job runs in its caller's foreground, queueing nothing)."""
    with store.write() as db:
        projects.require(db, project_id)
        if origin in SPOOLED:
            _check_limits(db, limits, project_id, [i for i in intakes if i.skipped is None])
        job = IngestionJob(project_id=project_id, origin=origin, api_key_id=api_key_id)
        db.add(job)
        db.flush()
        now = utcnow()
        # A CLI job's files are its command's from the start: if it is killed, a server ends them.
        owner = None if origin in SPOOLED else store.owner
        db.add_all(
            IngestionItem(
                job_id=job.id,
                project_id=project_id,
                name=intake.name,
                size_bytes=intake.size_bytes,
                source_path=str(intake.path),
                source_url=intake.source_url,
                state=ItemState.QUEUED if intake.skipped is None else ItemState.SKIPPED,
                error=intake.skipped,
                chunks_done=0,
                chunks_total=0,
                attempts=0,
                created_at=now,
                finished_at=None if intake.skipped is None else now,
                owner=owner,
            )
            for intake in intakes
        )
        return job


def _check_limits(db: Session, limits: JobSettings, project_id: int, intakes: Sequence[Intake]) -> None:
    locks.take_turns(db, "job limits", project_id)  # two servers' uploads cannot both fill the last places
    files, size = db.execute(
        select(func.count(), func.coalesce(func.sum(IngestionItem.size_bytes), 0)).where(
            IngestionItem.project_id == project_id, IngestionItem.state.in_(UNFINISHED_ITEM_STATES)
        )
    ).one()
    adding = sum(i.size_bytes for i in intakes)
    if files + len(intakes) > limits.max_queued_files:
        raise LimitExceededError(
            f"the knowledge base's ingestion queue holds {files} files; {len(intakes)} more would pass its limit "
            f"of {limits.max_queued_files}: wait for them to finish",
            what="files",
            limit=limits.max_queued_files,
            queued=files,
            requested=len(intakes),
        )
    if size + adding > limits.max_queued_bytes:
        raise LimitExceededError(
            f"the knowledge base's ingestion queue holds {size} bytes; {adding} more would pass its limit of "
            f"{limits.max_queued_bytes}: wait for them to finish",
            what="bytes",
            limit=limits.max_queued_bytes,
            queued=size,
            requested=adding,
        )


def get(store: Database, job_id: int) -> IngestionJob:
    with store.read() as db:
        job = db.get(IngestionJob, job_id)
    if job is None:
        raise NotFoundError("ingestion job", job_id)
    return job


def get_many(store: Database, ids: list[int]) -> list[IngestionJob]:
    with store.read() as db:
        return list(db.scalars(select(IngestionJob).where(IngestionJob.id.in_(ids))))


def items_of(store: Database, job_ids: list[int]) -> list[list[IngestionItem]]:
    """Each job's items, in the order they were sent, in one statement."""
    with store.read() as db:
        rows = db.scalars(select(IngestionItem).where(IngestionItem.job_id.in_(job_ids)).order_by(IngestionItem.id))
        grouped: dict[int, list[IngestionItem]] = {job_id: [] for job_id in job_ids}
        for row in rows:
            grouped[row.job_id].append(row)
    return [grouped[job_id] for job_id in job_ids]


def item(store: Database, item_id: int) -> IngestionItem | None:
    with store.read() as db:
        return db.get(IngestionItem, item_id)


def unfinished_items(store: Database, project_id: int | None, job_id: int | None) -> list[IngestionItem]:
    """A job's items (all of them), or every item of a project's jobs that still has unfinished ones."""
    with store.read() as db:
        if job_id is not None:
            if db.get(IngestionJob, job_id) is None:
                raise NotFoundError("ingestion job", job_id)
            query = select(IngestionItem).where(IngestionItem.job_id == job_id)
        else:
            assert project_id is not None
            projects.require(db, project_id)
            open_jobs = select(IngestionItem.job_id).where(
                IngestionItem.project_id == project_id, IngestionItem.state.in_(UNFINISHED_ITEM_STATES)
            )
            query = select(IngestionItem).where(IngestionItem.job_id.in_(open_jobs))
        return list(db.scalars(query.order_by(IngestionItem.id)))


# A project's jobs, newest first.
ORDER = Order((IngestionJob.id,), descending=True)


def pages_for(store: Database, project_ids: list[int], request: PageRequest) -> list[Page[IngestionJob]]:
    """The same page of each knowledge base's jobs, newest first, in one statement."""
    with store.read() as db:
        return pages(db, IngestionJob, ORDER, request, IngestionJob.project_id, project_ids)


def _chosen(db: Session, job_id: int, item_ids: list[int] | None) -> list[IngestionItem]:
    if db.get(IngestionJob, job_id) is None:
        raise NotFoundError("ingestion job", job_id)
    rows = list(db.scalars(select(IngestionItem).where(IngestionItem.job_id == job_id).order_by(IngestionItem.id)))
    if item_ids is None:
        return rows
    by_id = {row.id: row for row in rows}
    for item_id in item_ids:
        if item_id not in by_id:
            raise NotFoundError("ingestion item", item_id)
    return [by_id[item_id] for item_id in dict.fromkeys(item_ids)]


def cancel(store: Database, job_id: int, item_ids: list[int] | None = None) -> list[IngestionItem]:
    """Cancel the job's unfinished items (or those of ``item_ids``): queued ones never start, one
    being ingested stops before its document is written. ConflictError when none is unfinished."""
    with store.write() as db:
        chosen = [row for row in _chosen(db, job_id, item_ids) if row.state in UNFINISHED_ITEM_STATES]
        if not chosen:
            raise ConflictError("nothing to cancel: every chosen file of the job has already ended")
        now = utcnow()
        for row in chosen:
            row.state, row.error, row.finished_at = ItemState.CANCELLED, "cancelled", now
        return chosen


def retry(store: Database, job_id: int, item_ids: list[int] | None = None) -> list[IngestionItem]:
    """Queue the job's failed and cancelled items (or those of ``item_ids``) again. ConflictError when
    none of them failed or was cancelled."""
    with store.write() as db:
        chosen = _chosen(db, job_id, item_ids)
        retryable = [row for row in chosen if row.state in RETRYABLE_ITEM_STATES]
        if not retryable:
            raise ConflictError("nothing to retry: only failed or cancelled files can be retried")
        for row in retryable:
            row.state, row.error, row.outcome = ItemState.QUEUED, None, None
            row.chunks_done = row.chunks_total = 0
            row.started_at = row.finished_at = None
        return retryable


def claim(store: Database) -> IngestionItem | None:
    """The oldest queued item of a spooled job, now PARSING; None when there is none. On PostgreSQL
    several servers claim at once: the row is locked and rows another server holds are skipped
    (``FOR UPDATE SKIP LOCKED``), so each item is claimed once and nobody waits. SQLite renders no
    lock clause: its writers are serialised by the write transaction itself."""
    with store.write() as db:
        row = db.scalar(
            select(IngestionItem)
            .join(IngestionJob)
            .where(IngestionItem.state == ItemState.QUEUED, IngestionJob.origin.in_(SPOOLED))
            .order_by(IngestionItem.id)
            .limit(1)
            .with_for_update(skip_locked=True, of=IngestionItem)
        )
        if row is None:
            return None
        _start(row, store.owner)
        return row


def start(store: Database, item_id: int) -> IngestionItem | None:
    """Take one queued item (the CLI takes its own job's in turn); None if it is not queued."""
    with store.write() as db:
        row = db.get(IngestionItem, item_id, with_for_update=True)  # PostgreSQL: waits for another claimer
        if row is None or row.state is not ItemState.QUEUED:
            return None
        _start(row, store.owner)
        return row


def _start(row: IngestionItem, owner: int | None) -> None:
    row.state, row.started_at, row.attempts, row.owner = ItemState.PARSING, utcnow(), row.attempts + 1, owner
    row.chunks_done = row.chunks_total = 0


def embedding(store: Database, item_id: int, done: int, total: int) -> IngestionItem | None:
    """Record embedding progress; None when the item is no longer being ingested (cancelled, or its
    project deleted): the caller stops."""
    with store.write() as db:
        row = db.get(IngestionItem, item_id)
        if row is None or row.state not in RUNNING:
            return None
        row.state, row.chunks_done, row.chunks_total = ItemState.EMBEDDING, done, total
        return row


class ItemCancelled(Exception):
    """The item was cancelled (or its project deleted) while it was being ingested."""


def finish_in(db: Session, item_id: int, result: FileResult) -> None:
    """Store a file's outcome on its item inside the transaction that stores the document; raises
    :class:`ItemCancelled` (rolling the document back) when the item was cancelled meanwhile."""
    row = db.get(IngestionItem, item_id)
    if row is None or row.state not in RUNNING:
        raise ItemCancelled(item_id)
    error = result.error
    if result.status is FileStatus.SKIPPED:  # read, and found not worth ingesting (binary, minified...)
        row.state = ItemState.SKIPPED
        error = f"{result.skip_reason}: {result.error}" if result.skip_reason is not None else result.error
    else:
        row.state = ItemState.FAILED if result.error is not None else ItemState.READY
    row.outcome, row.error, row.document_id = result.status.value, error, result.document_id
    row.chunks_done = row.chunks_total = max(row.chunks_total, result.embedded)
    row.finished_at = utcnow()


def fail(store: Database, item_id: int, reason: str) -> IngestionItem | None:
    """An item that ended without an outcome from ingestion (its provider failed, its file vanished)."""
    with store.write() as db:
        row = db.get(IngestionItem, item_id)
        if row is None or row.state not in RUNNING:
            return row
        row.state, row.outcome, row.error, row.finished_at = ItemState.FAILED, "failed", reason, utcnow()
        return row


def requeue(store: Database, item_id: int) -> None:
    """Put an item the server stopped in the middle of back in the queue (it starts from scratch)."""
    with store.write() as db:
        db.execute(
            update(IngestionItem)
            .where(IngestionItem.id == item_id, IngestionItem.state.in_(RUNNING))
            .values(state=ItemState.QUEUED, chunks_done=0, chunks_total=0)
        )


def sweep_spool(store: Database, root: Path) -> int:
    """Remove spooled upload folders no item needs any more (their job's project was deleted, or a
    request died before its job was stored). Returns how many were removed."""
    if not root.is_dir():
        return 0
    with store.read() as db:
        needed = {
            Path(p).parent.name
            for p in db.scalars(
                select(IngestionItem.source_path).where(
                    IngestionItem.state.not_in((ItemState.READY, ItemState.SKIPPED))
                )
            )
        }
    removed = 0
    # Servers sharing a spool (issue 18): a folder just made by another server's upload request
    # has no item yet. Only folders older than any request are swept.
    settled = time.time() - SWEEP_AFTER_SECONDS
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in needed and folder.stat().st_mtime < settled:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
