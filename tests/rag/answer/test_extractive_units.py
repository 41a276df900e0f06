"""Which unit a sentence is scored as: names a sentence writes as
an acronym, a table's column names. Documents written here, chunked by the real chunker, embedded by
the deterministic fake."""

from __future__ import annotations

from app.rag.answer.extractive import compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

PREFIXES = """# Conversion prefixes

Conversions prefixed `to_` stay at the same level of abstraction but do some work.

Conversions prefixed `as_` expose a view into the underlying representation.

| Prefix | Cost | Ownership |
| ------ | ---- | --------- |
| `as_` | Free | borrowed to borrowed |
| `to_` | Expensive | borrowed to owned |
"""


def test_a_table_row_that_writes_its_column_names_has_them_as_its_own_words() -> None:
    # "costly" is the row's "cost" column: the words the row says, not only what it is about.
    kept = list(sources({"prefixes.md": PREFIXES}))
    answer = compose("What does a `to_` prefix tell callers about how costly it is?", kept, FakeEmbedder().embed)
    assert "`to_`: cost Expensive, ownership borrowed to owned" in [e.text for e in answer.evidence], answer.text


EXPENSES = """# Expenses

A Travel Expense Report (TERs) is a form in the finance portal that lists what a trip cost.

## Reports and small trips

A TER is no longer required for day trips.

Keep the receipts on file in the portal for a year after each trip.
"""


def test_a_sentence_that_writes_the_acronym_of_a_name_the_question_spells_out_names_it() -> None:
    # "TER" is "Travel Expense Report": the sentence that answers writes it short.
    kept = list(sources({"expenses.md": EXPENSES}, target=30))
    answer = compose("Do I still need a Travel Expense Report on file for a day trip?", kept, FakeEmbedder().embed)
    assert "A TER is no longer required" in answer.text, answer.text


ENVIRONMENTS = """# Environments

## The first deployment

The first deployment should be shown to the customer in a production-like environment to get feedback early.

## Criteria for a production-like environment

- Runs the same operating system as production.
- Is sized and configured the same way as production.
- Mirrors the networking topology of production.
"""


def test_a_question_word_its_heading_has_counts_for_a_sentence_in_part() -> None:
    # The criteria never say "production-like" themselves: their heading does (words alone, no embedder).
    kept = list(sources({"environments.md": ENVIRONMENTS}))
    answer = compose("What does it take for a staging environment to count as production-like?", kept, None)
    assert "Runs the same operating system as production." in answer.text, answer.text


STABILITY = """# Stability

Public dependencies are crates whose types appear in your public API.

A crate cannot be marked stable (>=1.0.0) unless every public dependency is stable too.
"""


def test_a_version_the_question_writes_is_a_name_the_sentence_that_writes_it_has() -> None:
    # "1.0" is a number like "2024": the sentence that writes it is about it as much as the one that
    # writes the question's other name, "API".
    kept = list(sources({"stability.md": STABILITY}))
    answer = compose("Can my crate go 1.0 while its public API uses a dependency at 0.x?", kept, None)
    assert "A crate cannot be marked stable (>=1.0.0)" in answer.text, answer.text
