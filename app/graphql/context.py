"""Per-request context: the container plus what is scoped to one request (DataLoaders, request id)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from sqlalchemy import select
from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from app.container import Container
from app.db.models import ChatMessage, Chunk
from app.errors import ValidationError
from app.graphql.loaders import Loaders
from app.services import sessions


class Context(BaseContext):
    def __init__(self, container: Container) -> None:
        super().__init__()
        self.container = container
        self.loaders = Loaders(container.db)
        self.request_id = uuid.uuid4().hex[:12]
        self.connection_params: dict[str, Any] | None = None

    def page_size(self, value: int, field: str) -> int:
        limit = self.container.settings.api.max_page_size
        if not 1 <= value <= limit:
            raise ValidationError(field, f"must be between 1 and {limit} (got {value})")
        return value

    async def page_messages(self, session_id: int, last: int, before: object) -> list[ChatMessage]:
        from app.graphql.errors import parse_id

        last = self.page_size(last, "last")
        before_id = parse_id(str(before), "before") if before is not None else None
        return await anyio.to_thread.run_sync(
            lambda: sessions.messages(self.container.db, session_id, limit=last, before_id=before_id)
        )

    async def page_chunks(self, document_id: int, first: int, offset: int) -> list[Chunk]:
        first = self.page_size(first, "first")
        if offset < 0:
            raise ValidationError("offset", "must not be negative")

        def load() -> list[Chunk]:
            with self.container.db.read() as db:
                query = select(Chunk).where(Chunk.document_id == document_id).order_by(Chunk.ordinal)
                return list(db.scalars(query.limit(first).offset(offset)))

        return await anyio.to_thread.run_sync(load)


Info = StrawberryInfo[Context, Any]


def context_getter(current: Callable[[], Container]) -> Callable[[], Awaitable[Context]]:
    """A FastAPI dependency that builds a fresh Context for each request or websocket."""

    async def get_context() -> Context:
        return Context(current())

    return get_context
