"""Running a tool once: a built-in one over the chat's knowledge base in a worker thread, an HTTP
one through the guarded fetcher (app/services/tools/http.py) and an MCP one through the MCP client
(app/services/tools/mcp.py) on the event loop, so a call that runs
out of time is cancelled with its connection and leaves no thread reading behind. The tool loop,
approvals and ``testTool`` all run tools through here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from app.db.database import Database
from app.db.enums import ToolKind
from app.db.models import Tool
from app.errors import RagchatError
from app.services.tools import http as tool_http
from app.services.tools import mcp as tool_mcp
from app.services.tools.builtins import ToolContext, ToolOutput, check_arguments, run_builtin
from app.services.tools.catalog import EmbedderFactory
from app.settings import Settings

Execute = Callable[[Tool, dict[str, Any]], Awaitable[ToolOutput]]


def context(store: Database, embedder: EmbedderFactory, settings: Settings, project_id: int) -> ToolContext:
    return ToolContext(store, embedder, settings, project_id)


def executor(ctx: ToolContext) -> Execute:
    """Runs any tool (its arguments already checked)."""

    async def execute(tool: Tool, arguments: dict[str, Any]) -> ToolOutput:
        if tool.kind is ToolKind.BUILTIN:
            return await anyio.to_thread.run_sync(run_builtin, ctx, tool, arguments, abandon_on_cancel=True)
        if tool.kind is ToolKind.MCP:
            return await tool_mcp.call(tool, arguments, ctx.settings.tools)
        return await tool_http.call(tool, arguments, ctx.settings.tools)

    return execute


def previewer(ctx: ToolContext) -> Execute:
    """What a side-effecting call would do (its dry run, or the request described)."""

    async def preview(tool: Tool, arguments: dict[str, Any]) -> ToolOutput:
        if tool.kind is ToolKind.BUILTIN:
            return ToolOutput(f"{tool.name} would run with {arguments}")
        if tool.kind is ToolKind.MCP:  # MCP has no dry run: the call is described, never made
            return ToolOutput(tool_mcp.describe(tool, arguments))
        return await tool_http.preview(tool, arguments, ctx.settings.tools)

    return preview


@dataclass(frozen=True)
class Ran:
    """One run's outcome: ``output`` or ``error``, and how long it took."""

    output: ToolOutput | None
    error: str | None
    ms: float


async def run_once(execute: Execute, tool: Tool, arguments: dict[str, Any], seconds: float) -> Ran:
    """Run ``tool`` once within ``seconds``; a failure is an outcome, not an exception."""
    started = time.perf_counter()

    def ms() -> float:
        return round((time.perf_counter() - started) * 1000, 2)

    try:
        async with asyncio.timeout(seconds):
            output = await execute(tool, arguments)
    except TimeoutError:
        return Ran(None, f"the tool did not answer within {seconds:.3g} s", ms())
    except RagchatError as exc:
        return Ran(None, exc.message, ms())
    return Ran(output, None, ms())


__all__ = ["Execute", "Ran", "check_arguments", "context", "executor", "previewer", "run_once"]
