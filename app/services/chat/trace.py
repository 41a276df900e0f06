"""The retrieval trace stored with every answer: why the answer is what it is.

Every candidate considered with its scores and fate (kept, below threshold, beyond top_k, over
budget), the settings used, stage timings in ms, token counts, provider/model, degradations.
"""

from __future__ import annotations

import copy
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from typing import Any, cast

from app.llm.base import ChatModel, GenerationOptions, Message, StreamEvent, Usage
from app.llm.tool_calling import ToolCallingModel, ToolSpec, ToolStreamEvent
from app.llm.tool_calling import Turn as ToolTurn
from app.ops.tracing import TurnSpan
from app.rag.answer.budget import BudgetReport
from app.rag.search.candidates import CandidateFate
from app.rag.search.degradation import Degradation, DegradationReason
from app.rag.search.retrieval import RetrievalResult
from app.rag.search.stages import Stage
from app.services.chat.events import SourceRef
from app.services.chat.store import Turn
from app.services.chat.trace_model import (
    TRACE_VERSION,
    RetrievalTrace,
    TraceAnswer,
    TraceBudget,
    TraceCandidate,
    TraceCitations,
    TraceRanking,
    TraceSearch,
    TraceSettings,
    TraceTokens,
    TraceTools,
)
from app.settings import Settings

__all__ = ["TRACE_VERSION", "TraceBuilder"]

_CANDIDATE_FIELDS = [f.name for f in fields(TraceCandidate)]
# Timed before the search's own stages but recorded with them, once the search ended (service.py).
_SEARCH_PRELUDE = frozenset({Stage.REWRITE, Stage.RETRIEVAL_EMBED})


