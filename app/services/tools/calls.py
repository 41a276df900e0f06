"""Stored tool calls (migration 0017): every call a model made while writing an answer, and the
user's decision on the side-effecting ones.

A call is stored as it ends (one short write each), so its id exists while the answer still
streams: a preview can be approved at once. A side-effecting call is stored as ``preview``; the
decision is one conditional UPDATE out of ``preview`` (:func:`claim`, :func:`reject`), so of two
approvals, at once or one after the other, exactly one moves it to ``running`` and runs it; the
other waits for the recorded outcome and returns it. Approval first checks that the preview may
still be approved (app/services/tools/approval.py: not expired, the tool would send the very request
previewed). An approved call's outcome is appended to the conversation as a message (:func:`settle`)
that clients show; the next turn's history gives it to the model as what it is, the tool's output,
fenced (:func:`for_model`), never as the model's own words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update

from app.db.database import Database
from app.db.enums import MessageStatus, Role, ToolCallStatus
from app.db.models import ChatMessage, ChatSession, StoredToolCall, Tool, utcnow
from app.db.rows import require
from app.errors import ConflictError, ValidationError
from app.llm.base import Message
from app.services.people import access
from app.services.people.access import Caller
from app.services.tools.loop import fence

RESULT_MAX = 20_000  # characters of a result kept in the row (result_chars has the whole size)
INTERRUPTED = "interrupted: the server stopped while it ran, so whether it took effect is unknown"
# Calls a regeneration keeps: the user decided them, and the conversation says how they ended.
DECIDED = (ToolCallStatus.RUNNING, ToolCallStatus.APPROVED, ToolCallStatus.REJECTED)


@dataclass(frozen=True)
class NewCall:
    call_id: str
    tool_id: int | None
    tool_name: str
    arguments: str
    status: ToolCallStatus
    result: str | None
    result_chars: int
    error: str | None
    ms: float | None
    preview: str | None = None
    request_fingerprint: str | None = None  # a preview's: what approval must find unchanged


def by_messages(store: Database, message_ids: Sequence[int]) -> list[list[StoredToolCall]]:
    """Each message's calls, in order (a batch for the DataLoader)."""
    with store.read() as db:
        rows = db.scalars(
            select(StoredToolCall)
            .where(StoredToolCall.message_id.in_(message_ids))
            .order_by(StoredToolCall.message_id, StoredToolCall.position)
        )
        found: dict[int, list[StoredToolCall]] = {}
        for row in rows:
            found.setdefault(row.message_id, []).append(row)
    return [found.get(i, []) for i in message_ids]


def require_decidable(store: Database, call_id: int, *, caller: Caller) -> None:
    """Raises unless the caller may approve or reject the call (its chat's owner)."""
    with store.read() as db:
        access.require_tool_call(db, caller, call_id, change=True)


def get(store: Database, call_id: int) -> StoredToolCall:
    with store.read() as db:
        row = require(db, StoredToolCall, call_id)
        return row


def start_answer(store: Database, message_id: int) -> int:
    """Before a (re)generated answer calls tools: drop the calls an earlier version of it made and
    nobody decided; the next position (after the decided ones, which stay)."""
    with store.write() as db:
        db.execute(
            delete(StoredToolCall).where(StoredToolCall.message_id == message_id, StoredToolCall.status.not_in(DECIDED))
        )
        last = db.scalar(select(func.max(StoredToolCall.position)).where(StoredToolCall.message_id == message_id))
    return 0 if last is None else last + 1


def record(store: Database, message_id: int, session_id: int, position: int, call: NewCall) -> int | None:
    """Store one call; its id, or None when its answer is gone (the session was deleted)."""
    with store.write() as db:
        alive = db.scalar(
            select(ChatMessage.id).where(ChatMessage.id == message_id, ChatMessage.session_id == session_id)
        )
        if alive is None:
            return None
        tool_id = call.tool_id if call.tool_id is None or db.get(Tool, call.tool_id) is not None else None
        row = StoredToolCall(
            message_id=message_id,
            session_id=session_id,
            position=position,
            call_id=call.call_id[:200],
            tool_id=tool_id,
            tool_name=call.tool_name[:200],
            arguments=call.arguments,
            status=call.status,
            result=None if call.result is None else call.result[:RESULT_MAX],
            result_chars=call.result_chars,
            error=call.error,
            ms=call.ms,
            preview=call.preview,
            request_fingerprint=call.request_fingerprint,
            finished_at=None if call.status is ToolCallStatus.PREVIEW else utcnow(),
        )
        db.add(row)
        db.flush()
        return row.id


@dataclass(frozen=True)
class Claimed:
    """What an approval found: the call (to run when ``claimed``, with ``arguments``), its tool as it
    was read in the claiming transaction, and its session's project."""

    call: StoredToolCall
    claimed: bool  # this approval moved it out of preview: it runs the call
    tool: Tool | None
    project_id: int
    arguments: dict[str, Any] | None = None  # what ``verify`` returned for a claimed call


Verify = Callable[[StoredToolCall, Tool | None], dict[str, Any]]


