"""Documents of a knowledge base: list, look up, delete."""

from __future__ import annotations

from sqlalchemy import select

from app.db.database import Database
from app.db.models import Document
from app.errors import NotFoundError


def get(store: Database, document_id: int) -> Document:
    with store.read() as db:
        doc = db.get(Document, document_id)
    if doc is None:
        raise NotFoundError("document", document_id)
    return doc


def list_for(store: Database, project_id: int) -> list[Document]:
    with store.read() as db:
        return list(db.scalars(select(Document).where(Document.project_id == project_id).order_by(Document.name)))


def delete(store: Database, document_id: int) -> None:
    """Delete a document; its chunks, vectors and keyword index entries go with it (cascade + triggers)."""
    with store.write() as db:
        doc = db.get(Document, document_id)
        if doc is None:
            raise NotFoundError("document", document_id)
        db.delete(doc)
