"""What the services hand to their callers besides their own value types: the rows they read and the
enums of those rows' columns.

A row is an ORM instance whose transaction has ended (the store does not expire it on commit): a
value to read, never one to load more from or to write back — every change goes through a service.
Callers above the services (the GraphQL types) name these types from here, never from ``app.db``.
"""

from __future__ import annotations

from app.db.enums import (
    CitationKind,
    DocumentStatus,
    HttpMethod,
    ItemState,
    JobOrigin,
    MemberRole,
    MessageStatus,
    Role,
    ToolCallStatus,
    ToolKind,
)
from app.db.models import (
    ChatMessage,
    ChatSession,
    Chunk,
    Citation,
    Document,
    IngestionItem,
    IngestionJob,
    Project,
    StoredToolCall,
    Tool,
    User,
)

__all__ = [
    "ChatMessage",
    "ChatSession",
    "Chunk",
    "Citation",
    "CitationKind",
    "Document",
    "DocumentStatus",
    "HttpMethod",
    "IngestionItem",
    "IngestionJob",
    "ItemState",
    "JobOrigin",
    "MemberRole",
    "MessageStatus",
    "Project",
    "Role",
    "StoredToolCall",
    "Tool",
    "ToolCallStatus",
    "ToolKind",
    "User",
]
