"""The stream benchmarks' loopback provider (benchmarks/openai_loopback.py) answers as a model whose
answer the answer guard keeps: a rejected one would make every benchmark turn pay for the
extractive answer that replaces it, which a real model's kept answer does not."""

from __future__ import annotations

import pytest

from app.rag import prompting
from app.rag.answer import guard
from benchmarks.openai_loopback import words
from tests.fakes import FakeEmbedder

QUESTION = "what do penguins eat?"
SOURCES = [
    prompting.Source(
        1,
        "penguins.md",
        "lines 1-3",
        "Emperor penguins eat krill, fish and squid. They dive to five hundred metres to catch them. "
        "Both parents feed the chicks until they can swim.",
    ),
    prompting.Source(
        2,
        "seals.md",
        "lines 1-2",
        "Leopard seals hunt penguins near the edge of the ice. In winter they also eat krill.",
    ),
]


@pytest.mark.parametrize("tokens", [8, 20, 40])
def test_the_loopbacks_answer_is_one_the_guard_keeps(tokens: int) -> None:
    prompt = prompting.user_turn(QUESTION, SOURCES, rag=True, cite=True)
    pieces = words({"messages": [{"role": prompt.role, "content": prompt.content}]}, tokens)
    answer = guard.AnswerGuard(QUESTION, SOURCES)
    for piece in pieces:
        assert not answer.feed(piece).stop
    verdict = answer.review(FakeEmbedder().embed)
    assert len(pieces) == tokens
    assert verdict.decision is not guard.Decision.FALLBACK, verdict.reasons