def claim(store: Database, call_id: int, verify: Verify) -> Claimed:
    """Approve: move the call from ``preview`` to ``running`` — one conditional UPDATE, so only one
    approval ever wins. First ``verify(call, tool)`` must accept the preview (it returns the arguments
    to run with, or raises ConflictError: it expired, or the tool no longer sends what was previewed);
    a refused call stays a preview, to be rejected or asked again. The tool it checked is the one
    returned, read in this transaction, so what runs is what was verified. A call already approved
    (running or done) is returned unclaimed; a rejected one is a ConflictError; one that needed no
    approval is a ValidationError."""
    with store.write() as db:
        row = require(db, StoredToolCall, call_id)
        tool = db.get(Tool, row.tool_id) if row.tool_id is not None else None
        arguments = verify(row, tool) if row.status is ToolCallStatus.PREVIEW else None
        won = db.execute(
            update(StoredToolCall)
            .where(StoredToolCall.id == call_id, StoredToolCall.status == ToolCallStatus.PREVIEW)
            .values(status=ToolCallStatus.RUNNING, decided_at=utcnow(), owner=store.owner)
        ).rowcount  # type: ignore[attr-defined]
        db.refresh(row)
        if not won:
            _decidable(row, ToolCallStatus.APPROVED)
        project_id = db.scalar(select(ChatSession.project_id).where(ChatSession.id == row.session_id))
        return Claimed(row, bool(won), tool, int(project_id or 0), arguments if won else None)


def _decidable(row: StoredToolCall, wanted: ToolCallStatus) -> None:
    if row.status in (ToolCallStatus.EXECUTED, ToolCallStatus.FAILED):
        how = "ran" if row.status is ToolCallStatus.EXECUTED else "failed"
        raise ValidationError("id", f"tool call {row.id} needed no approval: it {how} while its answer was written")
    opposite = ToolCallStatus.REJECTED if wanted is ToolCallStatus.APPROVED else ToolCallStatus.APPROVED
    if row.status is opposite or (wanted is ToolCallStatus.REJECTED and row.status is ToolCallStatus.RUNNING):
        done = "rejected" if row.status is ToolCallStatus.REJECTED else "approved"
        raise ConflictError(f"tool call {row.id} was already {done}")


def settle(
    store: Database, call_id: int, result: str | None, result_chars: int, error: str | None, ms: float
) -> StoredToolCall:
    """Record the one run of an approved call and tell the conversation how it ended (a complete
    assistant message after the session's last one)."""
    with store.write() as db:
        # Gone when its session was deleted while it ran: nothing left to record it in.
        row = require(db, StoredToolCall, call_id)
        outcome = outcome_text(row.tool_name, row.arguments, result, error)
        message = ChatMessage(
            session_id=row.session_id,
            role=Role.ASSISTANT,
            content=outcome,
            status=MessageStatus.COMPLETE,
            completed_at=utcnow(),
        )
        db.add(message)
        db.flush()
        row.status = ToolCallStatus.APPROVED
        row.result = None if result is None else result[:RESULT_MAX]
        row.result_chars = result_chars
        row.error = error
        row.ms = ms
        row.finished_at = utcnow()
        row.outcome_message_id = message.id
        chat = db.get(ChatSession, row.session_id)
        if chat is not None:
            chat.updated_at = utcnow()
        db.flush()
        return row


def outcome_text(name: str, arguments: str, result: str | None, error: str | None) -> str:
    try:
        shown = json.dumps(json.loads(arguments), ensure_ascii=False)
    except ValueError:
        shown = arguments
    if error is not None:
        return f"Approved: `{name}` {shown} was run once and failed: {error}"
    summary = (result or "").strip()
    if len(summary) > 1000:
        summary = summary[:1000] + " …"
    return f"Approved: `{name}` {shown} was run once. It answered:\n\n{summary or '(an empty answer)'}"


def for_model(row: StoredToolCall) -> Message:
    """An approved call's outcome as a later turn's history gives it to the model: the tool's output
    is untrusted data, so it goes fenced and labelled, on the user's side, like any tool result (the
    stored message, ``outcome_text``, is what people read)."""
    text = row.error if row.error is not None else (row.result or "")
    content, _ = fence(row.tool_name, text, RESULT_MAX, ok=row.error is None)
    return Message("user", f"The user approved the call {row.tool_name} {row.arguments}; it ran once.\n{content}", True)


def reject(store: Database, call_id: int) -> StoredToolCall:
    """Reject: ``preview`` -> ``rejected`` (one conditional UPDATE); rejecting again returns it."""
    with store.write() as db:
        db.execute(
            update(StoredToolCall)
            .where(StoredToolCall.id == call_id, StoredToolCall.status == ToolCallStatus.PREVIEW)
            .values(status=ToolCallStatus.REJECTED, decided_at=utcnow(), finished_at=utcnow())
        )
        row = require(db, StoredToolCall, call_id)
        if row.status is not ToolCallStatus.REJECTED:
            _decidable(row, ToolCallStatus.REJECTED)
        return row
