"""Per-request context: the container plus anything scoped to one request (DataLoaders)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from app.container import Container


class Context(BaseContext):
    def __init__(self, container: Container) -> None:
        super().__init__()
        self.container = container


Info = StrawberryInfo[Context, Any]


def context_getter(current: Callable[[], Container]) -> Callable[[], Awaitable[Context]]:
    """A FastAPI dependency that builds a fresh Context for each request or websocket."""

    async def get_context() -> Context:
        return Context(current())

    return get_context
