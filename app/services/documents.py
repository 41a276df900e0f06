"""Documents of a knowledge base: ingest, list, look up, delete."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select

from app.db.database import Database
from app.db.enums import MemberRole
from app.db.models import Chunk, Document
from app.errors import IngestError, ValidationError
from app.llm.base import Embedder
from app.rag.ingest.parsing import detect_kind
from app.rag.ingest.pipeline import FileResult, Ingestor, IngestSummary, Source
from app.rag.ingest.tags import counts_of, metadata_changed, replace_tags, tags_of
from app.rag.sanitize import clean_name
from app.rag.search.document_filter import tags_problems
from app.services.pages import Order, Page, PageRequest, pages
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
from app.settings import IngestSettings


def get(store: Database, document_id: int, *, caller: Caller = THE_SERVER) -> Document:
    with store.read() as db:
        return access.require_document(db, caller, document_id)


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


def delete(store: Database, document_id: int, *, caller: Caller = THE_SERVER) -> Document:
    """Delete a document (an editor of its knowledge base may); its chunks, vectors and keyword
    index entries go with it (cascade + triggers). Returns the row as it was."""
    with store.write() as db:
        doc = access.require_document(db, caller, document_id, MemberRole.EDITOR)
        db.delete(doc)
        return doc


def check_tags(tags: list[str], field: str = "tags") -> None:
    """Refuse (ValidationError, every problem at once) tags a document cannot have: the rules of
    setDocumentTags, addDocument and uploadDocuments alike."""
    if problems := tags_problems(tags, field):
        (first, message), *more = problems
        raise ValidationError(first, message, more=more)


def set_tags(store: Database, document_id: int, tags: list[str], *, caller: Caller = THE_SERVER) -> Document:
    """Replace a document's free tags (an editor of its knowledge base may); returns the document."""
    check_tags(tags)
    with store.write() as db:
        doc = access.require_document(db, caller, document_id, MemberRole.EDITOR)
        replace_tags(db, doc.id, tags)
        return doc


def set_metadata(store: Database, document_id: int, *, tags: list[str] | None, modified_at: datetime | None) -> None:
    """A document's tags (None: as they are) and when its file last changed (None: as it is), for the
    server's own commands (`ragchat ingest --tag`, the file's mtime); tags validated first."""
    if tags is not None:
        check_tags(tags)
    with store.write() as db:
        doc = db.get(Document, document_id)
        if doc is None:
            return
        if modified_at is not None:
            doc.modified_at = modified_at
            metadata_changed(db, doc.id)
        if tags is not None:
            replace_tags(db, doc.id, tags)


def tags_by_document(store: Database, document_ids: list[int]) -> list[list[str]]:
    """Each document's tags, sorted, in the order of ``document_ids``."""
    with store.read() as db:
        found = tags_of(db, document_ids)
    return [found.get(i, []) for i in document_ids]


def tag_counts(store: Database, project_ids: list[int]) -> list[list[tuple[str, int]]]:
    """Each knowledge base's tags (by tag) with how many of its documents have each, in the order of ``project_ids``."""
    with store.read() as db:
        found = counts_of(db, project_ids)
    return [found.get(i, []) for i in project_ids]


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
    *,
    caller: Caller = THE_SERVER,
) -> IngestSummary:
    """Add or update ``sources`` in a knowledge base (unchanged files are skipped); an editor of it may."""
    with store.read() as db:
        access.require_project(db, caller, project_id, MemberRole.EDITOR)
    return Ingestor(store, embedder, settings).ingest(project_id, sources, progress)


def ingest_uploads(
    store: Database,
    embedder: Embedder,
    settings: IngestSettings,
    max_upload_bytes: int,
    project_id: int,
    files: list[tuple[str, bytes]],
    *,
    tags: list[str] | None = None,
    modified_at: datetime | None = None,
    caller: Caller = THE_SERVER,
) -> IngestSummary:
    """Uploaded files (name, bytes), checked first: names, sizes, kinds, tags; each gets ``tags``
    (None: its own kept) and ``modified_at`` (None: not known)."""
    if tags is not None:
        check_tags(tags)
    files = check_uploads(files, max_upload_bytes)
    kept = tuple(tags) if tags is not None else None
    sources = [Source.from_bytes(name, data, modified_at=modified_at, tags=kept) for name, data in files]
    return ingest(store, embedder, settings, project_id, sources, caller=caller)


def get_many(store: Database, ids: list[int], *, caller: Caller = THE_SERVER) -> list[Document]:
    """The documents of ``ids`` the caller may read (in knowledge bases they see)."""
    if not ids:
        return []
    with store.read() as db:
        query = select(Document).where(Document.id.in_(ids))
        if (visible := access.visible_projects(db, caller)) is not None:
            query = query.where(Document.project_id.in_(visible))
        return list(db.scalars(query))
