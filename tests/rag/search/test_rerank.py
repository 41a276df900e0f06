"""Reranking over a real retrieval: ordering, blending with the fused rank, failure and the judge."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.container import Container
from app.errors import ProviderError, ProviderTimeoutError
from app.rag.search import rerank
from app.rag.search.degradation import DegradationReason
from app.rag.search.judge import UNRATED, ChatJudge, parse_ratings
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.rag.search.stages import Stage
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.rag.search.test_retrieval import _ingest

FILES = {
    "a.txt": "penguins penguins penguins winter",
    "b.txt": "penguins winter colony",
    "c.txt": "winter storms in the south",
    "d.txt": "penguins",
}


class Scripted:
    """A reranker returning fixed scores by passage text (or raising)."""

    name = "scripted"

    def __init__(self, scores: dict[str, float] | Exception) -> None:
        self.scores = scores
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append(list(passages))
        if isinstance(self.scores, Exception):
            raise self.scores
        return [self.scores[p] for p in passages]


def _retrieved(container: Container, top_k: int = 2):  # type: ignore[no-untyped-def]
    embedder = FakeEmbedder()
    pid = _ingest(container, embedder, "r", FILES)
    return retrieve(container.store, embedder, pid, "penguins winter", RetrievalParams(top_k=top_k, threshold=-1.0))


def test_blend_arithmetic() -> None:
    # fused positions give 1, 2/3, 1/3; reranker scores normalise to 0, 0.5, 1
    assert rerank.blend([0.0, 5.0, 10.0], 0.5) == pytest.approx([0.5, 0.5 * 0.5 + 0.5 * 2 / 3, 0.5 + 0.5 / 3])
    assert rerank.blend([3.0, 3.0], 0.9) == pytest.approx([0.1, 0.05])  # equal scores: fused order decides
    assert rerank.blend([], 0.5) == []


async def test_the_reranker_reorders_its_window_and_top_k_follows(container: Container) -> None:
    result = _retrieved(container)
    fused = [c.document_name for c in result.candidates]
    assert result.kept == result.candidates[:2]
    last = fused[2]  # the reranker loves the third: it moves to the top and is kept
    scripted = Scripted({c.text: (10.0 if c.document_name == last else 1.0) for c in result.candidates})
    given = list(result.candidates)
    result, outcome = await rerank.rerank(result, scripted, window=3, weight=1.0)

    assert outcome == rerank.RerankOutcome("scripted", 3)
    assert [c.document_name for c in given] == fused and all(c.rerank_score is None for c in given)  # a new result
    assert [c.document_name for c in result.candidates] == [last, fused[0], fused[1], *fused[3:]]
    assert [c.document_name for c in result.kept] == [last, fused[0]]
    assert [c.rerank_score for c in result.candidates[:3]] == [10.0, 1.0, 1.0]
    assert result.candidates[3].rerank_score is None  # beyond the window: not scored, kept its place
    assert Stage.RERANK in result.timings_ms


async def test_a_light_weight_keeps_the_fused_order_against_a_small_preference(container: Container) -> None:
    result = _retrieved(container)
    fused = [c.document_name for c in result.candidates]
    scores = {c.text: float(i) for i, c in enumerate(result.candidates[:2])}  # prefers the second a little
    result, _ = await rerank.rerank(result, Scripted(scores), window=2, weight=0.3)
    # second: 0.3 * 1 + 0.7 * 0.5 = 0.65 < first: 0.7 * 1 = 0.7
    assert [c.document_name for c in result.candidates] == fused


async def test_a_failing_reranker_keeps_the_fused_order_and_says_so(container: Container) -> None:
    result = _retrieved(container)
    fused = [c.chunk_id for c in result.candidates]
    result, outcome = await rerank.rerank(result, Scripted(ProviderTimeoutError("too slow")), window=3, weight=0.7)
    assert outcome.failed == "too slow"
    assert [c.chunk_id for c in result.candidates] == fused
    assert [d.reason for d in result.degraded] == [DegradationReason.RERANK_FAILED]


async def test_the_judge_rates_within_its_budget() -> None:
    model = FakeChatModel()
    model.enqueue("[1] 0\n[2] 3\n[3] 1")
    judge = ChatJudge(model, candidates=3, chars=20, timeout=5)
    scores = await judge.rerank("penguins?", ["one " * 30, "two", "three", "four"])
    assert scores == [0.0, 3.0, 1.0, UNRATED]  # the fourth is beyond its budget
    (sent,) = model.history
    assert "[1] one one one one one…" in sent[0].content and "four" not in sent[0].content
    assert judge.name == "judge:fake/scripted"


async def test_the_judge_fails_when_it_rates_nothing_or_times_out() -> None:
    model = FakeChatModel()
    model.enqueue("They are all relevant!")
    with pytest.raises(ProviderError, match="rated no passage"):
        await ChatJudge(model, candidates=3, chars=100, timeout=5).rerank("q", ["a", "b"])
    slow = FakeChatModel()
    slow.first_token_delay = 2.0
    with pytest.raises(ProviderTimeoutError):
        await ChatJudge(slow, candidates=3, chars=100, timeout=0.1).rerank("q", ["a", "b"])


def test_ratings_are_read_from_common_shapes() -> None:
    assert parse_ratings("[1] 2\n2: 3\n(3) 0\n[9] 3\n[1] 0\nPassage 4 - 1", 4) == {0: 2, 1: 3, 2: 0, 3: 1}
