"""A chat turn's retrieval with its ranking stages: multi-query expansion (the session's chat model
proposes phrasings, searched beside the question), then reranking of the first candidates (the
operator's rerank endpoint, or the chat model as judge), as the session's settings and the model's
declared capabilities decide (app/rag/search/ranking_modes.py). Each stage is bounded by a timeout and
falls back to what it was given; the trace records what ran and why something did not."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.llm.base import ChatModel, ChatModels, ModelCapabilities, Reranker
from app.rag.search import expansion, rerank
from app.rag.search.degradation import Degradation, DegradationReason
from app.rag.search.judge import ChatJudge
from app.rag.search.ranking_modes import ExpansionMode, RerankMode, expansion_used, rerank_used
from app.rag.search.retrieval import RetrievalResult
from app.rag.search.stages import Stage
from app.rag.session_settings import RagSettings
from app.services.chat.trace_model import TraceRanking
from app.settings import Settings


@dataclass
class Stages:
    """The ranking stages of one turn: what expansion proposed, and the trace's record of both."""

    ranking: TraceRanking = field(default_factory=TraceRanking)
    on: bool = False  # any stage ran (else the trace has no ranking section)
    expanded: expansion.Expansion | None = None

    @property
    def phrasings(self) -> list[str]:
        return self.expanded.phrasings if self.expanded is not None else []


def helper_model(
    models: ChatModels, provider: str, model: str, rag: RagSettings
) -> tuple[ChatModel | None, ModelCapabilities]:
    """The session's chat model when a ranking stage may call it (expansion, the judge), else None."""
    if rag.expansion is ExpansionMode.OFF and rag.rerank is not RerankMode.JUDGE:
        return None, ModelCapabilities()
    return models.get(provider, model), models.capabilities(provider, model)


async def expand(
    settings: Settings, rag: RagSettings, query: str, *, model: ChatModel | None, capabilities: ModelCapabilities
) -> Stages:
    """Multi-query expansion when ``rag`` turns it on for this model; its phrasings are searched beside
    ``query`` (``retrieve(alternatives=...)``). Never raises: a failure or timeout is recorded."""
    stages = Stages()
    if model is not None and expansion_used(rag.expansion, capable=capabilities.grounded_writing):
        stages.on = True
        cfg = settings.expansion
        stages.expanded = await expansion.expand(model, query, count=cfg.phrasings, seconds=cfg.timeout)
        stages.ranking.expansions = list(stages.expanded.phrasings)
        stages.ranking.expansion_failed = stages.expanded.failed
    return stages


async def rerank_found(
    result: RetrievalResult,
    settings: Settings,
    rag: RagSettings,
    stages: Stages,
    *,
    model: ChatModel | None,
    endpoint: Reranker | None,
) -> RetrievalResult:
    """``result`` with the expansion's time and failure recorded, its first candidates reranked when
    ``rag`` asks for it (the fused order stays when the reranker fails): a new result, ``result``
    itself unchanged (it may be the result cache's)."""
    expanded = stages.expanded
    if expanded is not None:
        degraded = list(result.degraded)
        if expanded.failed is not None:
            degraded.append(Degradation(DegradationReason.EXPANSION_FAILED, f"expansion failed: {expanded.failed}"))
        result = replace(result, timings_ms={Stage.EXPANSION: expanded.ms, **result.timings_ms}, degraded=degraded)
    reranker, window = _reranker(settings, rag, model, endpoint)
    if reranker is not None:
        stages.on = True
        result, outcome = await rerank.rerank(result, reranker, window=window, weight=settings.rerank.weight)
        ranking = stages.ranking
        ranking.reranker, ranking.reranked, ranking.rerank_failed = outcome.reranker, outcome.candidates, outcome.failed
    return result


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
