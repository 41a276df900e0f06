"""A chat turn's retrieval with its ranking stages: multi-query expansion (the session's chat model
proposes phrasings, searched beside the question), then reranking of the first candidates (the
operator's rerank endpoint, or the chat model as judge), as the session's settings and the model's
declared capabilities decide (app/rag/ranking_modes.py). Each stage is bounded by a timeout and
falls back to what it was given; the trace records what ran and why something did not."""

from __future__ import annotations

from dataclasses import dataclass

import anyio.to_thread

from app.db.database import Database
from app.llm.base import ChatModel, Embedder, ModelCapabilities, Reranker
from app.rag import expansion, rerank
from app.rag.degradation import Degradation, DegradationReason
from app.rag.judge import ChatJudge
from app.rag.ranking_modes import RerankMode, expansion_used, rerank_used
from app.rag.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.session_settings import RagSettings
from app.rag.stages import Stage
from app.services.trace_model import TraceRanking
from app.settings import Settings


@dataclass(frozen=True)
class Ranked:
    result: RetrievalResult
    ranking: TraceRanking | None  # None when no ranking stage was on


async def retrieve_ranked(
    store: Database,
    embedder: Embedder,
    settings: Settings,
    project_id: int,
    query: str,
    params: RetrievalParams,
    rag: RagSettings,
    *,
    model: ChatModel | None,
    capabilities: ModelCapabilities,
    endpoint: Reranker | None,
) -> Ranked:
    """Retrieve for ``query`` with the stages ``rag`` turns on. Errors of retrieval itself propagate,
    as from :func:`app.rag.retrieval.retrieve`; the stages' own never do."""
    ranking = TraceRanking()
    on = False
    phrasings: list[str] = []
    expanded: expansion.Expansion | None = None
    if model is not None and expansion_used(rag.expansion, capable=capabilities.grounded_writing):
        on = True
        cfg = settings.expansion
        expanded = await expansion.expand(model, query, count=cfg.phrasings, seconds=cfg.timeout)
        phrasings = expanded.phrasings
        ranking.expansions, ranking.expansion_failed = list(phrasings), expanded.failed

    def search() -> RetrievalResult:
        return retrieve(
            store,
            embedder,
            project_id,
            query,
            params,
            alternatives=phrasings,
            alternative_weight=settings.expansion.weight,
        )

    result = await anyio.to_thread.run_sync(search)
    if expanded is not None:
        result.timings_ms = {Stage.EXPANSION: expanded.ms, **result.timings_ms}
        if expanded.failed is not None:
            result.degraded.append(
                Degradation(DegradationReason.EXPANSION_FAILED, f"expansion failed: {expanded.failed}")
            )
    reranker, window = _reranker(settings, rag, model, endpoint)
    if reranker is not None:
        on = True
        outcome = await rerank.rerank(result, reranker, window=window, weight=settings.rerank.weight)
        ranking.reranker, ranking.reranked, ranking.rerank_failed = outcome.reranker, outcome.candidates, outcome.failed
    return Ranked(result, ranking if on else None)


def _reranker(
    settings: Settings, rag: RagSettings, model: ChatModel | None, endpoint: Reranker | None
) -> tuple[Reranker | None, int]:
    used = rerank_used(rag.rerank, endpoint=endpoint is not None)
    cfg = settings.rerank
    if used is RerankMode.ENDPOINT and endpoint is not None:
        return endpoint, cfg.candidates
    if used is RerankMode.JUDGE and model is not None:
        judge = ChatJudge(model, candidates=cfg.judge_candidates, chars=cfg.judge_chars, timeout=cfg.judge_timeout)
        return judge, cfg.judge_candidates
    return None, 0
