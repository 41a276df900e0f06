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


REPOSITORIES = """# Repositories

## New repositories

Every public repository should contain the following files:

- LICENSE
- README.md
- CONTRIBUTING.md

Private repositories are reviewed by the platform team every quarter.
"""


def test_a_lead_in_comes_with_the_short_list_it_introduces() -> None:
    kept = list(sources({"repositories.md": REPOSITORIES}))
    answer = compose("Which files should a new public repository contain?", kept, FakeEmbedder().embed)
    assert not answer.no_answer
    assert "the following files: [1]\n- LICENSE\n- README.md\n- CONTRIBUTING.md" in answer.text
    (evidence,) = [e for e in answer.evidence if "following files" in e.text]
    assert evidence.text.endswith("- CONTRIBUTING.md")
    assert REPOSITORIES[evidence.location.char_start : evidence.location.char_end].endswith("CONTRIBUTING.md")


LINKS = """# Expenses

<a id="claims"></a>
## Claims {#claims}

Claims are filed with the [expenses form](../forms/expenses.md) within 30 days of the purchase.
{% include "footer" %} Receipts go to [the finance team][finance] by post. <!-- check the address -->
"""


def test_quoted_sentences_read_as_rendered_without_links_or_hidden_markup() -> None:
    kept = list(sources({"expenses.md": LINKS}))
    answer = compose("Within how many days must a claim be filed?", kept, FakeEmbedder().embed)
    assert "Claims are filed with the expenses form within 30 days of the purchase. [1]" in answer.text
    assert "](" not in answer.text and "{%" not in answer.text and "<!--" not in answer.text


GLOSSARY = """# Release process

## Code freeze

What a code freeze is depends on the release.
Every code freeze is announced in the team channel.

A code freeze is a two-day window in which only fixes for the coming release are merged by the
release captain.
"""


def test_a_definition_question_prefers_the_sentence_that_defines_the_term() -> None:
    kept = list(sources({"release.md": GLOSSARY}))
    answer = compose("What is a code freeze?", kept, FakeEmbedder().embed)
    assert not answer.no_answer
    best = max(answer.evidence, key=lambda e: e.score)
    assert best.text.startswith("A code freeze is a two-day window")


RELIABILITY = """# Reliability

## Targets

Our Service Level Objective for the public API is 99.9% availability in each calendar month.
Incidents that breach it are reviewed within five working days.
"""


def test_an_acronym_in_the_question_finds_the_words_it_stands_for() -> None:
    # "SLO" is never written: the document spells it out, and is not a document about something else.
    kept = list(sources({"reliability.md": RELIABILITY}))
    answer = compose("What SLO does the public API have?", kept, FakeEmbedder().embed)
    assert not answer.no_answer
    assert "99.9% availability" in answer.text


REFERENCE_LINKS = """# Raw pointers

## Turning a box into a pointer

A box is turned into a raw pointer with into_raw, and the memory is then yours to free.

[into_raw]: https://doc.rust-lang.org/std/boxed/struct.Box.html#method.into_raw
[from_raw]: https://doc.rust-lang.org/std/boxed/struct.Box.html#method.from_raw "Box::from_raw"
"""


def test_markdown_link_definitions_are_not_quoted_as_sentences() -> None:
    kept = list(sources({"pointers.md": REFERENCE_LINKS}))
    answer = compose("How is a box turned into a raw pointer with into_raw?", kept, FakeEmbedder().embed)
    assert "A box is turned into a raw pointer with into_raw" in answer.text
    assert "https://" not in answer.text


def test_a_line_of_link_definitions_is_recognised_in_linear_time() -> None:
    # Were a url allowed to contain "[", a line like this could be split 2^n ways before failing.
    import time

    from app.rag.answer.extractive import _LINK_DEFINITIONS

    started = time.process_time()
    assert _LINK_DEFINITIONS.fullmatch("[a]: " + "x[a]:" * 5_000 + "x !") is None
    assert _LINK_DEFINITIONS.fullmatch("[a]: http://a 'A' [b]: http://b") is not None
    assert time.process_time() - started < 2


CAPTIONS = """# cachelib

## Setup

Install the package

```sh
pip install cachelib
```

Create the cache table

```sql
CREATE TABLE IF NOT EXISTS cache_entries (key TEXT PRIMARY KEY, value BLOB)
```

Entries expire after one hour unless a lifetime is given.
"""


def test_a_caption_without_a_full_stop_comes_with_the_code_block_it_names() -> None:
    # READMEs caption a block with a short line and no colon: the line only names what the block does.
    kept = list(sources({"cachelib.md": CAPTIONS}))
    answer = compose("How do I create the cache table?", kept, FakeEmbedder().embed)
    assert "Create the cache table" in answer.text
    assert "CREATE TABLE IF NOT EXISTS cache_entries" in answer.text
    # A sentence that ends with a full stop says what it says: no block follows it in.
    told = compose("When do entries expire?", kept, FakeEmbedder().embed)
    assert "Entries expire after one hour" in told.text and "```" not in told.text
