"""A knowledge base's documents and their chunks as GraphQL types, on their own so that the job types
(an ingestion item names the document it stored) and the knowledge base's type both use them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app.graphql.chat.trace_types import Location
from app.graphql.connections import PAGE_OR_MISTAKE, After, Before, Connection, Cursor, First, Last, paged
from app.graphql.context import Info
from app.graphql.enums import DocumentKind, DocumentStatus
from app.graphql.errors import ValidationError
from app.rag.ingest.parsing import stored_kind
from app.services import records

# Cursors name their list and carry its sort key (the orders are the services': documents.ORDER, ...).
CHUNK_CURSOR = Cursor("Chunk", (int, int))
DOCUMENT_CURSOR = Cursor("Document", (str, int))


@strawberry.type(description="A piece of a document, the unit retrieval finds and answers cite.")
class Chunk:
    id: strawberry.ID = strawberry.field(
        description="The chunk's id (a re-ingest keeps it while its text is unchanged)."
    )
    document_id: strawberry.ID = strawberry.field(description="Its document.")
    ordinal: int = strawberry.field(description="Its position in the document, 0-based.")
    text: str = strawberry.field(description="Its text, as searched and quoted.")
    token_count: int = strawberry.field(description="Its length in the embedder's tokens.")
    location: Location = strawberry.field(description="Where it sits in its document.")

    @classmethod
    def of(cls, row: records.Chunk) -> Chunk:
        loc = Location(
            char_start=row.char_start,
            char_end=row.char_end,
            line_start=row.line_start,
            line_end=row.line_end,
            page=row.page,
            heading_path=row.heading_path,
        )
        return cls(
            id=strawberry.ID(str(row.id)),
            document_id=strawberry.ID(str(row.document_id)),
            ordinal=row.ordinal,
            text=row.text,
            token_count=row.token_count,
            location=loc,
        )


@strawberry.type(description="A page of a document's chunks, in document order.")
class ChunkConnection(Connection[Chunk]):
    pass


ChunkConnectionResult = Annotated[
    ChunkConnection | ValidationError,
    strawberry.union("ChunkConnectionResult", description=PAGE_OR_MISTAKE),
]


@strawberry.type(description="A file in a knowledge base, split into chunks for search.")
class Document:
    id: strawberry.ID = strawberry.field(description="The document's id.")
    project_id: strawberry.ID = strawberry.field(description="The knowledge base it belongs to.")
    name: str = strawberry.field(
        description="Its file name, unique in the knowledge base: uploading the same name again updates it."
    )
    kind: DocumentKind = strawberry.field(description="Which parser read it.")
    size_bytes: int = strawberry.field(description="The uploaded file's size, in bytes.")
    content_hash: str = strawberry.field(description="SHA-256 of the uploaded file, in hex.")
    chunk_count: int = strawberry.field(description="How many chunks it has (0 when it failed).")
    status: DocumentStatus = strawberry.field(description="Whether searches find it.")
    error: str | None = strawberry.field(description="Why its last ingestion failed; null when READY.")
    ingested_at: datetime = strawberry.field(description="When this version was stored.")
    source_url: str | None = strawberry.field(
        description="The URL this version was fetched from, after redirects (addDocumentFromUrl); null for "
        "uploaded files and text."
    )
    modified_at: datetime | None = strawberry.field(
        description="When the file itself last changed, as its uploader or `ragchat ingest` (the file's mtime) "
        "said; null when not known. Document filters' date range reads it, else ingestedAt."
    )

    @strawberry.field(
        description="Its free tags, sorted (set at upload, by `ragchat ingest --tag`, or setDocumentTags)."
    )
    async def tags(self, info: Info) -> list[str]:
        return await info.context.loaders.document_tags.load(int(self.id))

    @classmethod
    def of(cls, row: records.Document) -> Document:
        return cls(
            id=strawberry.ID(str(row.id)),
            project_id=strawberry.ID(str(row.project_id)),
            name=row.name,
            kind=stored_kind(row.kind),
            size_bytes=row.size_bytes,
            content_hash=row.content_hash,
            chunk_count=row.chunk_count,
            status=row.status,
            error=row.error,
            ingested_at=row.ingested_at,
            source_url=row.source_url,
            modified_at=row.modified_at,
        )

    @strawberry.field(description="The document's chunks in document order; the first 50 unless asked otherwise.")
    async def chunks(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> ChunkConnectionResult:
        load = info.context.loaders.chunk_pages.load
        return await paged(
            info,
            ChunkConnection,
            CHUNK_CURSOR,
            lambda request: load((int(self.id), request)),
            Chunk.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )


@strawberry.type(description="A page of a knowledge base's documents, by name.")
class DocumentConnection(Connection[Document]):
    pass


DocumentConnectionResult = Annotated[
    DocumentConnection | ValidationError,
    strawberry.union("DocumentConnectionResult", description=PAGE_OR_MISTAKE),
]
