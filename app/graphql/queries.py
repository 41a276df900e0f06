"""Query root."""

from __future__ import annotations

import anyio.to_thread
import strawberry

from app.graphql import types
from app.graphql.context import Info
from app.services import health


@strawberry.type
class Query:
    @strawberry.field(description="Server health: versions and migration state.")
    async def health(self, info: Info) -> types.Health:
        found = await anyio.to_thread.run_sync(health.check, info.context.container.db)
        return types.Health(**vars(found))
