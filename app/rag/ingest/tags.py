"""A document's free tags: replaced as a whole (at upload, by ``ragchat ingest --tag``, or later)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from app.db.models import Document, DocumentTag


def replace_tags(db: Session, document_id: int, tags: Iterable[str]) -> list[str]:
    """Make ``tags`` (already validated) the document's tags; returns them sorted and distinct."""
    wanted = sorted(set(tags))
    metadata_changed(db, document_id)
    # A delete then inserts, flushed in that order: the ORM would insert a kept tag before deleting it.
    db.execute(delete(DocumentTag).where(DocumentTag.document_id == document_id))
    db.add_all(DocumentTag(document_id=document_id, tag=tag) for tag in wanted)
    db.flush()
    return wanted


def metadata_changed(db: Session, document_id: int) -> None:
    """Count a change of the document's tags or dates in its knowledge base's metadata revision, so
    no search uses chunks a filter selected before it (app/rag/search/document_filter.py)."""
    db.execute(
        text(
            "UPDATE projects SET metadata_revision = metadata_revision + 1 "
            "WHERE id = (SELECT project_id FROM documents WHERE id = :d)"
        ),
        {"d": document_id},
    )


def tags_of(db: Session, document_ids: Iterable[int]) -> dict[int, list[str]]:
    """Each document's tags, sorted (documents without tags are left out)."""
    ids = list(document_ids)
    if not ids:
        return {}
    out: dict[int, list[str]] = {}
    rows = db.execute(
        select(DocumentTag.document_id, DocumentTag.tag)
        .where(DocumentTag.document_id.in_(ids))
        .order_by(DocumentTag.document_id, DocumentTag.tag)
    ).all()
    for document_id, tag in rows:
        out.setdefault(int(document_id), []).append(str(tag))
    return out


def counts_of(db: Session, project_ids: Iterable[int]) -> dict[int, list[tuple[str, int]]]:
    """Each knowledge base's tags with how many of its documents have each, by tag (none: left out)."""
    ids = list(project_ids)
    if not ids:
        return {}
    rows = db.execute(
        select(Document.project_id, DocumentTag.tag, func.count())
        .join(Document, Document.id == DocumentTag.document_id)
        .where(Document.project_id.in_(ids))
        .group_by(Document.project_id, DocumentTag.tag)
        .order_by(Document.project_id, DocumentTag.tag)
    ).all()
    out: dict[int, list[tuple[str, int]]] = {}
    for project_id, tag, count in rows:
        out.setdefault(int(project_id), []).append((str(tag), int(count)))
    return out
