"""The extractive composer knows when a source is about something else than the question: another
edition of a look-alike document (a year or a quarter its title contradicts), or a subject the
sources never mention at all. Hand-made documents, chunked by the real chunker."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from app.llm.base import Vectors
from app.rag.answer.extractive import NO_ANSWER, ExtractiveOptions, compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

POLICY_2024 = """# Travel policy — 2024 edition

## What changed from 2023

- The approval limit for line managers rises from £1,500 to £2,000.
- Rail is now required for journeys that take under 4 hours by train.

## Approval

- Trips costing up to £2,000 in total are approved by your line manager.
"""

POLICY_2025 = """# Travel policy — 2025 edition

## What changed from 2024

- The approval limit for line managers rises from £2,000 to £2,500.
- Rail is now required for journeys that take under 5 hours by train.

## Approval

- Trips costing up to £2,500 in total are approved by your line manager.
"""

Q1 = """# Quarterly update — Q1 2025

Corvid Instruments had a good first quarter.

## Headline numbers

| Measure | Q1 2025 |
|---|---|
| Revenue | £9.8 million |
| New customers | 84 |

## Priorities for Q2

1. Move the cloud database to the Frankfurt region.
"""

Q2 = """# Quarterly update — Q2 2025

Corvid Instruments grew again this quarter.

## Headline numbers

| Measure | Q2 2025 |
|---|---|
| Revenue | £11.2 million |
| New customers | 97 |

## What went well

Revenue passed £11 million in a quarter for the first time.

## Priorities for Q3

1. Complete the move of the cloud database to Frankfurt.
"""


OVERVIEW = """# Corvid Instruments — company overview

## History

- **2016** — Head office moves to Wellington Place, Leeds.
- **2017** — The Glasgow office opens for customer support.

## Leadership team

| Role | Name |
|---|---|
| Chief Executive Officer | Eleanor Hartley |
| Chief Financial Officer | Helen Okafor |

## People

We welcomed 17 new colleagues this quarter, 9 of them in Lisbon.
"""


def test_a_year_the_document_title_contradicts_is_another_edition() -> None:
    # The 2025 edition ranks first and even says "2024" in a heading; its title says it is the
    # 2025 edition, so the 2024 edition answers a question about the 2024 policy.
    kept = list(sources({"travel-policy-2025.md": POLICY_2025, "travel-policy-2024.md": POLICY_2024}, target=60))
    answer = compose(
        "Up to what total trip cost can a line manager approve a trip under the 2024 travel policy?",
        kept,
        FakeEmbedder().embed,
    )
    assert not answer.no_answer
    assert {e.document_name for e in answer.evidence} == {"travel-policy-2024.md"}, answer.text
    assert "£2,000" in answer.text and "£2,500" not in answer.text


def test_a_quarter_no_document_is_titled_with_has_no_answer() -> None:
    # The Q2 update mentions Q3 (its priorities), so every document "names" what the question
    # names; but no document is the Q3 update, and the Q1 and Q2 revenues are not Q3's.
    kept = list(sources({"quarterly-update-2025-q2.md": Q2, "quarterly-update-2025-q1.md": Q1}, target=60))
    answer = compose("What was Corvid's revenue in Q3 2025?", kept, FakeEmbedder().embed)
    assert answer.no_answer, answer.text
    assert answer.text.startswith(NO_ANSWER) and "[" not in answer.text


def test_the_quarter_the_title_names_still_answers() -> None:
    kept = list(sources({"quarterly-update-2025-q2.md": Q2, "quarterly-update-2025-q1.md": Q1}, target=60))
    answer = compose("What was Corvid's revenue in Q1 2025?", kept, FakeEmbedder().embed)
    assert not answer.no_answer
    assert answer.evidence[0].text == "Revenue: £9.8 million"
    assert {e.document_name for e in answer.evidence} == {"quarterly-update-2025-q1.md"}


def test_a_subject_the_sources_never_mention_has_no_answer() -> None:
    # "Head office", a Who-question and the company's own name all match; "marketing" is in no
    # source at all: half of what the question is about is not there.
    # The bar for "the missing words carry the question" is on the embedder's scale: with the fake
    # bag-of-words embedder, dropping one word of nine leaves the question at cosine 0.95.
    kept = list(sources({"company-overview.md": OVERVIEW}, target=60))
    options = ExtractiveOptions(beyond_similarity=0.96)
    answer = compose("Who is the head of marketing at Corvid Instruments?", kept, FakeEmbedder().embed, options=options)
    assert answer.no_answer, answer.text
    assert "Wellington" not in answer.text


def test_a_question_word_the_sources_paraphrase_does_not_stop_the_answer() -> None:
    # "joined" is in no source ("welcomed" is), but "new colleagues" is: most of the question is there.
    kept = list(sources({"company-overview.md": OVERVIEW}, target=60))
    answer = compose("How many new colleagues joined this quarter?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "17 new colleagues" in answer.text


def test_words_that_only_ask_for_a_name_need_not_be_in_the_sources() -> None:
    it = "# IT security\n\n## Remote access\n\nFrom outside an office, connect through the company VPN, Corvid Connect.\n"
    kept = list(sources({"it-security.md": it}))
    for question in ("What is the name of the company VPN?", "What is the company VPN called?"):
        answer = compose(question, kept, FakeEmbedder().embed)
        assert not answer.no_answer and "Corvid Connect" in answer.text, (question, answer.text)


class SynonymEmbedder(FakeEmbedder):
    """The word-hashing fake, knowing that a format is a type and "accepted" is "upload": an embedder
    for which the question's missing words mean something the sources say in other words."""

    SAME = {"formats": "types", "accepted": "upload"}

    def embed(self, texts: Sequence[str]) -> Vectors:
        return super().embed([re.sub(r"\w+", lambda m: self.SAME.get(m[0].lower(), m[0]), t) for t in texts])


