"""Per-request context: the container plus what is scoped to one request (DataLoaders, request id)."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import HTTPConnection
from strawberry.fastapi import BaseContext
from strawberry.types import Info as StrawberryInfo

from app import logs
from app.container import Container
from app.graphql.loaders import Loaders
from app.services.people.access import Caller


class Context(BaseContext):
    def __init__(self, container: Container, caller: Caller | None = None) -> None:
        super().__init__()
        self.container = container
        # Who is asking (app/services/people/access.py): named by the perimeter for HTTP, at
        # connection_init for a websocket. None only before a websocket's connection_init.
        self.caller = caller
        self.loaders = Loaders(container, lambda: self.caller or Caller.anonymous())
        # The id app/request_log.py gave this request or websocket, so what a client is shown
        # ("Unexpected error (request ...)") finds the request's log lines.
        self.request_id = logs.current_request_id() or uuid.uuid4().hex[:12]
        self.connection_params: dict[str, Any] | None = None


Info = StrawberryInfo[Context, Any]


def container_of(connection: HTTPConnection) -> Container:
    """The process's container, put in ``app.state`` by the lifespan (app/main.py)."""
    container = getattr(connection.app.state, "container", None)
    if not isinstance(container, Container):
        raise RuntimeError("no container in app.state: the app is used outside its lifespan")
    return container


async def get_context(connection: HTTPConnection) -> Context:
    """Strawberry's context getter, a FastAPI dependency: a fresh Context for each request or websocket."""
    caller = connection.scope.get("state", {}).get("caller")
    return Context(container_of(connection), caller if isinstance(caller, Caller) else None)


def caller_of(info: Info) -> Caller:
    """The caller of this operation; anonymous if none was named (never more than that)."""
    return info.context.caller or Caller.anonymous()
