"""The retrieval-result cache (app/rag/search/query_cache.py) keeps the result as it was returned: a hit
returns the same ranking as the search that filled it, in lists of its own. Its candidates are
values — nothing (reranking, the token budget) marks them — so what a caller does to its result
cannot change what the next hit returns."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, asdict, replace

import pytest

from app.container import Container
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.candidates import CandidateFate
from app.rag.search.degradation import Degradation, DegradationReason
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.services import projects
from app.settings import IngestSettings
from tests.fakes import FakeEmbedder

TEXTS = {
    "huddle.md": "Emperor penguins huddle together through the long Antarctic winter to keep warm.",
    "egg.md": "The males hold the egg on their feet for the whole winter, without eating.",
    "sea.md": "In spring the females return from the sea with food for the chicks.",
}


def test_a_hit_is_the_stored_ranking_and_a_result_of_its_own(container: Container) -> None:
    embedder = FakeEmbedder()
    pid = projects.create(container.store, "kb").id
    Ingestor(container.store, embedder, IngestSettings()).ingest(
        pid, [Source.from_bytes(n, t.encode()) for n, t in TEXTS.items()]
    )
    params = RetrievalParams(top_k=2, threshold=0.0)

    def search() -> RetrievalResult:
        return retrieve(container.store, embedder, pid, "penguins in winter", params, cache_key=("winter",))

    first = search()
    assert first.cache.result_hit is False and len(first.kept) == 2
    stored = [asdict(c) for c in first.candidates]
    with pytest.raises(FrozenInstanceError):  # a candidate is a value: nobody marks it
        first.candidates[0].fate = CandidateFate.OVER_BUDGET  # type: ignore[misc]
    first.candidates.pop()  # the caller's lists stay the caller's

    hit = search()
    assert hit.cache.result_hit is True
    assert [asdict(c) for c in hit.candidates] == stored
    with pytest.raises(FrozenInstanceError):
        hit.candidates[0].fused_rank = 99  # type: ignore[misc]
    hit.candidates[0] = replace(hit.candidates[0], fate=CandidateFate.OVER_BUDGET)
    hit.degraded.append(Degradation(DegradationReason.RETRIEVAL_FAILED, "marked by the caller"))
    hit.timings_ms.clear()

    again = search()
    assert again.cache.result_hit is True
    assert [asdict(c) for c in again.candidates] == stored
    assert again.degraded == [] and again.timings_ms
    assert again.candidates is not hit.candidates and again.candidates[0].fate == CandidateFate.KEPT