UPLOADS = """# Uploads

## What file types can I upload?

The file types you can upload are plain text, Markdown, HTML and PDF.
"""


def test_missing_words_the_sources_say_in_other_words_do_not_stop_the_answer() -> None:
    # Half the focus words ("formats", "accepted") are in no source, but to the embedder they mean
    # what the answering sentence says ("types", "upload"): the documents do answer.
    kept = list(sources({"uploads.md": UPLOADS}))
    question = "Which text formats are accepted for upload?"
    any_score = ExtractiveOptions(min_score=0.0)  # the fakes' cosines are low: only this rule may say no
    assert compose(question, kept, FakeEmbedder().embed, options=any_score).no_answer  # no synonyms, no answer
    answer = compose(question, kept, SynonymEmbedder().embed, options=any_score)
    assert not answer.no_answer, answer.text
    assert "Markdown" in answer.text


@pytest.mark.slow
def test_a_subject_the_sources_never_mention_on_real_minilm_vectors() -> None:
    from app.llm.embedders.local import LocalEmbedder

    embed = LocalEmbedder().embed
    overview = list(sources({"company-overview.md": OVERVIEW}, target=60))
    assert compose("Who is the head of marketing at Corvid Instruments?", overview, embed).no_answer
    uploads = list(sources({"uploads.md": UPLOADS}))
    answer = compose("Which text formats are accepted for upload?", uploads, embed)
    assert not answer.no_answer and "Markdown" in answer.text, answer.text


GATEWAY = """# Gateway

## Timeouts

Gateway APIs reject a request body larger than 2 MB with status 413.
"""

PORTAL_INTRO = """# Portal API overview

This overview introduces the portal and its API for new team members joining the project.
"""


def test_a_name_the_question_writes_in_the_singular_is_the_documents_plural() -> None:
    # "API" asked, "APIs" written: the gateway's document names what the question names, so its
    # answering sentence is not scored at half below an overview that repeats the question's words.
    kept = list(sources({"portal.md": PORTAL_INTRO, "gateway.md": GATEWAY}))
    answer = compose("How large a request body does a gateway API accept?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert answer.text.startswith("Gateway APIs reject a request body larger than 2 MB"), answer.text
