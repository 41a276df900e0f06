"""Pseudo-relevance feedback over a real index: Rocchio's arithmetic, and RM3-style terms that bring
in a chunk sharing words with the first result but none with the question."""

from __future__ import annotations

import numpy as np
import pytest

from app.container import Container
from app.rag.search import feedback
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.rag.search.stages import Stage
from tests.fakes import FakeEmbedder
from tests.rag.search.test_retrieval import _ingest


def test_rocchio_moves_the_question_towards_the_feedback_and_stays_unit_length() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    moved = feedback.rocchio(q, [np.array([0.0, 1.0]), np.array([0.0, 1.0])], beta=1.0)
    np.testing.assert_allclose(moved, [2**-0.5, 2**-0.5], rtol=1e-6)
    assert feedback.rocchio(q, [], beta=1.0) is q


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_feedback_terms_find_what_the_question_alone_misses(container: Container, mode: str) -> None:
    embedder = FakeEmbedder()
    files = {"a.txt": "penguins huddle emperor colony", "b.txt": "emperor colony antarctica", "c.txt": "tea leaves"}
    pid = _ingest(container, embedder, "f", files)
    plain = RetrievalParams(mode=mode, top_k=5, threshold=-1.0)
    alone = retrieve(container.store, embedder, pid, "penguins", plain)
    assert [c.document_name for c in alone.candidates][:1] == ["a.txt"]
    with_feedback = RetrievalParams(mode=mode, top_k=5, threshold=-1.0, feedback_docs=1, feedback_vector_weight=0.0)
    found = retrieve(container.store, embedder, pid, "penguins", with_feedback)
    names = [c.document_name for c in found.candidates]
    assert names[:2] == ["a.txt", "b.txt"]  # b shares "emperor colony" with a, nothing with the question
    assert "c.txt" not in names or names.index("c.txt") > 1
    assert Stage.RETRIEVAL_FEEDBACK in found.timings_ms
    if mode == "keyword":
        assert "b.txt" not in [c.document_name for c in alone.candidates]


def test_convex_fusion_arithmetic() -> None:
    from app.rag.search import fusion

    fused = fusion.convex({1: 0.9, 2: 0.5, 3: 0.1}, {2: 10.0, 3: 4.0}, alpha=0.75)
    assert fused == pytest.approx({1: 0.75, 2: 0.75 * 0.5 + 0.25, 3: 0.0})
    assert fusion.convex({1: 0.4}, {}, 0.5) == {1: 0.5}  # one candidate: normalised to 1


def test_convex_fusion_ranks_by_scores_not_ranks(container: Container) -> None:
    embedder = FakeEmbedder()
    files = {"a.txt": "penguins penguins penguins penguins", "b.txt": "penguins owls", "c.txt": "tea"}
    pid = _ingest(container, embedder, "cv", files)
    # Convex fusion's arithmetic alone (document evidence adds to the fused score: test_evidence.py).
    keyword_only = RetrievalParams(top_k=5, threshold=-1.0, fusion="convex", convex_alpha=0.0, document_coverage=0.0)
    found = retrieve(container.store, embedder, pid, "penguins", keyword_only)
    assert [c.document_name for c in found.candidates][:2] == ["a.txt", "b.txt"]  # BM25 alone decides
    assert found.candidates[0].fused_score == 1.0
    vector_only = RetrievalParams(top_k=5, threshold=-1.0, fusion="convex", convex_alpha=1.0, document_coverage=0.0)
    by_cosine = retrieve(container.store, embedder, pid, "penguins", vector_only).candidates
    assert [c.score for c in by_cosine] == sorted((c.score for c in by_cosine), reverse=True)


def test_the_result_says_how_it_fused(container: Container) -> None:
    """Convex for a hybrid search (the default), RRF when asked for or when several phrasings are fused,
    and nothing when one ranking ran alone: the trace and the search results show this value."""
    embedder = FakeEmbedder()
    pid = _ingest(container, embedder, "fz", {"a.txt": "penguins breed in winter", "b.txt": "owls hunt at night"})

    def fused(**kw: object) -> object:
        params = RetrievalParams(top_k=5, threshold=-1.0, **kw)  # type: ignore[arg-type]
        return retrieve(container.store, embedder, pid, "penguins", params).fusion

    assert RetrievalParams().fusion == "convex"
    assert fused() == "convex"
    assert fused(fusion="rrf") == "rrf"
    assert fused(mode="vector") is None and fused(mode="keyword") is None
    found = retrieve(
        container.store, embedder, pid, "penguins", RetrievalParams(top_k=5, threshold=-1.0), alternatives=["owls"]
    )
    assert found.fusion == "rrf"
