"""Ingestion: files in, chunks and vectors out, each document written in one transaction.

For a batch of files: parse and chunk each (CPU), compare with what is stored (content hashes per
document and per chunk), embed only the chunks that are new — all new chunks of the batch in one
embedder call, so batching pays off across small files — and then write each document in its own
short transaction. Embedding happens with no database connection held. Chunks whose text did not
change keep their row and their vector (only their position is updated); chunks that vanished are
deleted, and triggers remove their vectors and keyword index entries with them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import partial

import numpy as np
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.db import locks
from app.db.database import Database
from app.db.enums import DocumentStatus
from app.db.models import Chunk, Document, Project, utcnow
from app.errors import IngestError, NotFoundError
from app.llm.base import Embedder
from app.rag.index import spaces, vector_store
from app.rag.ingest.chunking import chunk
from app.rag.ingest.intake import SkipReason, inspect
from app.rag.ingest.parse_worker import ParseWorker
from app.rag.ingest.parsing import ParseLimits, kind_by_name
from app.rag.ingest.tags import metadata_changed, replace_tags
from app.rag.ingest.types import ChunkSpec, DocumentKind, sha256
from app.rag.sanitize import clean_name
from app.settings import IngestSettings


class FileStatus(StrEnum):
    """What ingestion did with one file of a batch."""

    ADDED = "added"  # a new document (or one whose last ingestion had failed)
    UNCHANGED = "unchanged"  # same content as stored: nothing parsed, embedded or written
    UPDATED = "updated"  # new content for a stored document: changed chunks re-embedded
    SKIPPED = "skipped"  # not worth ingesting (binary, compressed, minified...): FileResult.skip_reason, .error
    FAILED = "failed"  # not ingested; FileResult.error says why


BATCH_FILES = 64
BATCH_NEW_CHUNKS = 1024
# One file's new chunks are embedded this many at a time, its progress reported after each slice.
EMBED_SLICE = 32

# Called inside the transaction that stores a file's outcome (its document, or the record of its
# failure), so a caller's own bookkeeping (an ingestion job's item) commits with it or not at all.
Finish = Callable[[Session, "FileResult"], None]


@dataclass(frozen=True)
class Source:
    """A file to ingest: its name in the knowledge base, a way to read its bytes, the URL it was
    fetched from (None for files and text), when the file last changed (None: not known) and its
    tags (None: keep the document's, if it has some; validated by the caller)."""

    name: str
    read: Callable[[], bytes]
    source_url: str | None = None
    modified_at: datetime | None = None
    tags: tuple[str, ...] | None = None

    @classmethod
    def from_bytes(
        cls,
        name: str,
        data: bytes,
        source_url: str | None = None,
        *,
        modified_at: datetime | None = None,
        tags: tuple[str, ...] | None = None,
    ) -> Source:
        return cls(name, lambda: data, source_url, modified_at, tags)


@dataclass
class FileResult:
    name: str
    status: FileStatus
    document_id: int | None = None
    chunks: int = 0
    embedded: int = 0
    removed: int = 0
    error: str | None = None  # why it failed, or why it was skipped
    skip_reason: SkipReason | None = None


@dataclass
class IngestSummary:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: FileStatus) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def chunks_embedded(self) -> int:
        return sum(f.embedded for f in self.files)


@dataclass
class _Plan:
    source: Source
    data: bytes
    content_hash: str
    kind: DocumentKind
    specs: list[ChunkSpec]
    existing: Document | None
    reuse: dict[int, int]  # spec ordinal -> existing chunk id with the same text
    vanished: list[int]  # existing chunk ids no longer present
    new: list[ChunkSpec] = field(default_factory=list)


