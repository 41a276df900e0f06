"""Ingestion jobs: the rows that say what was asked to be ingested and where each file is.

A job is one upload batch, CLI call or fetched address; each of its files is an item that moves
queued -> parsing -> embedding -> ready | failed | cancelled (or is skipped), each step in its own
short transaction. ``ready``/``failed`` are stored by :func:`finish_in` inside the transaction that
stores the document (app/rag/ingest/pipeline.py's ``Finish``), so an item and its document commit together.
The worker that moves items along is app/services/ingestion/worker.py; the files wait on disk (an upload
spooled under :func:`spool_dir`, a CLI path where it is), never in memory.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, make_url, select, update
from sqlalchemy.orm import Session

from app.db import locks
from app.db.database import Database
from app.db.engine import is_postgres, sqlite_path
from app.db.enums import RETRYABLE_ITEM_STATES, UNFINISHED_ITEM_STATES, ItemState, JobOrigin, MemberRole
from app.db.models import IngestionItem, IngestionJob, utcnow
from app.errors import ConflictError, LimitExceededError, NotFoundError
from app.ops import metrics
from app.rag.ingest.pipeline import FileResult, FileStatus
from app.services.pages import Order, Page, PageRequest, pages
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
from app.settings import JobSettings, Settings

# The origins whose files the job owns (spooled copies, removed once ingested) and the server's
# worker takes; a CLI job reads the caller's own files, in the caller's process.
SPOOLED = (JobOrigin.UPLOAD, JobOrigin.URL)
RUNNING = (ItemState.PARSING, ItemState.EMBEDDING)
RETRYABLE = RETRYABLE_ITEM_STATES
# A CLI job's file whose command was killed (app/services/leases.py): only that command reads it.
INTERRUPTED = "interrupted: the command ingesting it stopped before it ended; run it again"
SWEEP_AFTER_SECONDS = 3600
EXPIRE_BATCH = 500  # items whose files one pass of expire_spooled removes (the next pass takes the rest)


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
    """Where uploads wait for the worker: a folder named after the database (:func:`spool_name`) in
    RAGCHAT_JOBS__SPOOL_DIR, else in "uploads" beside the SQLite file, or in ./data (PostgreSQL:
    servers on several machines need a folder they all mount). Named per database because the
    start-up sweep removes the folders its database's items do not need: two databases' servers
    sharing a folder must never sweep each other's uploads."""
    if settings.jobs.spool_dir is not None:
        root = settings.jobs.spool_dir
    else:
        database = sqlite_path(settings.database_url) if not is_postgres(settings.database_url) else None
        root = (database.parent if database is not None else Path("data")) / "uploads"
    return root / spool_name(settings.database_url)


def spool_name(database_url: str) -> str:
    """The database's spool folder name: readable (its file's or database's name) and distinct (a
    hash of the SQLite file's absolute path, or of PostgreSQL's host, port and database; never the
    password)."""
    url = make_url(database_url)
    path = sqlite_path(database_url) if not is_postgres(database_url) else None
    if path is not None:
        shown, identity = path.name, str(path.resolve())
    else:
        shown, identity = url.database or "memory", f"{url.host}:{url.port}/{url.database}"
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", shown)[:60]
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"


def create(
    store: Database,
    limits: JobSettings,
    project_id: int,
    origin: JobOrigin,
    intakes: Sequence[Intake],
    api_key_id: int | None = None,
    *,
    tags: Sequence[str] | None = None,
    caller: Caller = THE_SERVER,
) -> IngestionJob:
    """A job with one queued item per intake (SKIPPED ones already ended), each to give its document
    ``tags`` (validated by the caller; None: the document's own are kept). A job for the server's
    worker is refused as a whole with :class:`LimitExceededError` when the project's queue would hold
    too many files or bytes (a CLI job runs in its caller's foreground, queueing nothing)."""
    stored_tags = json.dumps(sorted(set(tags))) if tags is not None else None
    with store.write() as db:
        access.require_project(db, caller, project_id, MemberRole.EDITOR)
        if origin in SPOOLED:
            queued = [i for i in intakes if i.skipped is None]
            size = sum(i.size_bytes for i in queued)
            _check_limits(db, limits, project_id, len(queued), size, size)
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
                tags=stored_tags,
            )
            for intake in intakes
        )
        return job


def tags_of(row: IngestionItem) -> tuple[str, ...] | None:
    """The tags an item's document gets (None: its own are kept)."""
    return tuple(json.loads(row.tags)) if row.tags is not None else None


def _check_limits(db: Session, limits: JobSettings, project_id: int, files: int, size: int, spooling: int) -> None:
    """Refuse (LimitExceededError) to queue ``files`` more files of ``size`` bytes in ``project_id``'s
    queue, ``spooling`` of those bytes new to the spool, when a queue or the spool would pass its limit:
    the knowledge base's queue, the server's (all knowledge bases of the database), and the spool,
    which also holds the failed and cancelled files kept for a retry (until :func:`expire_spooled`)."""
    # One lock for all: the server-wide totals are checked too, so two servers' uploads (or retries)
    # into different knowledge bases cannot both fill the last places.
    locks.take_turns(db, "job limits")
    unfinished = IngestionItem.state.in_(UNFINISHED_ITEM_STATES)
    totals = (func.count(), func.coalesce(func.sum(IngestionItem.size_bytes), 0))
    kb_files, kb_size = db.execute(select(*totals).where(IngestionItem.project_id == project_id, unfinished)).one()
    all_files, all_size = db.execute(select(*totals).where(unfinished)).one()
    spooled: int = db.execute(
        select(func.coalesce(func.sum(IngestionItem.size_bytes), 0))
        .join(IngestionJob)
        .where(IngestionJob.origin.in_(SPOOLED), IngestionItem.state.in_((*UNFINISHED_ITEM_STATES, *RETRYABLE)))
    ).scalar_one()
    kb, server = "the knowledge base's ingestion queue", "the server's ingestion queue (all knowledge bases)"
    spool = "the upload spool (queued files, and failed or cancelled ones kept for a retry)"
    checks = (
        (kb, "files", kb_files, files, limits.max_queued_files, "wait for them to finish"),
        (kb, "bytes", kb_size, size, limits.max_queued_bytes, "wait for them to finish"),
        (server, "files", all_files, files, limits.server_max_queued_files, "wait for them to finish"),
        (server, "bytes", all_size, size, limits.server_max_queued_bytes, "wait for them to finish"),
        (spool, "bytes", spooled, spooling, limits.max_spool_bytes, "retry or let go of failed and cancelled files"),
    )
    for where, what, held, adding, limit, advice in checks:
        if adding > 0 and held + adding > limit:
            raise LimitExceededError(
                f"{where} holds {held} {what}; {adding} more would pass its limit of {limit}: {advice}",
                what=what,
                limit=limit,
                queued=held,
                requested=adding,
            )


