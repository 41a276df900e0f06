"""Reranking the first candidates of a retrieval, blended with the fused order.

A reranker (:class:`app.llm.base.Reranker`) scores the fused ranking's first ``window``
candidates against the question. Its scores mean nothing across calls, so they are min-max
normalised within the call; the fused order becomes a linear score (1 for the first, 0 past the
last); each candidate's blend is ``weight * reranker + (1 - weight) * fused``. Candidates past the
window keep their place after it. A reranker that fails leaves the fused order, and says why.
Threshold and top_k are applied again to the new order (the threshold is on the cosine score,
which reranking does not change).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.errors import ProviderError
from app.llm.base import Reranker
from app.rag.search.candidates import Candidate
from app.rag.search.degradation import Degradation, DegradationReason
from app.rag.search.retrieval import RetrievalResult, apply_threshold_and_top_k
from app.rag.search.stages import Stage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RerankOutcome:
    reranker: str
    candidates: int  # how many were scored
    failed: str | None = None  # why the fused order was kept


def blend(scores: Sequence[float], weight: float) -> list[float]:
    """Blended scores of a window of candidates given in fused order (see the module docstring)."""
    n = len(scores)
    if n == 0:
        return []
    low, high = min(scores), max(scores)
    spread = high - low
    return [
        weight * ((s - low) / spread if spread > 0 else 0.0) + (1.0 - weight) * (1.0 - i / n)
        for i, s in enumerate(scores)
    ]


def reorder(candidates: list[Candidate], scores: Sequence[float], weight: float) -> list[Candidate]:
    """``candidates`` (fused order) with the first ``len(scores)`` sorted by their blend, each
    given its ``rerank_score``; ties keep the fused order."""
    window = [replace(c, rerank_score=score) for c, score in zip(candidates, scores, strict=False)]
    blended = blend(scores, weight)
    order = sorted(range(len(window)), key=lambda i: (-blended[i], i))
    return [window[i] for i in order] + candidates[len(window) :]


async def rerank(
    result: RetrievalResult, reranker: Reranker, *, window: int, weight: float
) -> tuple[RetrievalResult, RerankOutcome]:
    """``result`` reranked, as a new result (``result`` is left as it is: it may be the result
    cache's); never raises a provider's error (it is recorded instead)."""
    head = result.candidates[:window]
    if not head:
        return result, RerankOutcome(reranker.name, 0)
    started = time.perf_counter()
    try:
        scores = await reranker.rerank(result.query, [c.text for c in head])
        if len(scores) != len(head):
            raise ProviderError(f"{reranker.name} returned {len(scores)} scores for {len(head)} passages")
    except ProviderError as exc:
        log.warning("reranking failed, keeping the fused order: %s", exc)
        failed = Degradation(DegradationReason.RERANK_FAILED, f"reranking failed ({exc.message}); kept the fused order")
        kept = replace(result, degraded=[*result.degraded, failed], timings_ms=_timed(result, started))
        return kept, RerankOutcome(reranker.name, 0, failed=exc.message)
    candidates = reorder(result.candidates, scores, weight)
    apply_threshold_and_top_k(candidates, result.params)
    return replace(result, candidates=candidates, timings_ms=_timed(result, started)), RerankOutcome(
        reranker.name, len(head)
    )


def _timed(result: RetrievalResult, started: float) -> dict[Stage, float]:
    """``result``'s timings with the reranking since ``started`` added."""
    ms = result.timings_ms.get(Stage.RERANK, 0.0) + (time.perf_counter() - started) * 1000
    return {**result.timings_ms, Stage.RERANK: ms}
