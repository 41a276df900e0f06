"""The tool part of a chat turn: for a session with tool groups whose model can
call tools, select the tools (three stages, in the trace) and run the tool loop
(app/services/tools/loop.py) in place of a plain generation. A session without tool groups never
gets here: its turn is exactly as before.

What the turn streams: the answer's text, and between its pieces a :class:`ToolCallEvent` when the
model calls, then a :class:`ToolResultEvent` when the call ended (or a :class:`ToolPreviewEvent`
for a side-effecting tool, which does not run: app/services/tools/calls.py and app/services/tools/approval.py).
Each call is stored as it ends, so a preview's id exists while the answer still streams.

Sources: a built-in tool's passages join the answer's sources, numbered after the retrieved ones
(a passage already among them keeps its number), and the model reads them under those numbers, so
its [n] markers cite them like retrieved chunks and the answer guard checks the answer against
them too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from app.db.enums import ToolCallStatus
from app.db.models import Tool
from app.errors import ProviderTimeoutError
from app.llm.base import ChatModel, ChatModels, GenerationOptions, TextDelta
from app.llm.tool_calling import ToolCallingModel
from app.rag import prompting
from app.rag.answer import budget
from app.rag.search.stages import Stage
from app.services.chat.events import SourceRef, ToolCallEvent, ToolEvent, ToolPreviewEvent, ToolResultEvent
from app.services.chat.store import Turn
from app.services.chat.trace import TraceBuilder
from app.services.chat.trace_model import TraceSelectedTool, TraceToolCall, TraceToolCandidate, TraceTools
from app.services.tools import calls as tool_calls
from app.services.tools import exec as tool_exec
from app.services.tools import selection as tool_selection
from app.services.tools.builtins import ToolOutput, ToolSource
from app.services.tools.catalog import EmbedderFactory
from app.services.tools.loop import (
    CallRecord,
    LoopLimits,
    LoopResult,
    ToolCallFinished,
    ToolCallStarted,
    run_tool_loop,
)
from app.services.tools.selection import Selection
from app.settings import Settings

log = logging.getLogger("ragchat.tools")
SUMMARY_CHARS = 300


@dataclass
class Sources:
    """The answer's sources: the retrieved ones, then the passages built-in tools returned."""

    refs: list[SourceRef]  # the turn's list: what citations are checked against
    prompt: list[prompting.Source]  # the guard's list: what the answer is checked against
    by_chunk: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_chunk = {ref.chunk_id: ref.number for ref in self.refs}

    def number(self, source: ToolSource) -> int:
        if source.chunk_id in self.by_chunk:
            return self.by_chunk[source.chunk_id]
        number = len(self.refs) + 1
        rank = number
        self.refs.append(
            SourceRef(
                number,
                source.chunk_id,
                source.document_id,
                source.document_name,
                source.location,
                source.score,
                rank,
                source.text,
            )
        )
        where = _where(source)
        self.prompt.append(prompting.Source(number, source.document_name, where, source.text))
        self.by_chunk[source.chunk_id] = number
        return number

    def cited(self, output: ToolOutput) -> ToolOutput:
        """The output as the model reads it: its passages under the answer's source numbers."""
        if not output.sources:
            return output
        blocks = [
            f"[{self.number(s)}] {s.document_name} (document {s.document_id}, {_where(s)})\n{s.text}"
            for s in output.sources
        ]
        header = "Passages (cite them by their [n] numbers):"
        return ToolOutput(header + "\n\n" + "\n\n".join(blocks), output.sources)


def _where(source: ToolSource) -> str:
    loc = source.location
    where = f"page {loc.page}" if loc.page else f"lines {loc.line_start}-{loc.line_end}"
    return f"{where}, {loc.heading_path}" if loc.heading_path else where


@dataclass(frozen=True)
class Offered:
    """The tools a turn offers its model, chosen; None from :func:`prepare` when it offers none."""

    model: ToolCallingModel
    selection: Selection
    first_position: int


async def prepare(
    turn: Turn,
    store: Any,
    embedder: EmbedderFactory,
    settings: Settings,
    models: ChatModels,
    model: ChatModel,
    trace: TraceBuilder,
) -> Offered | None:
    """Select the session's tools for this message (None: the session allows no tools, so the turn
    runs as it always did). A model that cannot call tools is offered none, and the trace says why."""
    groups = turn.tool_groups
    if not groups:
        return None
    capable = models.capabilities(turn.chat.provider, turn.chat.model).tool_calling
    if not capable or not isinstance(model, ToolCallingModel):
        reason = f"{turn.chat.provider}/{turn.chat.model} cannot call tools: none were offered"
        log.warning("answer %s: %s", turn.message_id, reason)
        trace.set_tools(TraceTools(groups=sorted(groups), top_k=settings.tools.top_k, degraded=reason))
        return None
    with trace.stage(Stage.TOOL_SELECT):
        selection = await anyio.to_thread.run_sync(
            tool_selection.select_tools, store, embedder, settings.tools, groups, turn.question, turn.chat.project_id
        )
        first = await anyio.to_thread.run_sync(tool_calls.start_answer, store, turn.message_id)
    trace.set_tools(_trace_entry(selection, [], None))
    if not selection.chosen:
        return None
    return Offered(model, selection, first)


