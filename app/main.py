"""The ASGI application: FastAPI + Strawberry GraphQL (GraphiQL at /graphql)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from strawberry.fastapi import GraphQLRouter
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from app import __version__
from app.container import Container
from app.graphql.context import context_getter
from app.graphql.schema import build_schema
from app.services import health
from app.settings import Settings

log = logging.getLogger("ragchat")


def create_app(settings: Settings, container: Container | None = None) -> FastAPI:
    """Build the app. The container (store, providers) is made in the lifespan unless one is given,
    in which case the caller owns it (tests inject fakes this way)."""
    slot: list[Container] = [container] if container is not None else []

    def current() -> Container:
        return slot[0]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = not slot
        if owned:
            slot.append(Container.build(settings))
        state = health.check(current().db)
        if not state.ok:
            log.warning(
                "database is at revision %s, the code expects %s: run `ragchat migrate`",
                state.migration_revision,
                state.head_revision,
            )
        try:
            yield
        finally:
            if owned:
                slot.pop().close()

    app = FastAPI(title="ragchat", version=__version__, lifespan=lifespan)
    graphql = GraphQLRouter(
        build_schema(),
        context_getter=context_getter(current),
        graphql_ide="graphiql",
        subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
    )
    app.include_router(graphql, prefix="/graphql")

    @app.get("/healthz")
    def healthz() -> dict[str, object]:
        return vars(health.check(current().db))

    return app
