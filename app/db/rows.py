"""A row by its primary key, or the NotFoundError that names what is missing: the one check every
service makes before it reads or changes a row it was given the id of."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy.orm import Session

from app.db.models import (
    Base,
    ChatMessage,
    ChatSession,
    Document,
    IngestionJob,
    Project,
    StoredToolCall,
    Tool,
)
from app.errors import NotFoundError

# What a NotFoundError calls each kind of row ("chat session 7 not found"); the API shows it as `kind`.
KINDS: dict[type[Base], str] = {
    Project: "project",
    Document: "document",
    ChatSession: "chat session",
    ChatMessage: "message",
    Tool: "tool",
    StoredToolCall: "tool call",
    IngestionJob: "ingestion job",
}

Row = TypeVar("Row", bound=Base)


def require(db: Session, model: type[Row], ident: int) -> Row:
    """The row of ``model`` with primary key ``ident``, in the caller's transaction; raises
    :class:`NotFoundError` when there is none."""
    row = db.get(model, ident)
    if row is None:
        raise NotFoundError(KINDS[model], ident)
    return row
