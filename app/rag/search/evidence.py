"""Document evidence in a hybrid ranking: a page that holds the question's rarer words across its
passages outranks a sibling page whose one passage is nearest to the question but holds only its
commoner words.

Convex fusion scores each chunk alone, so a sibling page (the CI/CD overview beside the CI page, a
guidelines' "about" page beside its naming chapter) can win with one chunk that shares the question's
commonest words, while the page that answers spreads the question's words over two or three chunks,
each a little less near. Each candidate gains ``coverage`` x the share of the question's words, each
weighted by its idf, that its document's candidates hold together: the chunks of one document gain
alike, so their order among themselves stays as fused. Measured on docs-qa, the held-out fresh-qa
sets and SciFact (docs/BENCHMARKS.md, "Document evidence"); a share of the document's next-best
fused scores (several passages agreeing) was measured too and lost on SciFact and fresh-qa.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.rag.index import keyword_index
from app.rag.search import conversation


def with_documents(
    fused: Mapping[int, float],
    chunks: Mapping[int, tuple[int, str]],
    words: Mapping[int, float],
    *,
    coverage: float,
) -> dict[int, float]:
    """``fused`` (chunk id -> convex score, in [0, 1]) with each chunk's document coverage added.
    ``chunks``: chunk id -> (document id, text) for the candidates; ``words``: the question's term
    ids -> weight (its idf, times how much the term counts in the query). Ids of ``fused`` without a
    chunk keep their score."""
    total = sum(words.values())
    if coverage <= 0 or total <= 0:
        return dict(fused)
    texts: dict[int, list[str]] = {}
    for cid in fused:
        if cid in chunks:
            document, text = chunks[cid]
            texts.setdefault(document, []).append(text)
    tokenizer = keyword_index.tokenizer()
    share = {
        document: conversation.held_share(words, tokenizer.distinct_terms(held)) for document, held in texts.items()
    }
    return {cid: score + (coverage * share[chunks[cid][0]] if cid in chunks else 0.0) for cid, score in fused.items()}
