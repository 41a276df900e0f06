"""A sentence about its own page ("This page outlines how to apply and how to renew", "Read more
here") shares the question's words but points at the answer instead of giving it: it scores at half,
so the steps that answer come first, and the trace says why. Documents written here, chunked by the
real chunker."""

from __future__ import annotations

from app.rag.answer.extractive import compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

PERMITS = """# Parking permits

This page outlines how to apply for a parking permit and how to renew a parking permit.

## Renewing

- Open the facilities portal
- Choose the permit that expires
- Upload this year's vehicle registration
"""


def test_the_steps_are_quoted_before_a_sentence_that_only_says_what_the_page_covers() -> None:
    kept = list(sources({"permits.md": PERMITS}))
    answer = compose("How do I renew my parking permit?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert answer.text.startswith("- Open the facilities portal"), answer.text
    assert "This page outlines" not in answer.text
    page = next(c for c in answer.considered if c.text.startswith("This page outlines"))
    assert "says what its page covers" in page.reason
