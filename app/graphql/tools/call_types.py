"""Tool calls in the schema: the calls a model made while writing an answer (stored, with the user's
decision on previews), the chat subscription's tool events, the trace's tool entry, and a tool's
test run."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app.graphql.enums import expose
from app.graphql.errors import ConflictError, ForbiddenError, NotFoundError, StorageError, ValidationError
from app.services.chat.trace_model import TOOL_ARGUMENTS
from app.services.records import StoredToolCall, ToolCallStatus

expose(
    ToolCallStatus,
    "Where a model's tool call is in its life.",
    {
        ToolCallStatus.EXECUTED: "It ran while the answer was written and returned a result.",
        ToolCallStatus.FAILED: "It was refused or failed while the answer was written (unknown tool, invalid "
        "arguments, a limit, a timeout, the tool's error): `error` says why; the model was told.",
        ToolCallStatus.PREVIEW: "Its tool changes the world, so it did not run: `preview` shows what it would do. "
        "Waiting for approveToolCall or rejectToolCall.",
        ToolCallStatus.RUNNING: "Approved, and running now (it runs once, however often it is approved).",
        ToolCallStatus.APPROVED: "Approved and run once: `result`, or `error` when that one attempt failed.",
        ToolCallStatus.REJECTED: "The user rejected it: it never ran.",
    },
)


@strawberry.type(description="A tool call a model made while writing an answer, as stored.")
class ToolCall:
    id: strawberry.ID = strawberry.field(description="Its id (approveToolCall / rejectToolCall take it).")
    message_id: strawberry.ID = strawberry.field(description="The answer whose writing made the call.")
    session_id: strawberry.ID = strawberry.field(description="Its chat session.")
    position: int = strawberry.field(description="Its place among the answer's calls, from 0, in the order made.")
    call_id: str = strawberry.field(description="The model's id for the call.")
    tool_id: strawberry.ID | None = strawberry.field(
        description="The tool called; null when none has that name or it was deleted since."
    )
    tool_name: str = strawberry.field(description="The tool's name as the model called it.")
    arguments: str = strawberry.field(description=TOOL_ARGUMENTS)
    status: ToolCallStatus = strawberry.field(description="Where it is in its life.")
    ok: bool = strawberry.field(description="It ran and returned a result (EXECUTED, or APPROVED without error).")
    result: str | None = strawberry.field(
        description="What it returned (cut to the server's cap; `resultSize` is the whole size); null when it "
        "did not run or failed."
    )
    result_size: int = strawberry.field(description="The result's size in characters, before any cut.")
    error: str | None = strawberry.field(description="Why it failed or was refused; null when it did not fail.")
    ms: float | None = strawberry.field(description="How long it ran, in milliseconds; null when it did not run.")
    preview: str | None = strawberry.field(
        description="What it would do, shown before approval: its dry run's output or a description of the "
        "request; null for a call that needed no approval."
    )
    created_at: datetime = strawberry.field(description="When the model made it.")
    decided_at: datetime | None = strawberry.field(description="When it was approved or rejected; else null.")
    finished_at: datetime | None = strawberry.field(description="When it finished running; else null.")
    outcome_message_id: strawberry.ID | None = strawberry.field(
        description="The assistant message that told the conversation how an approved call ended; else null."
    )

    @classmethod
    def of(cls, row: StoredToolCall) -> ToolCall:
        ok = row.status is ToolCallStatus.EXECUTED or (row.status is ToolCallStatus.APPROVED and row.error is None)
        return cls(
            id=strawberry.ID(str(row.id)),
            message_id=strawberry.ID(str(row.message_id)),
            session_id=strawberry.ID(str(row.session_id)),
            position=row.position,
            call_id=row.call_id,
            tool_id=strawberry.ID(str(row.tool_id)) if row.tool_id is not None else None,
            tool_name=row.tool_name,
            arguments=row.arguments,
            status=row.status,
            ok=ok,
            result=row.result,
            result_size=row.result_chars,
            error=row.error,
            ms=row.ms,
            preview=row.preview,
            created_at=row.created_at,
            decided_at=row.decided_at,
            finished_at=row.finished_at,
            outcome_message_id=strawberry.ID(str(row.outcome_message_id)) if row.outcome_message_id else None,
        )


# -- the chat subscription's events ---------------------------------------------------------------
@strawberry.type(description="The model called a tool: it runs now (ChatToolResult follows) or is previewed.")
class ChatToolCall:
    message_id: strawberry.ID = strawberry.field(description="The answer's message, being written.")
    call_id: str = strawberry.field(description="The model's id for the call (its ChatToolResult has the same).")
    name: str = strawberry.field(description="The tool's name as the model called it.")
    arguments: str = strawberry.field(description=TOOL_ARGUMENTS)


@strawberry.type(description="A tool call ended; its result went back to the model.")
class ChatToolResult:
    message_id: strawberry.ID = strawberry.field(description="The answer's message, being written.")
    call_id: str = strawberry.field(description="The model's id for the call.")
    tool_call_id: strawberry.ID | None = strawberry.field(
        description="The stored ToolCall; null when it could not be stored (the session was deleted meanwhile)."
    )
    name: str = strawberry.field(description="The tool's name as the model called it.")
    ok: bool = strawberry.field(description="It returned a result (false: `error` says why; the model was told).")
    error: str | None = strawberry.field(description="Why it failed or was refused; null when ok.")
    summary: str = strawberry.field(description="The start of its result (or error), at most 300 characters.")
    size: int = strawberry.field(description="The whole result's size in characters.")
    truncated: bool = strawberry.field(description="The model read it cut to the server's cap.")
    ms: float = strawberry.field(description="How long it took, in milliseconds.")


@strawberry.type(
    description="The model called a tool that changes the world: it did not run. This is what it would do; the "
    "user approves (approveToolCall) or rejects (rejectToolCall) the stored call `toolCallId`."
)
class ChatToolPreview:
    message_id: strawberry.ID = strawberry.field(description="The answer's message, being written.")
    call_id: str = strawberry.field(description="The model's id for the call.")
    tool_call_id: strawberry.ID | None = strawberry.field(
        description="The stored ToolCall to approve or reject; null when it could not be stored."
    )
    name: str = strawberry.field(description="The tool's name.")
    arguments: str = strawberry.field(description="Its arguments (JSON text, valid against the tool's schema).")
    preview: str = strawberry.field(description="What would happen: its dry run's output, or the request described.")


# -- a test run -----------------------------------------------------------------------------------------
@strawberry.type(description="What one run of a tool returned (testTool).")
class ToolTest:
    tool_id: strawberry.ID = strawberry.field(description="The tool run.")
    dry_run: bool = strawberry.field(
        description="The tool changes the world, so only its preview ran (its dry-run request, or none: `output` "
        "describes the request it would send)."
    )
    ok: bool = strawberry.field(description="It returned a result (false: `error` says why).")
    output: str = strawberry.field(
        description="What the model would read (control tokens stripped, cut to the cap), or the error."
    )
    error: str | None = strawberry.field(description="Why it failed; null when ok.")
    size: int = strawberry.field(description="The output's size in characters, before the cap.")
    truncated: bool = strawberry.field(description="`output` was cut to the cap.")
    ms: float = strawberry.field(description="How long it took, in milliseconds.")


ToolCallDecisionResult = Annotated[
    ToolCall | NotFoundError | ForbiddenError | ValidationError | ConflictError | StorageError,
    strawberry.union(
        "ToolCallDecisionResult",
        description="The call as decided (and, when approved, as it ran), or why not: an unknown id (NotFoundError), "
        "a call that was no preview (ValidationError), one already decided the other way (ConflictError).",
    ),
]
ToolTestResult = Annotated[
    ToolTest | NotFoundError | ForbiddenError | ValidationError,
    strawberry.union("ToolTestResult", description="The tool's output, or why it could not run."),
]
