"""Reciprocal-rank fusion (Cormack et al., 2009), with a weight per ranking."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: int = 60) -> dict[int, float]:
    """Fuse ranked id lists. Each ranking is ``(ids best first, weight)``; an id at 1-based rank r
    in a ranking gains ``weight / (k + r)``. Returns id -> fused score (higher is better)."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, cid in enumerate(ids, start=1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return fused
