"""Union result types and the helper that turns service errors into them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
import strawberry

from app.errors import RagchatError
from app.errors import StorageError as Unreadable
from app.graphql import types
from app.graphql.connections import PAGE_OR_MISTAKE
from app.graphql.enums import FileStatus, SkipReason
from app.graphql.errors import (
    BusyError,
    ConflictError,
    FetchFailedError,
    ForbiddenError,
    LimitExceededError,
    NotFoundError,
    ProviderError,
    StorageError,
    TooLargeError,
    UnsupportedTypeError,
    UrlRefusedError,
    ValidationError,
    to_graphql,
)
from app.graphql.knowledge.document_types import Document
from app.graphql.knowledge.job_types import IngestionJob
from app.graphql.search.types import SearchResults

T = TypeVar("T")


@strawberry.type(description="The knowledge base was deleted, with its documents, vectors and chat sessions.")
class ProjectDeleted:
    id: strawberry.ID = strawberry.field(
        description="The deleted Project's id: evict `Project:<id>` (and its documents' and chats') from a cache."
    )


@strawberry.type(description="The document was deleted, with its chunks and vectors.")
class DocumentDeleted:
    id: strawberry.ID = strawberry.field(description="The deleted Document's id.")
    project_id: strawberry.ID = strawberry.field(
        description="The knowledge base it belonged to (its documentCount and chunkCount changed)."
    )


@strawberry.type(description="The chat session was deleted, with its messages.")
class ChatSessionDeleted:
    id: strawberry.ID = strawberry.field(description="The deleted ChatSession's id.")
    project_id: strawberry.ID = strawberry.field(description="The knowledge base it belonged to.")


@strawberry.type(description="What an upload did with one file.")
class FileOutcome:
    name: str = strawberry.field(description="The file's name, as stored (the document's name).")
    status: FileStatus = strawberry.field(description="Added, unchanged, updated, skipped or failed.")
    document: Document | None = strawberry.field(
        description="The stored document. For a failed file: the earlier version it leaves in place (READY), "
        "else a record of the failure (status FAILED); null when nothing could be stored (an unreadable file "
        "or name, a failed write)."
    )
    chunks: int = strawberry.field(
        description="The document's chunks after the upload (a failed file: its earlier version's, else 0)."
    )
    embedded: int = strawberry.field(
        description="Chunks embedded by this upload: new or changed ones only, unchanged text keeps its vector."
    )
    error: str | None = strawberry.field(
        description="Why the file failed or was skipped; null unless status is FAILED or SKIPPED."
    )
    skip_reason: SkipReason | None = strawberry.field(description="Why it was skipped; null unless status is SKIPPED.")


@strawberry.type(description="What happened to each uploaded file.")
class UploadReport:
    files: list[FileOutcome] = strawberry.field(description="One outcome per file, in the order they were sent.")
    added: int = strawberry.field(description="Files with status ADDED.")
    updated: int = strawberry.field(description="Files with status UPDATED.")
    unchanged: int = strawberry.field(description="Files with status UNCHANGED.")
    skipped: int = strawberry.field(description="Files with status SKIPPED (each listed in `files` with its reason).")
    failed: int = strawberry.field(description="Files with status FAILED.")
    seconds: float = strawberry.field(description="Wall time of the whole upload, in seconds (3 decimals).")


ProjectResult = Annotated[
    types.Project | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("ProjectResult", description="A knowledge base, or why not."),
]
ProjectMutationResult = Annotated[
    types.Project | NotFoundError | ForbiddenError | ValidationError | ConflictError | StorageError,
    strawberry.union(
        "ProjectMutationResult", description="The knowledge base as created or changed, or why nothing was written."
    ),
]
DeleteProjectResult = Annotated[
    ProjectDeleted | NotFoundError | ForbiddenError | ValidationError | StorageError,
    strawberry.union("DeleteProjectResult", description="What was deleted, or why nothing was."),
]
DeleteDocumentResult = Annotated[
    DocumentDeleted | NotFoundError | ForbiddenError | ValidationError | StorageError,
    strawberry.union("DeleteDocumentResult", description="What was deleted, or why nothing was."),
]
DeleteChatSessionResult = Annotated[
    ChatSessionDeleted | NotFoundError | ForbiddenError | ValidationError | StorageError,
    strawberry.union("DeleteChatSessionResult", description="What was deleted, or why nothing was."),
]
DocumentResult = Annotated[
    Document | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("DocumentResult", description="A document, or why not."),
]
UploadResult = Annotated[
    UploadReport | NotFoundError | ForbiddenError | ValidationError | ConflictError | ProviderError | StorageError,
    strawberry.union(
        "UploadResult",
        description="What happened to each file, or why the upload was refused as a whole (nothing written).",
    ),
]
UploadJobResult = Annotated[
    IngestionJob | NotFoundError | ForbiddenError | ValidationError | LimitExceededError | StorageError,
    strawberry.union(
        "UploadJobResult",
        description="The job that ingests the files, queued (or ended, with wait), or why the upload was refused "
        "as a whole (nothing stored).",
    ),
]
IngestionJobResult = Annotated[
    IngestionJob | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("IngestionJobResult", description="An ingestion job, or why not."),
]
JobChangeResult = Annotated[
    IngestionJob | NotFoundError | ForbiddenError | ValidationError | ConflictError | LimitExceededError | StorageError,
    strawberry.union(
        "JobChangeResult",
        description="The job after the change, or why nothing changed (ConflictError: no chosen file could be; "
        "LimitExceededError: a retry would pass a queue's limit).",
    ),
]
UrlDocumentResult = Annotated[
    IngestionJob
    | NotFoundError
    | ForbiddenError
    | ValidationError
    | UrlRefusedError
    | FetchFailedError
    | TooLargeError
    | UnsupportedTypeError
    | LimitExceededError
    | StorageError,
    strawberry.union(
        "UrlDocumentResult",
        description="The job ingesting the fetched document (queued, or ended with wait), or why nothing was "
        "fetched or stored.",
    ),
]
ChatSessionResult = Annotated[
    types.ChatSession | NotFoundError | ForbiddenError | ValidationError | StorageError,
    strawberry.union("ChatSessionResult", description="A chat session, or why not."),
]
MessageResult = Annotated[
    types.ChatMessage | NotFoundError | ForbiddenError | ValidationError | BusyError | ConflictError | StorageError,
    strawberry.union("MessageResult", description="A message, or why not."),
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
    SearchResults | NotFoundError | ForbiddenError | ValidationError | ConflictError | ProviderError | BusyError,
    strawberry.union(
        "SearchResult",
        description="What a search found, or why it could not run (BusyError: a preview that calls the chat "
        "model found no generation slot free in time).",
    ),
]


# For unions with no StorageError: an unreadable database is a GraphQL error there, not a member.
UNREADABLE = (Unreadable,)


async def call(fn: Callable[[], T], *, raising: tuple[type[RagchatError], ...] = ()) -> Any:
    """Run a blocking service call in a worker thread; expected errors become schema types.
    (Typed Any: each resolver's union declares which of them it can return.) Errors in ``raising``
    are ones the resolver's union has no member for: they stay GraphQL errors, message and all."""
    return await settle(anyio.to_thread.run_sync(fn), raising=raising)


async def settle(work: Awaitable[T], *, raising: tuple[type[RagchatError], ...] = ()) -> Any:
    """Await a service call; expected errors become schema types, as :func:`call`'s do."""
    try:
        return await work
    except raising:
        raise
    except RagchatError as exc:
        return to_graphql(exc)
