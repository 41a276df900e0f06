"""Which of a question's names the sources must write before the extractive composer answers: not the
asker's own case ("an SUV", "my type `Foo`"), which documents cover by the rule for its kind; but an
identifier in code quotes ("`must_use`") and a version ("Python 2.7"), which a source that answers
writes as they are. Hand-made documents, chunked by the real chunker."""

from __future__ import annotations

from app.rag.answer.extractive import NO_ANSWER, compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

TRAVEL = """# Travel guide

## Hire cars

Staff must book the smallest hire car class that fits the trip unless a manager approves a larger vehicle.
Hire cars are booked through the travel desk, never on a personal card.

## Hotels

Hotels are booked through the travel desk as well.
"""

SECRETS = """# Secrets

## Leaked keys

A key that was pushed to any branch stays in the git history, even if the branch was never merged: rotate it at once.
Keys belong in the vault, not in the repository.
"""

ATTRIBUTES = """# Function attributes

## Inlining

Small functions that are called across crates should be marked `#[inline]` when profiling shows a gain.
Functions are not inlined across crates otherwise.
"""

TOOLS = """# Poolkit

## Requirements

Poolkit works on Python 3.9 and later, on Linux, macOS and Windows.
Install it with pip.
"""


def test_a_name_the_asker_gives_as_their_own_case_need_not_be_in_the_sources() -> None:
    # "an SUV" is one instance of the kind the guide has a rule for; no page will say "SUV".
    kept = list(sources({"travel.md": TRAVEL}))
    answer = compose("Can I book an SUV as my hire car on a work trip?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "smallest hire car class" in answer.text


def test_an_example_name_after_a_kind_word_is_the_askers_case_too() -> None:
    kept = list(sources({"secrets.md": SECRETS}))
    answer = compose(
        "Someone pushed an API key to a branch that was never merged. Are we fine?", kept, FakeEmbedder().embed
    )
    assert not answer.no_answer, answer.text
    assert "stays in the git history" in answer.text


def test_a_name_the_question_asks_about_is_still_one_the_sources_must_write() -> None:
    # "the Manchester office" is not the asker's case but what they ask about.
    kept = list(sources({"travel.md": TRAVEL}))
    answer = compose("Can I book hire cars for the Manchester office on a personal card?", kept, FakeEmbedder().embed)
    assert answer.no_answer and answer.text.startswith(NO_ANSWER)


def test_an_identifier_in_code_quotes_that_no_source_writes_has_no_answer() -> None:
    kept = list(sources({"attributes.md": ATTRIBUTES}))
    embed = FakeEmbedder().embed
    asked = compose("Should small functions called across crates be marked `#[must_use]`?", kept, embed)
    assert asked.no_answer, asked.text
    # The identifier the source does write is answered.
    written = compose("Should small functions called across crates be marked `#[inline]`?", kept, embed)
    assert not written.no_answer and "profiling shows a gain" in written.text


def test_an_identifier_the_asker_proposes_as_a_name_need_not_be_in_the_sources() -> None:
    kept = list(sources({"attributes.md": ATTRIBUTES}))
    answer = compose(
        "Should small functions called across crates be marked inline and called `inline_small`?",
        kept,
        FakeEmbedder().embed,
    )
    assert not answer.no_answer, answer.text


def test_a_version_no_source_writes_has_no_answer() -> None:
    kept = list(sources({"poolkit.md": TOOLS}))
    embed = FakeEmbedder().embed
    assert compose("Does Poolkit work on Python 2.7?", kept, embed).no_answer
    assert not compose("Does Poolkit work on Python 3.9?", kept, embed).no_answer


BRANCHES = """# Branches

## Tests

Tests may follow in a later branch when the release is urgent and the lead agrees.
"""

REVIEWS = """# Reviews

## Tests

Tests are committed in the same PR as the code they test, never in a later one.
"""


def test_the_askers_case_is_a_name_like_any_other_where_a_source_writes_it() -> None:
    # "a follow-up PR" is the asker's case, but the review page does say "PR": the page that never
    # does is not about it, however well it scores on the other words.
    kept = list(sources({"branches.md": BRANCHES, "reviews.md": REVIEWS}))
    answer = compose("Can I merge now and send the tests in a follow-up PR?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert answer.evidence[0].document_name == "reviews.md", answer.text
