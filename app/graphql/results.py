"""Union result types and the helper that turns service errors into them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
import strawberry

from app.errors import RagchatError
from app.graphql import types
from app.graphql.connections import PAGE_OR_MISTAKE
from app.graphql.errors import (
    BusyError,
    ConflictError,
    NotFoundError,
    ProviderError,
    StorageError,
    ValidationError,
    parse_id,
    to_graphql,
)
from app.graphql.search_types import SearchResults

T = TypeVar("T")


@strawberry.type(description="The thing was deleted.")
class Deleted:
    id: strawberry.ID


@strawberry.type
class FileOutcome:
    name: str
    status: str = strawberry.field(description="added, unchanged, updated or failed")
    document: types.Document | None
    chunks: int
    embedded: int
    error: str | None


@strawberry.type(description="What happened to each uploaded file.")
class UploadReport:
    files: list[FileOutcome]
    added: int
    updated: int
    unchanged: int
    failed: int
    seconds: float


ProjectResult = Annotated[types.Project | NotFoundError | ValidationError, strawberry.union("ProjectResult")]
ProjectMutationResult = Annotated[
    types.Project | NotFoundError | ValidationError | ConflictError | StorageError,
    strawberry.union("ProjectMutationResult"),
]
DeleteResult = Annotated[Deleted | NotFoundError | ValidationError | StorageError, strawberry.union("DeleteResult")]
DocumentResult = Annotated[types.Document | NotFoundError | ValidationError, strawberry.union("DocumentResult")]
UploadResult = Annotated[
    UploadReport | NotFoundError | ValidationError | ConflictError | ProviderError | StorageError,
    strawberry.union("UploadResult"),
]
ChatSessionResult = Annotated[
    types.ChatSession | NotFoundError | ValidationError | StorageError, strawberry.union("ChatSessionResult")
]
MessageResult = Annotated[
    types.ChatMessage | NotFoundError | ValidationError | BusyError | ConflictError | StorageError,
    strawberry.union("MessageResult"),
]
ProjectConnectionResult = Annotated[
    types.ProjectConnection | ValidationError,
    strawberry.union("ProjectConnectionResult", description=PAGE_OR_MISTAKE),
]
ChatSessionConnectionResult = Annotated[
    types.ChatSessionConnection | ValidationError,
    strawberry.union("ChatSessionConnectionResult", description=PAGE_OR_MISTAKE),
]
SearchResult = Annotated[
    SearchResults | NotFoundError | ValidationError | ConflictError | ProviderError,
    strawberry.union("SearchResult"),
]


async def call(fn: Callable[[], T], *, raising: tuple[type[RagchatError], ...] = ()) -> Any:
    """Run a blocking service call in a worker thread; expected errors become schema types.
    (Typed Any: each resolver's union declares which of them it can return.) Errors in ``raising``
    are ones the resolver's union has no member for: they stay GraphQL errors, message and all."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except raising:
        raise
    except RagchatError as exc:
        return to_graphql(exc)


def deleting(delete: Callable[[int], None], ident: strawberry.ID, field: str = "id") -> Callable[[], Deleted]:
    def run() -> Deleted:
        delete(parse_id(ident, field))
        return Deleted(id=ident)

    return run