def get(store: Database, job_id: int, *, caller: Caller = THE_SERVER) -> IngestionJob:
    with store.read() as db:
        return access.require_job(db, caller, job_id)


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


def unfinished_items(
    store: Database, project_id: int | None, job_id: int | None, *, caller: Caller = THE_SERVER
) -> list[IngestionItem]:
    """A job's items (all of them), or every item of a project's jobs that still has unfinished ones."""
    with store.read() as db:
        if job_id is not None:
            access.require_job(db, caller, job_id)
            query = select(IngestionItem).where(IngestionItem.job_id == job_id)
        else:
            assert project_id is not None
            access.require_project(db, caller, project_id)
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


def _chosen(db: Session, caller: Caller, job_id: int, item_ids: list[int] | None) -> list[IngestionItem]:
    access.require_job(db, caller, job_id, MemberRole.EDITOR)
    rows = list(db.scalars(select(IngestionItem).where(IngestionItem.job_id == job_id).order_by(IngestionItem.id)))
    if item_ids is None:
        return rows
    by_id = {row.id: row for row in rows}
    for item_id in item_ids:
        if item_id not in by_id:
            raise NotFoundError("ingestion item", item_id)
    return [by_id[item_id] for item_id in dict.fromkeys(item_ids)]


def cancel(
    store: Database, job_id: int, item_ids: list[int] | None = None, *, caller: Caller = THE_SERVER
) -> list[IngestionItem]:
    """Cancel the job's unfinished items (or those of ``item_ids``): queued ones never start, one
    being ingested stops before its document is written. ConflictError when none is unfinished."""
    with store.write() as db:
        chosen = [row for row in _chosen(db, caller, job_id, item_ids) if row.state in UNFINISHED_ITEM_STATES]
        if not chosen:
            raise ConflictError("nothing to cancel: every chosen file of the job has already ended")
        now = utcnow()
        for row in chosen:
            row.state, row.error, row.finished_at = ItemState.CANCELLED, "cancelled", now
        return chosen


def retry(
    store: Database,
    limits: JobSettings,
    job_id: int,
    item_ids: list[int] | None = None,
    *,
    caller: Caller = THE_SERVER,
) -> list[IngestionItem]:
    """Queue the job's failed and cancelled items (or those of ``item_ids``) again. ConflictError when
    none of them failed or was cancelled; LimitExceededError when a queue would pass its limit (as
    for an upload: their files are in the spool already)."""
    with store.write() as db:
        chosen = _chosen(db, caller, job_id, item_ids)
        retryable = [row for row in chosen if row.state in RETRYABLE_ITEM_STATES]
        if not retryable:
            raise ConflictError("nothing to retry: only failed or cancelled files can be retried")
        job = db.get(IngestionJob, job_id)
        if job is not None and job.origin in SPOOLED:
            size = sum(row.size_bytes for row in retryable)
            _check_limits(db, limits, retryable[0].project_id, len(retryable), size, 0)
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
    metrics.ingested(str(row.state), result.embedded)


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


def expire_spooled(store: Database, retention: float) -> list[IngestionItem]:
    """Remove the spooled files of failed and cancelled items that ended more than ``retention``
    seconds ago: they can no longer be retried (the item is SKIPPED, saying so) and no longer count
    against the spool's limit. Returns the items changed."""
    cutoff = utcnow() - timedelta(seconds=retention)
    with store.write() as db:
        rows = list(
            db.scalars(
                select(IngestionItem)
                .join(IngestionJob)
                .where(
                    IngestionJob.origin.in_(SPOOLED),
                    IngestionItem.state.in_(RETRYABLE),
                    IngestionItem.finished_at < cutoff,
                )
                .order_by(IngestionItem.id)
                .limit(EXPIRE_BATCH)
            )
        )
        for row in rows:
            what = "cancelled" if row.state is ItemState.CANCELLED else f"failed ({row.error})"
            row.state = ItemState.SKIPPED
            row.error = f"{what}; its uploaded file was removed {retention:g} s later: upload it again"[:2000]
            row.outcome = None
    for row in rows:  # once the rows say so: a file is never missing under a retryable item
        path = Path(row.source_path)
        path.unlink(missing_ok=True)
        with suppress(OSError):  # the folder still holds another item's file
            path.parent.rmdir()
    return rows


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
    # Servers sharing a spool (several server processes): a folder just made by another server's upload request
    # has no item yet. Only folders older than any request are swept.
    settled = time.time() - SWEEP_AFTER_SECONDS
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in needed and folder.stat().st_mtime < settled:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
