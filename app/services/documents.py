"""Documents of a knowledge base: ingest, list, look up, delete."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from app.db.database import Database
from app.db.models import Chunk, Document
from app.db.rows import require
from app.errors import IngestError, ValidationError
from app.llm.base import Embedder
from app.rag.ingest.parsing import detect_kind
from app.rag.ingest.pipeline import FileResult, Ingestor, IngestSummary, Source
from app.rag.sanitize import clean_name
from app.services import projects
from app.services.pages import Order, Page, PageRequest, pages
from app.settings import IngestSettings


def get(store: Database, document_id: int) -> Document:
    with store.read() as db:
        return require(db, Document, document_id)


def list_for(store: Database, project_id: int) -> list[Document]:
    with store.read() as db:
        return list(db.scalars(select(Document).where(Document.project_id == project_id).order_by(Document.name)))


# A knowledge base's documents by name (unique in it), a document's chunks in document order.
ORDER = Order((Document.name, Document.id))
CHUNK_ORDER = Order((Chunk.ordinal, Chunk.id))


def pages_for(store: Database, project_ids: list[int], request: PageRequest) -> list[Page[Document]]:
    """The same page of each knowledge base's documents, by name, in one statement."""
    with store.read() as db:
        return pages(db, Document, ORDER, request, Document.project_id, project_ids)


def chunk_pages(store: Database, document_ids: list[int], request: PageRequest) -> list[Page[Chunk]]:
    """The same page of each document's chunks, in document order, in one statement."""
    with store.read() as db:
        return pages(db, Chunk, CHUNK_ORDER, request, Chunk.document_id, document_ids)


def delete(store: Database, document_id: int) -> Document:
    """Delete a document; its chunks, vectors and keyword index entries go with it (cascade + triggers).
    Returns the row as it was."""
    with store.write() as db:
        doc = require(db, Document, document_id)
        db.delete(doc)
        return doc


MAX_NAME = 255


def clean_upload_name(name: str, field: str) -> str:
    """A document name from a client: the file's base name, never a path, without control or
    bidi characters (see :func:`app.rag.sanitize.clean_name`)."""
    base = clean_name(name).replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or base in {".", ".."}:
        raise ValidationError(field, "needs a file name")
    if len(base) > MAX_NAME:
        raise ValidationError(field, f"file name is longer than {MAX_NAME} characters")
    return base


def check_uploads(files: list[tuple[str, bytes]], max_bytes: int) -> list[tuple[str, bytes]]:
    """Reject the whole request (nothing written) when a file is too big, unnamed or of a type no
    parser reads. Files whose content then fails to parse are reported one by one."""
    if not files:
        raise ValidationError("files", "no files were sent")
    checked: list[tuple[str, bytes]] = []
    for i, (name, data) in enumerate(files):
        field = f"files[{i}]"
        clean = clean_upload_name(name, field)
        if len(data) > max_bytes:
            raise ValidationError(field, f"{clean} is {len(data)} bytes; the upload limit is {max_bytes} bytes")
        try:
            detect_kind(clean, data[:4096])
        except IngestError as exc:
            raise ValidationError(field, f"{clean}: {exc.message}") from None
        checked.append((clean, data))
    return checked


def ingest(
    store: Database,
    embedder: Embedder,
    settings: IngestSettings,
    project_id: int,
    sources: list[Source],
    progress: Callable[[FileResult], None] | None = None,
) -> IngestSummary:
    """Add or update ``sources`` in a knowledge base (unchanged files are skipped)."""
    projects.get(store, project_id)
    return Ingestor(store, embedder, settings).ingest(project_id, sources, progress)


def ingest_uploads(
    store: Database,
    embedder: Embedder,
    settings: IngestSettings,
    max_upload_bytes: int,
    project_id: int,
    files: list[tuple[str, bytes]],
) -> IngestSummary:
    """Uploaded files (name, bytes), checked first: names, sizes, kinds."""
    files = check_uploads(files, max_upload_bytes)
    return ingest(store, embedder, settings, project_id, [Source.from_bytes(name, data) for name, data in files])


def get_many(store: Database, ids: list[int]) -> list[Document]:
    if not ids:
        return []
    with store.read() as db:
        return list(db.scalars(select(Document).where(Document.id.in_(ids))))