class TraceBuilder:
    def __init__(self, turn: Turn, settings: Settings) -> None:
        chat = turn.chat
        self.degraded: list[Degradation] = []
        self._timings: dict[Stage, float] = {}
        self._retrieval: RetrievalResult | None = None
        self.span = TurnSpan(chat.provider, chat.model)  # ended with the turn's log line (log.py)
        self._prelude: list[tuple[Stage, float]] = []
        self._trace = RetrievalTrace(
            query=turn.question,
            provider=chat.provider,
            model=chat.model,
            settings=TraceSettings.of(chat.rag, settings.rag.mode),
            history_turns=len(turn.history),
            trace_id=self.span.trace_id,
        )

    def traced(self, model: ChatModel) -> ChatModel:
        """``model`` with each of its calls a span under the turn's (``model`` itself when tracing is off)."""
        if not self.span.recording:
            return model
        return cast(
            ChatModel,
            _TracedTools(model, self.span) if isinstance(model, ToolCallingModel) else _Traced(model, self.span),
        )

    def degrade(self, reason: DegradationReason, message: str) -> None:
        self.degraded.append(Degradation(reason, message))

    @property
    def timings_ms(self) -> dict[Stage, float]:
        """The stage timings so far (a copy)."""
        return dict(self._timings)

    @property
    def answer(self) -> TraceAnswer | None:
        """How the answer was written, once that is known."""
        return self._trace.answer

    @property
    def tokens(self) -> TraceTokens | None:
        """The token counts so far (the prompt's, then the model's usage once it is known)."""
        return self._trace.tokens

    def timing(self, stage: Stage, ms: float) -> None:
        self._timings[stage] = round(ms, 3)
        if stage in _SEARCH_PRELUDE:  # recorded when the search ended: its span waits for the search's stages
            self._prelude.append((stage, ms))
        else:
            self.span.stage(stage, ms)

    def flush_spans(self) -> None:
        """Stage spans still waiting (a search that ended without a result)."""
        prelude, self._prelude = self._prelude, []
        self.span.stages(prelude)

    @contextmanager
    def stage(self, name: Stage) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing(name, (time.perf_counter() - start) * 1000)

    def set_retrieval(self, result: RetrievalResult) -> None:
        self._retrieval = result
        self.degraded.extend(result.degraded)
        for stage, ms in result.timings_ms.items():
            self._timings[stage] = round(ms, 3)
        # The rewrite, the question's embedding and the search's stages ran one after the other, and just ended.
        prelude, self._prelude = self._prelude, []
        self.span.stages([*prelude, *result.timings_ms.items()])
        self._trace.embedding_space = result.space
        self._trace.effective_mode = result.mode
        self._trace.fusion = result.fusion

    def set_ranking(self, ranking: TraceRanking) -> None:
        """What expansion and reranking did (app/services/chat/ranking.py)."""
        self._trace.ranking = ranking

    def set_search(self, search: TraceSearch) -> None:
        """What the turn searched and how: its query, the rewrite, every pass (app/services/chat/turn_search.py)."""
        self._trace.search = search

    def set_budget(self, report: BudgetReport) -> None:
        self._trace.tokens = TraceTokens(
            prompt=report.prompt_tokens,
            context=report.context_tokens,
            completion=0,
            answer_reserve=report.answer_reserve,
            context_window=report.context_window,
            tokenizer=report.tokenizer,
            exact=report.exact,
        )
        self._trace.budget = TraceBudget(
            chunks_over_budget=report.chunks_over_budget, history_dropped=report.history_dropped
        )

    def set_sources(self, sources: list[SourceRef], no_context: bool) -> None:
        self._trace.no_context = no_context
        self._trace.source_chunk_ids = [s.chunk_id for s in sources]

    def set_usage(self, usage: Usage) -> None:
        tokens = self._trace.tokens or TraceTokens()
        tokens.prompt = usage.prompt_tokens
        tokens.completion = usage.completion_tokens
        self._trace.tokens = tokens

    def set_answer(self, answer: TraceAnswer) -> None:
        """How the answer was written: mode requested and used, why, and the guard's verdict
        (built by app.services.chat.answer.trace_entry)."""
        self._trace.answer = answer

    def set_tools(self, tools: TraceTools) -> None:
        """Tool selection's stages and the calls of the turn (app/services/chat/tools.py)."""
        self._trace.tools = tools

    def set_citations(self, valid: int, invalid: int, *, attributed: bool) -> None:
        self._trace.citations = TraceCitations(valid=valid, invalid_removed=invalid, attributed=attributed)

    def model(self, *, deep: bool = True) -> RetrievalTrace:
        """The trace so far, as a new model (``deep=False``: sharing the builder's parts)."""
        found = self._retrieval.candidates if self._retrieval is not None else []
        over = self._over_budget()
        candidates = [  # a retrieval Candidate's fields by name, but its text
            TraceCandidate(
                **{name: getattr(c, name) for name in _CANDIDATE_FIELDS}
                | ({"fate": CandidateFate.OVER_BUDGET} if c.chunk_id in over else {})
            )
            for c in found
        ]
        trace = copy.deepcopy(self._trace) if deep else self._trace
        return replace(trace, degraded=list(self.degraded), timings_ms=dict(self._timings), candidates=candidates)

    def _over_budget(self) -> set[int]:
        """The chunks the token budget cut (its report numbers the kept sources from 1): the budget's
        fact, shown as their fate, while the retrieval's candidates stay as retrieval left them."""
        budget = self._trace.budget
        if budget is None or not budget.chunks_over_budget or self._retrieval is None:
            return set()
        kept = self._retrieval.kept
        return {kept[n - 1].chunk_id for n in budget.chunks_over_budget if 0 < n <= len(kept)}

    def build(self) -> dict[str, object]:
        """The stored (JSON) form of the trace. Dumped at once, so nothing needs the deep copy
        (~4k Python calls per turn)."""
        return self.model(deep=False).stored()


class _Traced:
    """A chat model whose streams are spans (app/ops/tracing.py); everything else is the model's."""

    def __init__(self, model: ChatModel, span: TurnSpan) -> None:
        self._model, self._span = model, span

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        return self._span.model_call(self._model.provider, self._model.model, self._model.stream(messages, options))


class _TracedTools(_Traced):
    """The same for a model that can be offered tools (a separate class: only such a model has
    ``stream_tools``, which is how the tool loop tells them apart)."""

    def stream_tools(
        self, turns: Sequence[ToolTurn], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> AsyncIterator[ToolStreamEvent]:
        model = cast(ToolCallingModel, self._model)
        return self._span.model_call(model.provider, model.model, model.stream_tools(turns, tools, options))
