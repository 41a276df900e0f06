"""Approve or reject a previewed tool call, and test a tool (``testTool``).

Approval runs exactly the request that was previewed, or nothing: the preview stored a fingerprint
of it (app/services/tools/request.py), and a call whose tool would now send something else (another
method, URL, body or header), or whose tool was deleted, or whose preview is older than
``RAGCHAT_TOOLS__PREVIEW_EXPIRY`` seconds, is refused with a ConflictError and stays a preview.

Approval runs the call exactly once: :func:`app.services.tools.calls.claim` moves it out of
``preview`` with one conditional UPDATE, and only the approval that did so runs it; any other
approval (at the same time, or later) waits until the outcome is recorded and returns it. The run
is bounded by the tool's timeout; its outcome, success or failure, is recorded once and appended
to the conversation (tool_calls.settle). A call is never run twice: one that fails stays failed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from app.db.database import Database
from app.db.enums import ToolCallStatus, ToolKind
from app.db.models import StoredToolCall, Tool, utcnow
from app.errors import ConflictError, NotFoundError, RagchatError, ValidationError
from app.rag.sanitize import strip_control
from app.services import projects
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
from app.services.tools import calls as tool_calls
from app.services.tools import catalog as tools
from app.services.tools import exec as tool_exec
from app.services.tools.catalog import EmbedderFactory
from app.services.tools.definitions import TIMEOUT_MAX
from app.services.tools.request import fingerprint
from app.services.tools.schema import validate
from app.settings import Settings

log = logging.getLogger("ragchat.tools")
WAIT_STEP = 0.05  # seconds between looks at a call another approval is running
WAIT_MARGIN = 10.0  # seconds past the tool's timeout that a second approval waits for the first's outcome


async def approve(
    store: Database, embedder: EmbedderFactory, settings: Settings, call_id: int, *, caller: Caller = THE_SERVER
) -> StoredToolCall:
    """Run a previewed call once (its chat's owner decides)."""
    await anyio.to_thread.run_sync(lambda: tool_calls.require_decidable(store, call_id, caller=caller))
    checked = await _checked(store, call_id)
    verify = functools.partial(still_as_previewed, window=settings.tools.preview_expiry, checked=checked)
    claimed = await anyio.to_thread.run_sync(tool_calls.claim, store, call_id, verify)
    if not claimed.claimed:
        bound = claimed.tool.timeout_seconds if claimed.tool is not None else TIMEOUT_MAX
        return await _outcome(store, claimed.call, bound + WAIT_MARGIN)
    row, tool, arguments = claimed.call, claimed.tool, claimed.arguments
    assert tool is not None and arguments is not None  # verified in the claim
    ctx = tool_exec.context(store, embedder, settings, claimed.project_id)
    ran = await _shielded(tool_exec.run_once(tool_exec.executor(ctx), tool, arguments, tool.timeout_seconds))
    text = strip_control(ran.output.content) if ran.output is not None else None
    log.info("approved tool call %s (%s) ran once: %s", call_id, row.tool_name, ran.error or "ok")
    return await anyio.to_thread.run_sync(tool_calls.settle, store, call_id, text, len(text or ""), ran.error, ran.ms)


@dataclass(frozen=True)
class Checked:
    """A preview's arguments, valid against its tool's schema as read before the claim."""

    schema: dict[str, Any]
    arguments: dict[str, Any]


async def _checked(store: Database, call_id: int) -> Checked | None:
    """The call's arguments checked against its tool's schema now, before the claim: validation is
    kept out of the claim's write transaction, which on SQLite holds the database's one write lock,
    and runs in the validation limiter's threads (a schema's patterns may be hostile).
    None when they do not fit (the tool changed) or there is nothing to check."""
    row = await anyio.to_thread.run_sync(tool_calls.get, store, call_id)
    if row.status is not ToolCallStatus.PREVIEW or row.tool_id is None:
        return None
    try:
        tool = await anyio.to_thread.run_sync(tools.get, store, row.tool_id)
        return Checked(tool.input_schema, await validate(tool, row.arguments))
    except (NotFoundError, ValidationError):
        return None


def still_as_previewed(
    row: StoredToolCall, tool: Tool | None, *, window: float, checked: Checked | None
) -> dict[str, Any]:
    """The arguments to run a previewed call with, when the preview may still be approved: it is
    younger than ``window`` seconds and the request ``tool`` (as the claim reads it) would send is
    the one previewed (the same method, URL, body and header names), its arguments ``checked``
    against the same schema. Otherwise a ConflictError saying why."""
    refused = f"tool call {row.id} can no longer be approved"
    age = (utcnow() - row.created_at).total_seconds()
    if age > window:
        raise ConflictError(f"{refused}: its preview expired ({window:g} s to approve it); ask again")
    if tool is None:
        raise ConflictError(f"{refused}: the tool {row.tool_name!r} was deleted since it was previewed")
    changed = ConflictError(f"{refused}: the tool changed since it was previewed; ask again")
    if checked is None or tool.input_schema != checked.schema or row.request_fingerprint is None:
        raise changed
    if fingerprint(tool, checked.arguments) != row.request_fingerprint:
        raise changed
    return checked.arguments


async def _shielded(job: Any) -> tool_exec.Ran:
    """Run to the end even when the caller leaves: the outcome must be recorded."""
    task = asyncio.ensure_future(job)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        result: tool_exec.Ran = await task
        return result


async def _outcome(store: Database, row: StoredToolCall, seconds: float) -> StoredToolCall:
    """A call another approval claimed: its row once that approval has recorded the outcome, or as
    it is after ``seconds`` (still RUNNING: the approval that runs it is in another process, which
    may have stopped; the next start records it)."""
    deadline = time.monotonic() + seconds
    while row.status is ToolCallStatus.RUNNING and time.monotonic() < deadline:
        await asyncio.sleep(WAIT_STEP)
        row = await anyio.to_thread.run_sync(tool_calls.get, store, row.id)
    return row


async def reject(store: Database, call_id: int, *, caller: Caller = THE_SERVER) -> StoredToolCall:
    await anyio.to_thread.run_sync(lambda: tool_calls.require_decidable(store, call_id, caller=caller))
    return await anyio.to_thread.run_sync(tool_calls.reject, store, call_id)


@dataclass(frozen=True)
class Tested:
    tool_id: int
    dry_run: bool
    ok: bool
    output: str
    error: str | None
    size: int
    truncated: bool
    ms: float


async def test(
    store: Database,
    embedder: EmbedderFactory,
    settings: Settings,
    tool_id: int,
    arguments: Any,
    project_id: int | None,
    *,
    caller: Caller = THE_SERVER,
) -> Tested:
    """Run a tool once with ``arguments`` (a side-effecting one: its preview only). A built-in tool
    runs over the knowledge base ``project_id``, which it then needs (and the caller may read); an
    HTTP tool sends its secrets, so only those who may change it test one (the server's: its
    operators; a knowledge base's: its editors)."""
    tool = await anyio.to_thread.run_sync(lambda: tools.get(store, tool_id, caller=caller))
    if tool.kind is not ToolKind.BUILTIN:
        await anyio.to_thread.run_sync(lambda: _may_change(store, caller, tool_id))
    if not isinstance(arguments, str | dict):
        raise ValidationError("arguments", f"must be a JSON object, not a {type(arguments).__name__}")
    checked = await validate(tool, arguments)
    if tool.kind is ToolKind.BUILTIN:
        if project_id is None:
            raise ValidationError("projectId", "a built-in tool runs over a knowledge base: name one")
        await anyio.to_thread.run_sync(lambda: projects.get(store, project_id, caller=caller))
    ctx = tool_exec.context(store, embedder, settings, project_id or 0)
    run = tool_exec.previewer(ctx) if tool.side_effects else tool_exec.executor(ctx)
    started = time.perf_counter()
    ran = await tool_exec.run_once(run, tool, checked, min(tool.timeout_seconds, settings.tools.call_timeout))
    cap = settings.tools.max_output_chars
    text = strip_control(ran.output.content) if ran.output is not None else (ran.error or "")
    ms = ran.ms or round((time.perf_counter() - started) * 1000, 2)
    return Tested(tool.id, tool.side_effects, ran.error is None, text[:cap], ran.error, len(text), len(text) > cap, ms)


def _may_change(store: Database, caller: Caller, tool_id: int) -> None:
    with store.read() as db:
        access.require_tool(db, caller, tool_id, change=True)


__all__ = ["RagchatError", "Tested", "approve", "reject", "test"]
