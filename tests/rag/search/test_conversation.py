"""The history-aware query (issue 15, item 1): exactly the weighted, normalised sum of the turns'
vectors and the weighted union of their keyword terms, the current message weighing most."""

from __future__ import annotations

import numpy as np
import pytest

from app.rag.index import keyword_index
from app.rag.search import conversation
from app.rag.search.conversation import HistoryWeights
from tests.fakes import FakeEmbedder


def test_without_earlier_turns_it_is_the_plain_query() -> None:
    embedder = FakeEmbedder()
    query = conversation.build(embedder, "Penguins in winter", [])
    assert np.allclose(query.vector, embedder.embed(["Penguins in winter"])[0])
    assert query.terms == keyword_index.tokenizer().question("Penguins in winter")
    assert query.earlier == ()


def test_earlier_turns_weigh_less_the_further_back_they_are() -> None:
    embedder = FakeEmbedder()
    weights = HistoryWeights(turns=2, decay=0.8, term_decay=0.25)
    earlier = ["ignored: three turns back", "tell me about Lisbon", "and its desks?"]
    query = conversation.build(embedder, "parking spaces?", earlier, weights)
    assert query.earlier == ("tell me about Lisbon", "and its desks?")  # the two most recent
    v = embedder.embed(["parking spaces?", "and its desks?", "tell me about Lisbon"])
    expected = v[0] + 0.8 * v[1] + 0.64 * v[2]
    assert np.allclose(query.vector, expected / np.linalg.norm(expected), atol=1e-6)
    tokenizer = keyword_index.tokenizer()
    (lisbon,) = tokenizer.question("Lisbon")
    (parking,) = tokenizer.question("parking")
    assert query.terms[parking] == 1 and query.terms[lisbon] == pytest.approx(0.25**2)
    assert all(t not in query.terms for t in tokenizer.question("ignored"))


def test_a_word_of_the_message_keeps_its_full_weight_when_an_earlier_turn_repeats_it() -> None:
    query = conversation.build(FakeEmbedder(), "Lisbon parking", ["Lisbon desks"], HistoryWeights(2, 0.8, 0.25))
    (lisbon,) = keyword_index.tokenizer().question("Lisbon")
    assert query.terms[lisbon] == 1


def test_history_off_is_the_plain_query() -> None:
    embedder = FakeEmbedder()
    query = conversation.build(embedder, "parking?", ["Lisbon"], HistoryWeights(turns=0))
    assert query.earlier == () and np.allclose(query.vector, embedder.embed(["parking?"])[0])


@pytest.mark.parametrize(
    ("message", "continues"),
    [
        ("And how many can carry over?", True),
        ("what about contractors?", True),
        ("Does that apply to str as well?", True),
        ("How long does it take?", True),
        ("Who do I report a stolen laptop to?", False),
        ("How many days of annual leave does everyone get?", False),
        # Long questions name their subject even when a pronoun appears in them.
        ("I think something is running on my work laptop; should I shut it down right away?", False),
    ],
)
def test_a_message_that_reads_as_a_continuation(message: str, continues: bool) -> None:
    assert conversation.leans_back(message) is continues
