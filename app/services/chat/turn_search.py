"""What a chat turn searches, and how hard: the one code path of a chat
turn's retrieval and of ``retrievalPreview``, so the preview shows what the next turn would find.

1. The query: the message in its conversation, model-free (app/rag/search/conversation.py); when the
   session's ``rewrite`` asks for it, the chat model's standalone rewrite instead (app/rag/search/rewrite.py),
   falling back to the model-free query when the rewrite fails or times out.
2. Evaluate and widen (app/rag/search/widen.py): retrieve, judge the pass, and while it is not adequate
   and the session's ``quality`` allows, retrieve again wider; answer with the best pass.

Synchronous, run in a worker thread: the chat model's calls (rewrite, judge) go to the event loop
with ``anyio.from_thread``. ``progress`` hears each pass as it ends (the chat stream's progress event).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.from_thread

from app.db.database import Database
from app.llm.base import ChatModel, ChatModels, Embedder
from app.rag.search import conversation, rewrite, widen
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.session_settings import RagSettings
from app.services.chat import gate as chat_gate
from app.services.chat.trace_model import TraceCache, TracePass, TraceRewrite, TraceSearch
from app.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class Asker:
    """Who asks: the session's knowledge base, chat model and settings."""

    project_id: int
    provider: str
    model: str
    rag: RagSettings


@dataclass(frozen=True)
class Pass:
    """One retrieval pass of evaluate-and-widen, as the trace and the progress event show it."""

    number: int
    budget: int  # the most passes the session's quality allows
    queries: tuple[str, ...]  # the query searched first (the rewrite, when used), then the turns it took in
    rewritten: bool  # the first query is the chat model's rewrite
    candidates: int
    threshold: float
    kept: int
    best_score: float | None
    verdict: widen.Verdict
    decision: widen.Decision
    ms: float
    cache_hit: bool | None


@dataclass
class TurnSearch:
    """A turn's retrieval: the query searched, the rewrite's fate, every pass and the one used."""

    query: conversation.Query
    rewrite: rewrite.Rewrite
    passes: list[Pass] = field(default_factory=list)
    result: RetrievalResult | None = None
    embed_ms: float = 0.0
    embedding_hits: int = 0
    embedding_misses: int = 0

    @property
    def searched(self) -> str:
        return self.query.text


def search(
    store: Database,
    embedder: Embedder,
    settings: Settings,
    models: ChatModels,
    asker: Asker,
    message: str,
    earlier: Sequence[str],
    *,
    params: RetrievalParams | None = None,
    progress: Callable[[Pass], None] | None = None,
    alternatives: Sequence[str] = (),
    alternative_weight: float = 0.5,
) -> TurnSearch:
    """Retrieve for ``message`` after the user turns ``earlier`` (oldest first), as a chat turn of
    ``asker``'s session does; ``alternatives`` (multi-query expansion's phrasings, app/services/chat/ranking.py)
    are searched beside the query in every pass. Errors of the embedder and the store propagate (the
    caller degrades)."""
    capabilities = models.capabilities(asker.provider, asker.model)
    timeout = settings.chat.rewrite_timeout

    def model() -> ChatModel:  # built only when a rewrite or a judgement runs
        return models.get(asker.provider, asker.model)

    skipped = rewrite.wanted(asker.rag.rewrite, capabilities, earlier)
    done = (
        rewrite.Rewrite(rewrite.RewriteOutcome.SKIPPED, None, skipped)
        if skipped is not None
        else _awaited(rewrite.rewrite, model(), message, tuple(earlier), timeout)
    )
    hits: list[bool] = []
    started = time.perf_counter()
    if done.query is not None:  # standalone: no history needed
        query = conversation.build(embedder, done.query, (), cache_hits=hits)
    else:
        query = conversation.build(embedder, message, earlier, cache_hits=hits)
    found = TurnSearch(query, done, embed_ms=round((time.perf_counter() - started) * 1000, 3))
    found.embedding_hits, found.embedding_misses = sum(hits), len(hits) - sum(hits)
    first = params or RetrievalParams.for_session(settings.rag, top_k=asker.rag.top_k, threshold=asker.rag.threshold)
    budget = asker.rag.quality.passes
    judge = capabilities.retrieval_judging
    best_value: float | None = None
    for number in range(1, budget + 1):
        wider = widen.widen(first, number, asker.rag.threshold)
        started = time.perf_counter()
        result = retrieve(
            store,
            embedder,
            asker.project_id,
            query.text,
            wider.params,
            query_vector=query.vector,
            terms=query.terms,
            cache_key=query.key,
            alternatives=alternatives,
            alternative_weight=alternative_weight,
        )
        verdict = widen.heuristic(query.text, result)
        if judge and number < budget:  # the model's judgement is asked for only when it can change something
            verdict = _awaited(widen.judged, model(), query.text, result, verdict, timeout)
        decision = widen.decide(verdict, number, budget, best_value)
        kept = result.kept
        step = Pass(
            number=number,
            budget=budget,
            queries=(query.text, *query.earlier, *wider.queries),
            rewritten=done.query is not None,
            candidates=wider.params.candidates,
            threshold=wider.params.threshold,
            kept=len(kept),
            best_score=max((c.score for c in kept if c.score is not None), default=None),
            verdict=verdict,
            decision=decision,
            ms=round((time.perf_counter() - started) * 1000, 3),
            cache_hit=result.cache.result_hit,
        )
        found.passes.append(step)
        if progress is not None:
            progress(step)
        if best_value is None or verdict.value > best_value:
            best_value, found.result = verdict.value, result
        if decision is not widen.Decision.WIDEN:
            break
    return found


def _awaited(call: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """``call(*args)`` run on the event loop, this thread waiting for it outside the chat turn's gate
    (app/services/chat/gate.py): a model's reply can take seconds, and waiting needs no GIL."""
    with chat_gate.released():
        return anyio.from_thread.run(call, *args)


def trace_entry(found: TurnSearch, rag: RagSettings) -> TraceSearch:
    """The trace's record of a turn's search."""
    done = found.rewrite
    passes = found.passes
    return TraceSearch(
        quality=rag.quality,
        rewrite_mode=rag.rewrite,
        searched=found.searched,
        earlier=list(found.query.earlier),
        rewrite=TraceRewrite(outcome=done.outcome, query=done.query, reason=done.reason, ms=done.ms),
        passes=[
            TracePass(
                number=p.number,
                budget=p.budget,
                queries=list(p.queries),
                candidates=p.candidates,
                threshold=p.threshold,
                kept=p.kept,
                best_score=p.best_score,
                adequate=p.verdict.adequate,
                value=p.verdict.value,
                judge=p.verdict.judge,
                reason=p.verdict.reason,
                decision=p.decision,
                ms=p.ms,
                cache_hit=p.cache_hit,
            )
            for p in passes
        ],
        cache=TraceCache(
            embedding_hits=found.embedding_hits,
            embedding_misses=found.embedding_misses,
            result_hits=sum(1 for p in passes if p.cache_hit),
            result_misses=sum(1 for p in passes if p.cache_hit is False),
        ),
    )
