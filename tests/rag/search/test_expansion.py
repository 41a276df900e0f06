"""Multi-query expansion with a scripted model: phrasings used, failure and timeout fall back to the
question alone, and the fused retrieval of several phrasings."""

from __future__ import annotations

import pytest

from app.container import Container
from app.errors import ProviderUnavailableError
from app.rag.search import fusion
from app.rag.search.expansion import expand, parse
from app.rag.search.retrieval import RetrievalParams, retrieve
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.rag.search.test_retrieval import _ingest


async def test_phrasings_are_cleaned_and_bounded() -> None:
    model = FakeChatModel()
    model.enqueue(
        '1. "penguin winter survival"\n- How do penguins survive winter?\n2) emperor penguin huddling\nfourth'
    )
    found = await expand(model, "How do penguins survive winter?", count=3, seconds=5)
    assert found.phrasings == ["penguin winter survival", "emperor penguin huddling", "fourth"]
    assert found.failed is None
    assert "How do penguins survive winter?" in model.history[0][0].content


@pytest.mark.parametrize(
    ("answer", "delay", "why"),
    [
        (ProviderUnavailableError("the model is down"), 0.0, "the model is down"),
        ("", 0.0, "no usable phrasing"),
        ("Here are some queries:\n" + "x" * 400, 0.0, "no usable phrasing"),
        ("late phrasing", 1.0, "did not finish within 0.1 s"),
    ],
)
async def test_failure_and_timeout_leave_the_question_alone(answer: str | Exception, delay: float, why: str) -> None:
    model = FakeChatModel()
    model.first_token_delay = delay
    model.enqueue(answer)
    found = await expand(model, "q", count=3, seconds=0.1)
    assert found.phrasings == [] and found.failed is not None and why in found.failed


def test_parse_drops_repeats_of_the_question() -> None:
    assert parse("Penguins, winter?\npenguins winter\nice", "penguins winter", 3) == ["ice"]


def test_alternatives_are_fused_with_the_question_weighted_highest(container: Container) -> None:
    embedder = FakeEmbedder()
    pid = _ingest(container, embedder, "e", {"a.txt": "penguins huddle", "b.txt": "emperor colony ice"})
    params = RetrievalParams(mode="keyword", top_k=5, threshold=-1.0)
    alone = retrieve(container.store, embedder, pid, "penguins", params)
    assert [c.document_name for c in alone.candidates] == ["a.txt"]
    both = retrieve(
        container.store, embedder, pid, "penguins", params, alternatives=["emperor colony"], alternative_weight=0.5
    )
    assert [c.document_name for c in both.candidates] == ["a.txt", "b.txt"]
    assert both.alternatives == ["emperor colony"]
    a, b = both.candidates
    assert a.fused_score == pytest.approx(fusion.rrf([([a.chunk_id], 1.0)])[a.chunk_id])
    assert b.fused_score == pytest.approx(0.5 / 61)
    assert b.keyword_rank is None  # ranks shown are the question's own