def _trace_entry(selection: Selection, calls: list[CallRecord], result: LoopResult | None) -> TraceTools:
    return TraceTools(
        groups=list(selection.groups),
        candidates=[TraceToolCandidate(name=c.tool.name, score=_rounded(c.score)) for c in selection.candidates],
        selected=[
            TraceSelectedTool(name=c.tool.name, score=_rounded(c.score), reason=c.reason) for c in selection.chosen
        ],
        top_k=selection.top_k,
        min_score=selection.min_score,
        degraded=selection.degraded,
        calls=[
            TraceToolCall(
                call_id=c.call_id,
                name=c.name,
                arguments=c.arguments,
                status=c.status,
                error=c.error,
                result_chars=c.result_chars,
                truncated=c.truncated,
                ms=c.ms,
            )
            for c in calls
        ],
        rounds=result.rounds if result is not None else 0,
        stopped=result.stopped if result is not None else None,
    )


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, 6)


def limits_of(settings: Settings) -> LoopLimits:
    t = settings.tools
    return LoopLimits(t.max_calls, t.max_rounds, t.call_timeout, t.total_timeout, t.max_output_chars)


async def run(
    offered: Offered,
    turn: Turn,
    prompt: budget.Prompt,
    sources: Sources,
    store: Any,
    embedder: EmbedderFactory,
    settings: Settings,
    trace: TraceBuilder,
) -> AsyncIterator[str | ToolEvent]:
    """The loop's text, as pieces, and its tool events, in order. Bounded like a generation: the
    first event within the first-token timeout, each next one within the idle timeout (or a call's
    timeout, when longer), all of it within the chat's total time plus the tools' total time."""
    chosen: list[Tool] = [c.tool for c in offered.selection.chosen]
    ctx = tool_exec.context(store, embedder, settings, turn.chat.project_id)
    run_tool = tool_exec.executor(ctx)

    async def execute(tool: Tool, arguments: dict[str, Any]) -> ToolOutput:
        return sources.cited(await run_tool(tool, arguments))

    options = GenerationOptions(max_tokens=prompt.report.answer_reserve, temperature=settings.llm.temperature)
    loop = run_tool_loop(
        offered.model,
        prompt.messages,
        chosen,
        execute,
        options,
        limits_of(settings),
        preview=tool_exec.previewer(ctx),
    )
    limits, tool_limits = settings.chat, settings.tools
    started = time.perf_counter()
    deadline = started + limits.total_timeout + tool_limits.total_timeout
    first, position = True, offered.first_position
    records: list[CallRecord] = []
    result: LoopResult | None = None
    try:
        while True:
            remaining = deadline - time.perf_counter()
            wait = limits.first_token_timeout if first else max(limits.idle_timeout, tool_limits.call_timeout)
            try:
                async with asyncio.timeout(max(min(wait, remaining), 0.001)):
                    event = await anext(loop)
            except StopAsyncIteration:
                break
            except TimeoutError as exc:
                what = f"no reply within {wait:g} s" if wait <= remaining else "the answer did not finish in time"
                raise ProviderTimeoutError(
                    f"{turn.chat.provider}/{turn.chat.model}: {what}", provider=turn.chat.provider
                ) from exc
            if isinstance(event, TextDelta):
                if event.text:
                    if first:
                        trace.timing(Stage.FIRST_TOKEN, (time.perf_counter() - started) * 1000)
                        first = False
                    yield event.text
            elif isinstance(event, ToolCallStarted):
                first = False
                call = event.call
                yield ToolCallEvent(turn.message_id, call.id, call.name, call.arguments)
            elif isinstance(event, ToolCallFinished):
                record = event.record
                records.append(record)
                stored = await anyio.to_thread.run_sync(_store, store, turn, position, record)
                position += 1
                yield _finished(turn, record, stored)
            elif isinstance(event, LoopResult):
                result = event
    finally:
        await loop.aclose()  # type: ignore[attr-defined]
        trace.timing(Stage.TOOLS, (time.perf_counter() - started) * 1000)
        if result is not None:
            trace.set_usage(result.usage)
        trace.set_tools(_trace_entry(offered.selection, records, result))


def _store(store: Any, turn: Turn, position: int, record: CallRecord) -> int | None:
    status = record.status
    new = tool_calls.NewCall(
        call_id=record.call_id,
        tool_id=record.tool_id,
        tool_name=record.name,
        arguments=record.arguments,
        status=status,
        result=record.text if status is ToolCallStatus.EXECUTED else None,
        result_chars=record.result_chars if status is ToolCallStatus.EXECUTED else 0,
        error=(record.text or record.error) if status is ToolCallStatus.FAILED else None,
        ms=record.ms if status is not ToolCallStatus.PREVIEW else None,
        preview=record.preview,
        request_fingerprint=record.request,
    )
    return tool_calls.record(store, turn.message_id, turn.chat.id, position, new)


def _finished(turn: Turn, record: CallRecord, stored: int | None) -> ToolEvent:
    if record.status is ToolCallStatus.PREVIEW:
        return ToolPreviewEvent(
            turn.message_id, record.call_id, stored, record.name, record.arguments, record.preview or ""
        )
    shown = record.text or record.error or ""
    return ToolResultEvent(
        turn.message_id,
        record.call_id,
        stored,
        record.name,
        record.ok,
        None if record.ok else shown,
        shown[:SUMMARY_CHARS],
        record.result_chars,
        record.truncated,
        record.ms,
    )
