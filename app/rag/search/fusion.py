"""Fusing a vector and a keyword ranking: reciprocal-rank fusion (Cormack et al., 2009), with a weight
per ranking, or a convex combination of the two scores, each min-max normalised over the candidates
(Bruch et al., 2023, "An analysis of fusion functions for hybrid retrieval"), which keeps how much
better one candidate is than the next where RRF keeps only the order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum


class Fusion(StrEnum):
    """How a search fused its rankings (the trace records it)."""

    CONVEX = "convex"  # by score: the hybrid default, one vector and one keyword ranking
    RRF = "rrf"  # by rank: RAGCHAT_RAG__FUSION=rrf, and always for several phrasings or feedback


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: int = 60) -> dict[int, float]:
    """Fuse ranked id lists. Each ranking is ``(ids best first, weight)``; an id at 1-based rank r
    in a ranking gains ``weight / (k + r)``. Returns id -> fused score (higher is better)."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, cid in enumerate(ids, start=1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return fused


def convex(similarity: Mapping[int, float], keyword: Mapping[int, float], alpha: float) -> dict[int, float]:
    """``alpha * similarity + (1 - alpha) * keyword``, each min-max normalised to [0, 1] over the ids
    it has; an id the keyword search did not find gets its minimum (0). Every id of ``similarity``
    is scored (give it every candidate); higher is better."""
    sim = _normalised(similarity)
    kw = _normalised(keyword)
    return {cid: alpha * value + (1.0 - alpha) * kw.get(cid, 0.0) for cid, value in sim.items()}


def _normalised(values: Mapping[int, float]) -> dict[int, float]:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    spread = high - low
    return {cid: (v - low) / spread if spread > 0 else 1.0 for cid, v in values.items()}