class Ingestor:
    """Ingests sources into one project with one embedder."""

    def __init__(self, store: Database, embedder: Embedder, settings: IngestSettings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings

    def ingest(
        self,
        project_id: int,
        sources: Iterable[Source],
        progress: Callable[[FileResult], None] | None = None,
    ) -> IngestSummary:
        started = time.perf_counter()
        summary = IngestSummary()
        batch: list[_Plan] = []
        failed: list[Callable[[], FileResult]] = []
        pending_chunks = 0
        order: dict[str, int] = {}
        limits = ParseLimits(
            self.settings.max_pages, self.settings.max_chars_per_page, self.settings.max_chars_per_file
        )
        with ParseWorker(limits, self.settings.parse_timeout) as parser:
            for index, given in enumerate(sources):
                source = replace(given, name=clean_name(given.name))  # every way in
                order.setdefault(source.name, index)
                outcome = self._plan(project_id, source, parser)
                if isinstance(outcome, FileResult):
                    self._record(summary, outcome, progress)
                    continue
                if isinstance(outcome, _Plan):
                    batch.append(outcome)
                    pending_chunks += len(outcome.new)
                else:
                    failed.append(outcome)
                if len(batch) + len(failed) >= BATCH_FILES or pending_chunks >= BATCH_NEW_CHUNKS:
                    self._flush(project_id, batch, failed, summary, progress)
                    batch, failed, pending_chunks = [], [], 0
        self._flush(project_id, batch, failed, summary, progress)
        summary.files.sort(key=lambda result: order[result.name])  # failures are known before the batch is written
        summary.seconds = time.perf_counter() - started
        return summary

    def _record(
        self, summary: IngestSummary, result: FileResult, progress: Callable[[FileResult], None] | None
    ) -> None:
        summary.files.append(result)
        if progress is not None:
            progress(result)

    def _plan(
        self, project_id: int, source: Source, parser: ParseWorker
    ) -> _Plan | FileResult | Callable[[], FileResult]:
        """What to write for ``source``: a plan, a result needing no write, or a failure to record."""
        if not source.name:
            return FileResult(source.name, FileStatus.FAILED, error="the file name has no visible characters")
        try:
            data = source.read()
        except OSError as exc:
            return FileResult(source.name, FileStatus.FAILED, error=f"cannot read the file: {exc.strerror or exc}")
        skipped = inspect(source.name, data)
        if skipped is not None:  # nothing written: a stored document of that name stays as it is
            return FileResult(source.name, FileStatus.SKIPPED, error=skipped.detail, skip_reason=skipped.reason)
        if len(data) > self.settings.max_file_bytes:
            too_big = f"file is {len(data)} bytes; the limit is {self.settings.max_file_bytes}"
            return partial(self._fail, project_id, source, data, too_big)
        content_hash = sha256(data)
        with self.store.read() as db:
            existing = _document(db, project_id, source.name)
            if (
                existing is not None
                and existing.content_hash == content_hash
                and existing.status is DocumentStatus.READY
            ):
                unchanged = FileResult(source.name, FileStatus.UNCHANGED, existing.id, chunks=existing.chunk_count)
                if source.tags is None and source.modified_at is None:
                    return unchanged
                return partial(self._retag, existing.id, source, unchanged)
            old_chunks = _chunk_hashes(db, existing.id) if existing is not None else []
        try:
            parsed = parser.parse(data, source.name)
            specs = chunk(
                parsed,
                self.embedder.tokenizer,
                target_tokens=self.settings.chunk_tokens,
                overlap_tokens=self.settings.overlap_tokens,
                max_chars=self.settings.max_chunk_chars,
            )
            if not specs:
                raise IngestError("the file contains no text to index")
        except IngestError as exc:
            return partial(self._fail, project_id, source, data, exc.message, existing)
        return _diff(source, data, content_hash, parsed.kind, specs, existing, old_chunks)

    def _flush(
        self,
        project_id: int,
        batch: list[_Plan],
        failed: list[Callable[[], FileResult]],
        summary: IngestSummary,
        progress: Callable[[FileResult], None] | None,
    ) -> None:
        texts = [spec.text for plan in batch for spec in plan.new]
        vectors = self.embedder.embed(texts) if texts else None
        # Failures are recorded only once the batch's embedding worked: a batch the embedder
        # refuses writes nothing, not even the record of a file that could not be parsed.
        for record_failure in failed:
            self._record(summary, record_failure(), progress)
        offset = 0
        for plan in batch:
            count = len(plan.new)
            plan_vectors = vectors[offset : offset + count] if vectors is not None else None
            offset += count
            try:
                result = self._write(project_id, plan, plan_vectors)
            except IngestError as exc:
                result = FileResult(plan.source.name, FileStatus.FAILED, error=exc.message)
            self._record(summary, result, progress)

    def _write(self, project_id: int, plan: _Plan, vectors: object, finish: Finish | None = None) -> FileResult:
        with self.store.write() as db:
            _project_still_there(db, project_id)
            space = spaces.ensure_space(db, project_id, self.embedder.space)
            doc = _document(db, project_id, plan.source.name, lock=True)
            if doc is not None and plan.existing is None and _same(doc, plan.content_hash):
                # Another writer (a second server given the same upload) stored it meanwhile: it is
                # this document, unchanged, as if it had been found when the file was read.
                found = FileResult(plan.source.name, FileStatus.UNCHANGED, doc.id, chunks=doc.chunk_count)
                if finish is not None:
                    finish(db, found)
                return found
            if (doc.content_hash if doc else None) != (plan.existing.content_hash if plan.existing else None):
                raise IngestError(f"{plan.source.name} changed while it was being ingested; run the ingestion again")
            if doc is None:
                doc = Document(project_id=project_id, name=plan.source.name)
                db.add(doc)
            doc.kind, doc.size_bytes, doc.content_hash = plan.kind, len(plan.data), plan.content_hash
            doc.source_url = plan.source.source_url
            if plan.source.modified_at is not None:
                doc.modified_at = plan.source.modified_at
            doc.status, doc.error, doc.chunk_count, doc.ingested_at = (
                DocumentStatus.READY,
                None,
                len(plan.specs),
                utcnow(),
            )
            db.flush()
            metadata_changed(db, doc.id)  # its dates changed (its chunks may not have)
            if plan.source.tags is not None:
                replace_tags(db, doc.id, plan.source.tags)
            if plan.vanished:
                db.execute(delete(Chunk).where(Chunk.id.in_(plan.vanished)))
            for spec in plan.specs:
                if spec.ordinal in plan.reuse:
                    db.execute(update(Chunk).where(Chunk.id == plan.reuse[spec.ordinal]).values(**_position(spec)))
            new_rows = [Chunk(document_id=doc.id, project_id=project_id, **_fields(spec)) for spec in plan.new]
            db.add_all(new_rows)
            db.flush()
            if new_rows:
                vector_store.put(db, space.table, [row.id for row in new_rows], vectors)  # type: ignore[arg-type]
            status = (
                FileStatus.ADDED
                if plan.existing is None or plan.existing.status is not DocumentStatus.READY
                else FileStatus.UPDATED
            )
            result = FileResult(
                plan.source.name, status, doc.id, len(plan.specs), embedded=len(new_rows), removed=len(plan.vanished)
            )
            if finish is not None:
                finish(db, result)
            return result

    def _retag(
        self, document_id: int, source: Source, unchanged: FileResult, finish: Finish | None = None
    ) -> FileResult:
        """An unchanged file's new tags or date: the document's metadata, its chunks as they were."""
        with self.store.write() as db:
            doc = db.get(Document, document_id)
            if doc is not None:
                if source.modified_at is not None:
                    doc.modified_at = source.modified_at
                    metadata_changed(db, doc.id)
                if source.tags is not None:
                    replace_tags(db, doc.id, source.tags)
        return self._finish(unchanged, finish)

    def _fail(
        self,
        project_id: int,
        source: Source,
        data: bytes,
        reason: str,
        existing: Document | None = None,
        finish: Finish | None = None,
    ) -> FileResult:
        """Record why a file failed. A document that was ingested before keeps its last good version."""
        name = source.name
        if existing is not None and existing.status is DocumentStatus.READY:
            return self._finish(
                FileResult(name, FileStatus.FAILED, existing.id, existing.chunk_count, error=reason), finish
            )
        with self.store.write() as db:
            _project_still_there(db, project_id)
            doc = _document(db, project_id, name, lock=True)
            if doc is None:
                doc = Document(project_id=project_id, name=name, chunk_count=0)
                db.add(doc)
            doc.kind, doc.size_bytes, doc.content_hash = kind_by_name(name), len(data), sha256(data)
            doc.source_url = source.source_url
            doc.status, doc.error, doc.ingested_at = DocumentStatus.FAILED, reason, utcnow()
            db.flush()
            result = FileResult(name, FileStatus.FAILED, doc.id, error=reason)
            if finish is not None:
                finish(db, result)
            return result

    def _finish(self, result: FileResult, finish: Finish | None) -> FileResult:
        """Record an outcome that writes no document (unchanged, or failed before anything was stored)."""
        if finish is not None:
            with self.store.write() as db:
                finish(db, result)
        return result

    def ingest_one(
        self,
        project_id: int,
        given: Source,
        parser: ParseWorker,
        embedded: Callable[[int, int], None],
        finish: Finish,
    ) -> FileResult:
        """One file, its progress reported: ``embedded(done, total)`` before embedding and after each
        slice of its new chunks (it may raise to stop the file: nothing is written then), and its
        outcome stored with ``finish`` in the same transaction as its document. A job's worker
        ingests file by file this way; :meth:`ingest` batches small files into one embedder call."""
        source = replace(given, name=clean_name(given.name))
        outcome = self._plan(project_id, source, parser)
        if isinstance(outcome, FileResult):
            return self._finish(outcome, finish)
        if not isinstance(outcome, _Plan):  # a partial of _fail: record the failure with the outcome
            failure: FileResult = outcome(finish=finish)  # type: ignore[call-arg]
            return failure
        texts = [spec.text for spec in outcome.new]
        embedded(0, len(texts))
        parts = []
        for start in range(0, len(texts), EMBED_SLICE):
            parts.append(self.embedder.embed(texts[start : start + EMBED_SLICE]))
            embedded(min(start + EMBED_SLICE, len(texts)), len(texts))
        vectors = np.concatenate(parts) if parts else None
        try:
            return self._write(project_id, outcome, vectors, finish)
        except IngestError as exc:
            return self._finish(FileResult(outcome.source.name, FileStatus.FAILED, error=exc.message), finish)


def _project_still_there(db: Session, project_id: int) -> None:
    """An ingestion outlives its request: the project may have been deleted since it started. Its
    id is never given to another project (0008), so finding it means finding the same one. On
    PostgreSQL the row is locked against deletion (FOR KEY SHARE) until this write commits: a
    project deleted meanwhile by another server would otherwise fail the inserts on its key."""
    if db.get(Project, project_id, with_for_update={"read": True, "key_share": True}) is None:
        raise NotFoundError("project", project_id)


def _document(db: Session, project_id: int, name: str, *, lock: bool = False) -> Document | None:
    """The project's document named ``name``. ``lock``: in a write about to insert or change it,
    writers of the same name take turns (PostgreSQL; app/db/locks.py), so two servers given the same
    upload at once store one document."""
    if lock:
        locks.take_turns(db, "document", f"{project_id}/{name}")
    return db.scalar(select(Document).where(Document.project_id == project_id, Document.name == name))


def _same(doc: Document, content_hash: str) -> bool:
    return doc.content_hash == content_hash and doc.status is DocumentStatus.READY


def _chunk_hashes(db: Session, document_id: int) -> list[tuple[int, str]]:
    rows = db.execute(
        select(Chunk.id, Chunk.content_hash).where(Chunk.document_id == document_id).order_by(Chunk.ordinal)
    )
    return [(int(cid), str(h)) for cid, h in rows]


def _diff(
    source: Source,
    data: bytes,
    content_hash: str,
    kind: DocumentKind,
    specs: Sequence[ChunkSpec],
    existing: Document | None,
    old_chunks: list[tuple[int, str]],
) -> _Plan:
    available: dict[str, list[int]] = {}
    for cid, digest in old_chunks:
        available.setdefault(digest, []).append(cid)
    reuse: dict[int, int] = {}
    new: list[ChunkSpec] = []
    for spec in specs:
        ids = available.get(spec.content_hash)
        if ids:
            reuse[spec.ordinal] = ids.pop(0)
        else:
            new.append(spec)
    vanished = [cid for ids in available.values() for cid in ids]
    return _Plan(source, data, content_hash, kind, list(specs), existing, reuse, vanished, new)


def _position(spec: ChunkSpec) -> dict[str, object]:
    return {
        "ordinal": spec.ordinal,
        "char_start": spec.char_start,
        "char_end": spec.char_end,
        "line_start": spec.line_start,
        "line_end": spec.line_end,
        "page": spec.page,
        "heading_path": spec.heading_path,
    }


def _fields(spec: ChunkSpec) -> dict[str, object]:
    return {**_position(spec), "text": spec.text, "content_hash": spec.content_hash, "token_count": spec.token_count}
