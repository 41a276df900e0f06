"""The values of the ORM's enumerated columns, one ``StrEnum`` each: the one definition that the
models' CHECK constraints, the services and GraphQL's enums (same names, same order) are made from.

A member is its stored string (``MessageStatus.COMPLETE == "complete"``), so rows written before
these existed, raw SQL and JSON all read the same.
"""

from __future__ import annotations

from enum import StrEnum


class DocumentStatus(StrEnum):
    READY = "ready"
    FAILED = "failed"  # ingestion failed; ``documents.error`` says why


class SpaceStatus(StrEnum):
    """An embedding space's life: built beside the active one by a reindex, then swapped in."""

    BUILDING = "building"
    ACTIVE = "active"  # the one a project searches (at most one per project)
    RETIRED = "retired"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class MessageStatus(StrEnum):
    COMPLETE = "complete"
    STREAMING = "streaming"  # an answer being written (or left so by a stopped process)
    FAILED = "failed"


class CitationKind(StrEnum):
    MODEL = "model"  # the model wrote the [n] marker
    ATTRIBUTED = "attributed"  # ragchat matched the sentence to the source
    EXTRACTED = "extracted"  # the sentence was quoted from the source (an extractive answer)


class ToolKind(StrEnum):
    BUILTIN = "builtin"  # runs inside ragchat (app/services/tools/builtins.py); seeded by migration 0011
    HTTP = "http"  # an operator's endpoint, called with the arguments filled into its URL template
    MCP = "mcp"  # one tool of an MCP server (Streamable HTTP), imported from its listing; migration 0029


class ToolCallStatus(StrEnum):
    """Where a model's tool call is in its life (migration 0017)."""

    EXECUTED = "executed"  # ran during the turn and returned a result
    FAILED = "failed"  # refused or failed during the turn (unknown tool, bad arguments, timeout, error)
    PREVIEW = "preview"  # a side-effecting call: shown to the user, waiting for approve or reject
    RUNNING = "running"  # approved: executing now (claimed once, so it runs once)
    APPROVED = "approved"  # approved and run: its result, or the error of its one attempt
    REJECTED = "rejected"  # the user said no: never ran


class HttpMethod(StrEnum):
    GET = "GET"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"


class JobOrigin(StrEnum):
    """What started an ingestion job."""

    UPLOAD = "upload"  # uploadDocuments: files spooled under the data directory
    CLI = "cli"  # `ragchat ingest`: files read from their paths, in the foreground
    URL = "url"  # a document fetched from an address


class ItemState(StrEnum):
    """Where one file of an ingestion job is. The first three are unfinished (the worker resumes
    them after a restart, from the start); the others are final."""

    QUEUED = "queued"
    PARSING = "parsing"
    EMBEDDING = "embedding"
    READY = "ready"  # its document is stored (or was already, unchanged)
    FAILED = "failed"  # ``error`` says why; retryable
    CANCELLED = "cancelled"  # retryable
    SKIPPED = "skipped"  # deliberately not ingested; ``error`` says why


UNFINISHED_ITEM_STATES = (ItemState.QUEUED, ItemState.PARSING, ItemState.EMBEDDING)
RETRYABLE_ITEM_STATES = (ItemState.FAILED, ItemState.CANCELLED)


class MemberRole(StrEnum):
    """What a person may do in one knowledge base; each role includes the ones below it."""

    VIEWER = "viewer"  # search and chat
    EDITOR = "editor"  # and change its documents
    OWNER = "owner"  # and its settings, its members, and delete it

    @property
    def rank(self) -> int:
        return _MEMBER_RANKS[self]

    def includes(self, other: MemberRole) -> bool:
        return self.rank >= other.rank


_MEMBER_RANKS = {MemberRole.VIEWER: 1, MemberRole.EDITOR: 2, MemberRole.OWNER: 3}
