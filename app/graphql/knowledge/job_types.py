"""Ingestion jobs as GraphQL types: a job, its items (one per file) and their progress."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app.graphql.connections import PAGE_OR_MISTAKE, Connection, Cursor
from app.graphql.context import Info
from app.graphql.enums import FileStatus, ItemState, JobOrigin
from app.graphql.errors import ValidationError
from app.graphql.knowledge.document_types import Document
from app.rag.ingest.pipeline import FileStatus as IngestFileStatus
from app.services import records

JOB_CURSOR = Cursor("IngestionJob", (int,))
UNFINISHED = (ItemState.QUEUED, ItemState.PARSING, ItemState.EMBEDDING)


@strawberry.type(description="One file of an ingestion job and where it is.")
class IngestionItem:
    id: strawberry.ID = strawberry.field(
        description="The item's id (cancelIngestionJob and retryIngestionJob take it)."
    )
    job_id: strawberry.ID = strawberry.field(description="Its job.")
    project_id: strawberry.ID = strawberry.field(description="The knowledge base it goes into.")
    name: str = strawberry.field(description="The file's name, as its document will be named.")
    size_bytes: int = strawberry.field(description="The file's size, in bytes.")
    state: ItemState = strawberry.field(description="Where it is.")
    outcome: FileStatus | None = strawberry.field(
        description="What ingestion did with it once READY (ADDED, UPDATED, UNCHANGED) or FAILED; null before."
    )
    error: str | None = strawberry.field(description="Why it FAILED, was CANCELLED or SKIPPED; null otherwise.")
    chunks_done: int = strawberry.field(description="Its new chunks embedded so far.")
    chunks_total: int = strawberry.field(
        description="Its new chunks to embed (known once parsed; unchanged chunks keep their vectors and do not count)."
    )
    attempts: int = strawberry.field(
        description="How many times the worker started it (a restart or a retry adds one)."
    )
    document_id: strawberry.ID | None = strawberry.field(
        description="The document it stored (or the record of its failure); null until then."
    )
    created_at: datetime = strawberry.field(description="When it was queued.")
    started_at: datetime | None = strawberry.field(description="When the worker last started it.")
    finished_at: datetime | None = strawberry.field(description="When it ended; null while it is unfinished.")

    @classmethod
    def of(cls, row: records.IngestionItem) -> IngestionItem:
        return cls(
            id=strawberry.ID(str(row.id)),
            job_id=strawberry.ID(str(row.job_id)),
            project_id=strawberry.ID(str(row.project_id)),
            name=row.name,
            size_bytes=row.size_bytes,
            state=row.state,
            outcome=IngestFileStatus(row.outcome) if row.outcome else None,
            error=row.error,
            chunks_done=row.chunks_done,
            chunks_total=row.chunks_total,
            attempts=row.attempts,
            document_id=strawberry.ID(str(row.document_id)) if row.document_id else None,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
        )

    @strawberry.field(description="The document it stored; null until then, or once deleted.")
    async def document(self, info: Info) -> Document | None:
        if self.document_id is None:
            return None
        row = await info.context.loaders.document.load(int(self.document_id))
        return Document.of(row) if row is not None else None


@strawberry.type(description="An ingestion job's files counted by where they are.")
class JobProgress:
    total: int = strawberry.field(description="Files in the job.")
    unfinished: int = strawberry.field(description="Files QUEUED, PARSING or EMBEDDING.")
    ready: int = strawberry.field(description="Files READY.")
    failed: int = strawberry.field(description="Files FAILED.")
    cancelled: int = strawberry.field(description="Files CANCELLED.")
    skipped: int = strawberry.field(description="Files SKIPPED.")
    chunks_done: int = strawberry.field(description="New chunks embedded so far, all files together.")
    chunks_total: int = strawberry.field(description="New chunks to embed of the files parsed so far.")


@strawberry.type(
    description="Files to ingest into a knowledge base, from one upload, `ragchat ingest` call or address, "
    "ingested in the background by the server's worker; follow it with the ingestionProgress subscription."
)
class IngestionJob:
    id: strawberry.ID = strawberry.field(description="The job's id.")
    project_id: strawberry.ID = strawberry.field(description="The knowledge base.")
    origin: JobOrigin = strawberry.field(description="What started it.")
    api_key_id: int | None = strawberry.field(
        description="Which of the server's API keys sent it (its position in RAGCHAT_API__API_KEYS, from 1); null "
        "when the server has none or it did not come over the API."
    )
    created_at: datetime = strawberry.field(description="When it was created.")

    @classmethod
    def of(cls, row: records.IngestionJob) -> IngestionJob:
        return cls(
            id=strawberry.ID(str(row.id)),
            project_id=strawberry.ID(str(row.project_id)),
            origin=row.origin,
            api_key_id=row.api_key_id,
            created_at=row.created_at,
        )

    @strawberry.field(description="Its files, in the order they were sent (at most one request's worth).")
    async def items(self, info: Info) -> list[IngestionItem]:
        return [IngestionItem.of(row) for row in await info.context.loaders.job_items.load(int(self.id))]

    @strawberry.field(description="Its files counted by state, and the chunks embedded of those to embed.")
    async def progress(self, info: Info) -> JobProgress:
        rows = await info.context.loaders.job_items.load(int(self.id))
        count = {state: sum(1 for r in rows if r.state == state) for state in ItemState}
        return JobProgress(
            total=len(rows),
            unfinished=sum(count[state] for state in UNFINISHED),
            ready=count[ItemState.READY],
            failed=count[ItemState.FAILED],
            cancelled=count[ItemState.CANCELLED],
            skipped=count[ItemState.SKIPPED],
            chunks_done=sum(r.chunks_done for r in rows),
            chunks_total=sum(r.chunks_total for r in rows),
        )

    @strawberry.field(description="True once every file has ended (READY, FAILED, CANCELLED or SKIPPED).")
    async def finished(self, info: Info) -> bool:
        rows = await info.context.loaders.job_items.load(int(self.id))
        return all(r.state not in UNFINISHED for r in rows)


@strawberry.type(description="A page of a knowledge base's ingestion jobs, newest first.")
class IngestionJobConnection(Connection[IngestionJob]):
    pass


IngestionJobConnectionResult = Annotated[
    IngestionJobConnection | ValidationError,
    strawberry.union("IngestionJobConnectionResult", description=PAGE_OR_MISTAKE),
]
