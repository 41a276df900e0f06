"""What a chat turn searches, and how hard: the one code path of a chat turn's retrieval and of
``retrievalPreview`` (:func:`retrieval`), so the preview shows what the next turn would find.

1. Expansion: the chat model's other phrasings of the message, when the session asks for them
   (app/services/chat/ranking.py).
2. The query: the message in its conversation, model-free (app/rag/search/conversation.py); when the
   session's ``rewrite`` asks for it, the chat model's standalone rewrite instead (app/rag/search/rewrite.py),
   falling back to the model-free query when the rewrite fails or times out. A message that follows
   earlier turns and is not rewritten, and does not read as a continuation ("and ...", or short with
   a pronoun pointing back), is first searched alone: when it finds a passage by itself
   (``RAGCHAT_RAG__STANDALONE_SCORE``) it is a new topic and is searched without the earlier turns;
   under that bar its first pass searches it both ways and keeps it alone when the earlier turns
   outvoted its own words (app/rag/search/conversation.py, ``outvoted``).
3. Evaluate and widen (app/rag/search/widen.py): retrieve, judge the pass, and while it is not adequate
   and the session's ``quality`` allows, retrieve again wider; answer with the best pass.
4. Reranking of the pass answered with (app/services/chat/ranking.py): a new result.

On the event loop: every call of the chat model (expansion, rewrite, judge, rerank) is awaited
there. Only embedding and the database search go to a worker thread, through the turn's gate
(app/services/chat/gate.py), and nothing in the thread calls back to the loop. Each pass is yielded
as it ends (the chat stream's progress event), then what was retrieved.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

from app.db.database import Database
from app.errors import RagchatError
from app.llm.base import ChatModel, ChatModels, Embedder, Reranker
from app.rag.index import rankings
from app.rag.search import conversation, rewrite, widen
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, nearest_score, retrieve
from app.rag.session_settings import RagSettings
from app.services.chat import gate as chat_gate
from app.services.chat import ranking
from app.services.chat.trace_model import TraceCache, TraceDocumentFilter, TracePass, TraceRewrite, TraceSearch
from app.settings import Settings

T = TypeVar("T")
R = TypeVar("R")


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
    # The message's best score searched alone, when earlier turns could have joined the query.
    standalone_score: float | None = None
    # Its best score with the earlier turns, when it found a passage alone but may point back.
    history_score: float | None = None
    # The message's own query, when its probe scored under the bar and the earlier turns joined its
    # query: the first pass searches it too and keeps it when the earlier turns outvoted the message's
    # own words (conversation.outvoted).
    alone: conversation.Query | None = None
    # Those shares of the message's own words: its own first passage's, the blended first passage's.
    own_words: tuple[float, float] | None = None

    @property
    def searched(self) -> str:
        return self.query.text


@dataclass(frozen=True)
class Retrieved:
    """What a turn retrieved: its search (None when it failed), the ranking stages, and the result it
    answers with (the best pass, reranked; None when nothing was searched). A search that failed —
    the embedder's or the database's error — is ``error``: the turn answers without context, the
    preview raises it."""

    found: TurnSearch | None
    stages: ranking.Stages
    result: RetrievalResult | None
    error: RagchatError | DBAPIError | None = None


async def retrieval(
    store: Database,
    embedder: Callable[[], Embedder],
    settings: Settings,
    models: ChatModels,
    reranker: Reranker | None,
    asker: Asker,
    message: str,
    earlier: Sequence[str],
    *,
    params: RetrievalParams | None = None,
) -> AsyncIterator[Pass | Retrieved]:
    """A chat turn's retrieval for ``message`` after the user turns ``earlier`` (oldest first), as
    ``asker``'s session runs it: each pass as it ends, then (last) what was retrieved. ``embedder``
    is called in the worker thread (it may build the embedder on first use)."""
    rag = asker.rag
    model, capabilities = ranking.helper_model(models, asker.provider, asker.model, rag)
    stages = await ranking.expand(settings, rag, message, model=model, capabilities=capabilities)
    found: TurnSearch | None = None
    passes = search(
        store,
        embedder,
        settings,
        models,
        asker,
        message,
        earlier,
        params=params,
        alternatives=stages.phrasings,
        alternative_weight=settings.expansion.weight,
    )
    try:
        async for step in passes:
            if isinstance(step, Pass):
                yield step
            else:
                found = step
    except (RagchatError, DBAPIError) as exc:
        yield Retrieved(None, stages, None, exc)
        return
    assert found is not None  # the search's last item
    result = found.result
    if result is not None:
        result = await ranking.rerank_found(result, settings, rag, stages, model=model, endpoint=reranker)
    yield Retrieved(found, stages, result)


async def last(steps: AsyncIterator[Pass | R]) -> R:
    """The last item of :func:`retrieval`'s or :func:`search`'s ``steps``, the passes unheard."""
    done: list[R] = []
    async for step in steps:
        if not isinstance(step, Pass):
            done[:] = [step]
    return done[0]


async def search(
    store: Database,
    embedder: Callable[[], Embedder],
    settings: Settings,
    models: ChatModels,
    asker: Asker,
    message: str,
    earlier: Sequence[str],
    *,
    params: RetrievalParams | None = None,
    alternatives: Sequence[str] = (),
    alternative_weight: float = 0.5,
) -> AsyncIterator[Pass | TurnSearch]:
    """The query and evaluate-and-widen (steps 2 and 3 of the module docstring): each pass as it
    ends, then the search. ``alternatives`` (multi-query expansion's phrasings) are searched beside
    the query in every pass. Errors of the embedder and the store propagate (the caller degrades)."""
    capabilities = models.capabilities(asker.provider, asker.model)
    timeout = settings.chat.rewrite_timeout

    def model() -> ChatModel:  # built only when a rewrite or a judgement runs
        return models.get(asker.provider, asker.model)

    skipped = rewrite.wanted(asker.rag.rewrite, capabilities, earlier)
    done = (
        rewrite.Rewrite(rewrite.RewriteOutcome.SKIPPED, None, skipped)
        if skipped is not None
        else await rewrite.rewrite(model(), message, tuple(earlier), timeout)
    )
    standalone = done.query is not None  # a rewrite needs no history
    asked = (done.query, ()) if done.query is not None else (message, earlier)
    # A message that follows earlier turns, is not rewritten and does not read as a continuation
    # is probed alone first (one nearest-neighbour lookup): a new topic leaves the earlier turns out.
    probe = asked[1] and not conversation.leans_back(message)
    bar = settings.rag.standalone_score if probe else None
    gain = settings.rag.follow_up_gain
    query_step = partial(_query, embedder, store, asker.project_id, done, *asked, bar=bar, gain=gain)
    built, found = await _in_thread(query_step)
    first = params or RetrievalParams.for_session(
        settings.rag, top_k=asker.rag.top_k, threshold=asker.rag.threshold, only=asker.rag.document_filter
    )
    budget = asker.rag.quality.passes
    judge = capabilities.retrieval_judging
    query = found.query
    best_value: float | None = None
    for number in range(1, budget + 1):
        wider = widen.widen(first, number, asker.rag.threshold)
        started = time.perf_counter()
        if number == 1 and found.alone is not None:
            step_both = partial(
                _retrieve_own,
                store,
                built,
                asker.project_id,
                query,
                found.alone,
                wider.params,
                alternatives,
                alternative_weight,
            )
            query, result, verdict, found.own_words = await _in_thread(step_both)
            found.query = query
        else:
            step = partial(
                _retrieve, store, built, asker.project_id, query, wider.params, alternatives, alternative_weight
            )
            result, verdict = await _in_thread(step)
        if judge and number < budget:  # the model's judgement is asked for only when it can change something
            verdict = await widen.judged(model(), query.text, result, verdict, timeout)
        decision = widen.decide(verdict, number, budget, best_value)
        kept = result.kept
        made = Pass(
            number=number,
            budget=budget,
            queries=(query.text, *query.earlier, *wider.queries),
            rewritten=standalone,
            candidates=wider.params.candidates,
            threshold=wider.params.threshold,
            kept=len(kept),
            best_score=max((c.score for c in kept if c.score is not None), default=None),
            verdict=verdict,
            decision=decision,
            ms=round((time.perf_counter() - started) * 1000, 3),
            cache_hit=result.cache.result_hit,
        )
        found.passes.append(made)
        yield made
        if best_value is None or verdict.value > best_value:
            best_value, found.result = verdict.value, result
        if decision is not widen.Decision.WIDEN:
            break
    yield found


def _query(
    embedder: Callable[[], Embedder],
    store: Database,
    project_id: int,
    done: rewrite.Rewrite,
    text: str,
    earlier: Sequence[str],
    *,
    bar: float | None,
    gain: float = 1.0,
) -> tuple[Embedder, TurnSearch]:
    """In the worker thread: the embedder (built on first use) and the search with its query
    embedded. With a ``bar``, the message is first looked up alone: when its nearest passage scores
    at least ``bar`` it is a new topic, and its query leaves ``earlier`` out — unless it has a
    pronoun and the earlier turns raise that score by at least ``gain`` (it points back to them)."""
    built = embedder()
    hits: list[bool] = []
    started = time.perf_counter()
    standalone_score = history_score = None
    alone: conversation.Query | None = None
    if bar is not None:
        alone = conversation.build(built, text, cache_hits=hits)
        standalone_score = _nearest_score(store, built, project_id, alone)
        if standalone_score is not None and standalone_score >= bar:
            if conversation.points_back(text):
                both = conversation.build(built, text, earlier, cache_hits=hits)
                history_score = _nearest_score(store, built, project_id, both)
            if history_score is None or history_score - standalone_score < gain:
                earlier = ()
    query = conversation.build(built, text, earlier, cache_hits=hits)
    found = TurnSearch(query, done, embed_ms=round((time.perf_counter() - started) * 1000, 3))
    found.embedding_hits, found.embedding_misses = sum(hits), len(hits) - sum(hits)
    found.standalone_score, found.history_score = standalone_score, history_score
    # Under the bar, a weak passage of its own may still be the right one; a bar of 1.0 asks for the
    # history-aware query always, and gets it.
    if alone is not None and bar is not None and bar < 1.0 and history_score is None and query.earlier:
        found.alone = alone
    return built, found


def _nearest_score(store: Database, embedder: Embedder, project_id: int, query: conversation.Query) -> float | None:
    """The cosine of ``query``'s nearest passage in the knowledge base (None: it has none)."""
    return nearest_score(store, embedder, project_id, query.vector)


def _retrieve_own(
    store: Database,
    embedder: Embedder,
    project_id: int,
    blended: conversation.Query,
    alone: conversation.Query,
    params: RetrievalParams,
    alternatives: Sequence[str],
    alternative_weight: float,
) -> tuple[conversation.Query, RetrievalResult, widen.Verdict, tuple[float, float] | None]:
    """In the worker thread: the first pass of a message whose probe sent it to the blended query,
    searched both ways. The blended pass is kept unless the earlier turns outvoted the message's own
    words (conversation.outvoted): a score bar alone cannot tell a follow-up that names nothing from
    a new question whose own passage happens to score low, but the words can."""
    mixed, mixed_verdict = _retrieve(store, embedder, project_id, blended, params, alternatives, alternative_weight)
    own, own_verdict = _retrieve(store, embedder, project_id, alone, params, alternatives, alternative_weight)
    if not own.kept:
        return blended, mixed, mixed_verdict, None
    with store.read() as db:
        idf = rankings.keyword_ranking(db, project_id).idf(list(alone.terms))
    shares = (
        conversation.own_words(idf, own.kept[0].text),
        conversation.own_words(idf, mixed.kept[0].text) if mixed.kept else 0.0,
    )
    if conversation.outvoted(*shares):
        return alone, own, own_verdict, shares
    return blended, mixed, mixed_verdict, shares


def _retrieve(
    store: Database,
    embedder: Embedder,
    project_id: int,
    query: conversation.Query,
    params: RetrievalParams,
    alternatives: Sequence[str],
    alternative_weight: float,
) -> tuple[RetrievalResult, widen.Verdict]:
    """In the worker thread: one pass's search and the model-free verdict on it."""
    result = retrieve(
        store,
        embedder,
        project_id,
        query.text,
        params,
        query_vector=query.vector,
        terms=query.terms,
        cache_key=query.key,
        alternatives=alternatives,
        alternative_weight=alternative_weight,
    )
    return result, widen.heuristic(query.text, result)


async def _in_thread(step: Callable[[], T]) -> T:
    """``step`` in a worker thread, through the chat turn's gate (app/services/chat/gate.py)."""
    return await chat_gate.run(step)


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
        standalone_score=found.standalone_score,
        history_score=found.history_score,
        own_words=found.own_words[0] if found.own_words is not None else None,
        history_own_words=found.own_words[1] if found.own_words is not None else None,
        document_filter=TraceDocumentFilter.of(rag.document_filter),
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
