"""Which sentence of the right document is quoted: the scores that tell the sentence that answers
from its neighbours that share the question's words. Documents written here, chunked by the real
chunker, embedded by the deterministic fake."""

from __future__ import annotations

from app.rag.answer.extractive import ExtractiveOptions, compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

THREADS = """# Send and Sync

Send and Sync are implemented automatically by the compiler.

Raw pointers are neither Send nor Sync.
"""

ERRORS = """# Error types

Error types should implement the standard formatting traits.

An error that is not Send cannot be returned from a spawned thread.
"""


def test_a_sentence_that_names_what_the_question_names_is_about_it_as_a_heading_that_does() -> None:
    # "Send" is in the other page's heading, and in this sentence: both say what they are about.
    kept = list(sources({"threads.md": THREADS, "errors.md": ERRORS}))
    answer = compose("Why does it matter that my error type is Send?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    quoted = [e.text for e in answer.evidence]
    assert "An error that is not Send cannot be returned from a spawned thread." in quoted, answer.text


PARKING = """# Parking

A parking request is signed off on the same day it arrives.

A parking request is signed off by the **Facilities Manager** of your building.
"""


def test_a_role_in_bold_is_the_name_a_who_question_asks_for() -> None:
    # Emphasis is markup, not words: "the **Facilities Manager**" names a role as "the Facilities
    # Manager" does, and the two sentences share the question's words equally.
    kept = list(sources({"parking.md": PARKING}))
    answer = compose("Who signs off on a parking request?", kept, None)
    assert answer.closest is not None
    assert "Facilities Manager" in answer.closest.text, answer.text


TESTING = """# Load testing

## Rules for testers

- Do not run denial-of-service attacks against the shared cluster. Short bursts of heavy scanning
  are tolerated, but deliberate outages are forbidden.
- Report every finding in the tracker.
"""


def test_a_list_item_is_quoted_with_the_sentences_that_continue_it() -> None:
    # The item's first sentence sets the rule up; the verdict is in the sentence after it, which
    # shares none of the question's words.
    kept = list(sources({"testing.md": TESTING}))
    answer = compose("Is a tester allowed to run a denial-of-service attack on the cluster?", kept, None)
    assert not answer.no_answer, answer.text
    assert "deliberate outages are forbidden" in answer.text, answer.text
    (item,) = [e for e in answer.evidence if "denial-of-service" in e.text]
    loc = item.location
    assert TESTING[loc.char_start : loc.char_end].endswith("deliberate outages are forbidden.")
    assert answer.text.count("Short bursts") == 1, answer.text  # not quoted again on its own


SCANS = """# Load testing

## Rules for testers

- A tester who runs a denial-of-service attack on the cluster by mistake stops at once. The platform
  team is paged, and restores the cluster from its last snapshot.
- Do not run denial-of-service attacks against the shared cluster. Short bursts of heavy scanning
  are tolerated, but deliberate outages are forbidden.
"""


def test_only_the_best_sentences_item_comes_whole() -> None:
    # Both items are quoted (the bars lowered so that both pass); the verdict is the best sentence
    # and comes whole. The other item is a supporting point: its continuation is not added, so an
    # answer of several items does not grow into their paragraphs.
    kept = list(sources({"testing.md": SCANS}))
    both = ExtractiveOptions(min_score_without_embeddings=0.0, relative_floor=0.7)
    question = "Is a tester allowed to run a denial-of-service attack on the cluster?"
    answer = compose(question, kept, None, options=both)
    assert "deliberate outages are forbidden" in answer.text, answer.text
    assert "A tester who runs a denial-of-service attack" in answer.text, answer.text
    assert "restores the cluster" not in answer.text, answer.text


SMART = """# Handles

## Handles do not add methods of their own

For example, this is why `Handle::leak` is written the way it is.

```rust
let raw = Handle::leak(handle);
```

Were it a method, readers could not tell the handle's methods from those of the value it holds.
"""


def test_a_sentence_that_only_says_why_comes_with_the_reason_after_it() -> None:
    # "this is why …" points at the reason; the reason is the next sentence of the section, past
    # the code block, and shares none of the question's words.
    kept = list(sources({"handles.md": SMART}))
    answer = compose("Why is `Handle::leak` written as a function and not a method?", kept, None)
    assert not answer.no_answer, answer.text
    assert "readers could not tell" in answer.text, answer.text


MOVE = """# Office move

## Your desk

Pack your desk into the crates before the move day.

## What the movers take

The movers take the following on the move day:

- Desks and chairs from every floor.
- Printers, once IT has unplugged them.
- Filing cabinets, emptied and locked, from beside each desk.
- Plants, watered in advance.
"""


def test_an_item_that_is_not_the_best_sentence_comes_under_its_lead_in_alone() -> None:
    # The best sentence answers; an item of a list elsewhere also passes the (lowered) bars. It is a
    # supporting point: quoted under its lead-in, without the items beside it, which only cost words.
    kept = list(sources({"move.md": MOVE}))
    loose = ExtractiveOptions(min_score_without_embeddings=0.0, relative_floor=0.5)
    answer = compose("Who packs my desk before the move day?", kept, None, options=loose)
    assert answer.evidence[0].text.startswith("Pack your desk"), answer.text
    assert "- Desks and chairs from every floor." in answer.text, answer.text
    assert "The movers take the following on the move day:" in answer.text, answer.text
    assert "Plants" not in answer.text and "Printers" not in answer.text, answer.text


METHODS = """# Partners

## Channels

Add partners to the project channel through one of these methods:

- Shared channels, the preferred way for partners.
- Guest accounts, for a single channel only.

Shared channels for partners need an admin to approve them.
"""


def test_a_sentence_after_an_item_under_its_lead_in_is_a_paragraph_of_its_own() -> None:
    # Composed in document order: the item under its lead-in, then a sentence after the list, which
    # must not read as the rest of the item.
    kept = list(sources({"partners.md": METHODS}))
    loose = ExtractiveOptions(min_score_without_embeddings=0.0, relative_floor=0.72)
    answer = compose("How are partners added with shared channels?", kept, None, options=loose)
    assert "- Shared channels, the preferred way for partners." in answer.text, answer.text
    assert "Shared channels for partners need an admin" in answer.text, answer.text
    assert "[1] Shared channels for partners" not in answer.text, answer.text
