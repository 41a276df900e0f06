"""Pseudo-relevance feedback: no model, one more search per ranking.

The first candidates of the fused ranking are taken as relevant, and the question is moved towards
them: Rocchio on vectors (the question's vector plus ``beta`` times the mean of theirs, renormalised)
and RM3-style on keywords (the question's terms plus the ``terms`` words that weigh most in those
chunks by term frequency x idf, each at most ``term_weight`` of a question word). Each new query's
ranking is fused with the question's own (app/rag/search/retrieval.py), weighted ``weight``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from app.llm.base import Vectors
from app.rag.index import keyword_index
from app.rag.index.rankings import KeywordRanking


def rocchio(query: Vectors, relevant: Sequence[np.ndarray], beta: float) -> Vectors:
    """``query + beta * mean(relevant)``, of unit length (the query itself when none is given)."""
    if not relevant:
        return query
    moved = np.asarray(query, dtype=np.float64) + beta * np.mean(np.stack(relevant).astype(np.float64), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else query


def expanded_terms(
    question: dict[int, int], texts: Sequence[str], view: KeywordRanking, *, terms: int, term_weight: float
) -> dict[int, float]:
    """The question's term weights plus the ``terms`` best new terms of ``texts``: each text's term
    frequencies (relative to its length) summed, times the term's idf in the project, scaled so
    that the best new term weighs ``term_weight``."""
    tokenizer = keyword_index.tokenizer()
    weight: dict[int, float] = {}
    for text in texts:
        found = tokenizer.terms(text)
        if found:
            for term, count in Counter(found).items():
                weight[term] = weight.get(term, 0.0) + count / len(found)
    new = [t for t in weight if t not in question]
    idf = view.idf(new)
    scored = sorted(((weight[t] * idf.get(t, 0.0), t) for t in new), reverse=True)[:terms]
    best = scored[0][0] if scored else 0.0
    out: dict[int, float] = {term: float(w) for term, w in question.items()}
    for score, term in scored:
        if score > 0 and best > 0:
            out[term] = term_weight * score / best
    return out
