"""Extractive answers to questions in everyday words, over documents written here: questions that
name nothing and ask for no particular kind of value, answered from structured Markdown."""

from __future__ import annotations

import pytest

from app.rag.answer.extractive import compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

HOME = """# Working from home

## Equipment

Remote staff may claim a monthly allowance for their home broadband bill. Claims go through the
expenses form before the fifth of each month.

## Visiting the office

Desks in the office are booked through the front desk. Guests sign the visitor book on arrival.
"""


@pytest.mark.parametrize(
    "question",
    ["Will the company pay my broadband bill while I work from home?", "Is there an allowance for internet at home?"],
)
def test_a_question_naming_nothing_is_not_held_to_a_bar_its_missing_name_lowers(question: str) -> None:
    # No name in the question and no kind of value asked for: every sentence would share a zero on
    # those parts, and the answering sentence fell below the bar.
    answer = compose(question, list(sources({"home.md": HOME})), FakeEmbedder().embed)
    assert not answer.no_answer
    assert "monthly allowance for their home broadband bill" in answer.text
