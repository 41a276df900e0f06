"""Per-request context: the container plus what is scoped to one request (DataLoaders, request id)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from app.container import Container
from app.graphql.loaders import Loaders


class Context(BaseContext):
    def __init__(self, container: Container) -> None:
        super().__init__()
        self.container = container
        self.loaders = Loaders(container)
        self.request_id = uuid.uuid4().hex[:12]
        self.connection_params: dict[str, Any] | None = None


Info = StrawberryInfo[Context, Any]


def context_getter(current: Callable[[], Container]) -> Callable[[], Awaitable[Context]]:
    """A FastAPI dependency that builds a fresh Context for each request or websocket."""

    async def get_context() -> Context:
        return Context(current())

    return get_context
