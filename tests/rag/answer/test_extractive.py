"""The extractive composer on hand-made documents, chunked by the real chunker: the right sentences,
their exact spans in the document, de-duplication, look-alike documents and the no-answer case."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterator

import pytest

from app.llm.tokenizers import EstimateTokenizer
from app.rag.answer import extractive
from app.rag.answer.extractive import NO_ANSWER, compose
from app.rag.ingest.chunking import chunk
from app.rag.ingest.parsers.markdown import parse_markdown
from app.rag.search.candidates import Location
from app.services.chat.events import SourceRef
from tests.fakes import FakeEmbedder

HANDBOOK = """# Aurora handbook

Aurora is a small desktop tool that keeps a team's shared notes in sync across laptops.

## Installation

To install Aurora, download the installer and run `aurora setup` in a terminal. The setup wizard
checks that your machine has at least 2 GB of free disk space. Installation takes about two minutes
on a typical laptop. If a previous version is present, setup upgrades it in place.

## Licence key

Licence keys are 24 characters long and start with `AUR-`. A key can be used on three machines at
once. Without a key Aurora runs in read-only mode for 14 days.

## Troubleshooting

If notes stop syncing, first run `aurora status`. Deleting the cache folder is safe; Aurora rebuilds
it on the next start.
"""

LEEDS = """# Leeds office

The Leeds office is the head office.

| Item | Leeds |
|---|---|
| Desks | 142 |
| Car parking spaces | 38 |
"""

BRISTOL = """# Bristol office

The Bristol office is home to product design.

| Item | Bristol |
|---|---|
| Desks | 64 |
| Car parking spaces | 12 |
"""


def sources(documents: dict[str, str], *, target: int = 400, overlap: int = 0) -> Iterator[SourceRef]:
    """Every chunk of every document as a kept source, ranked in the order given."""
    number = 0
    for document_id, (name, text) in enumerate(documents.items(), start=1):
        for spec in chunk(parse_markdown(text), EstimateTokenizer(), target_tokens=target, overlap_tokens=overlap):
            number += 1
            location = Location(
                spec.char_start, spec.char_end, spec.line_start, spec.line_end, spec.page, spec.heading_path
            )
            yield SourceRef(number, number, document_id, name, location, 0.5, number, spec.text)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_picks_the_answering_sentence_and_cites_its_exact_span() -> None:
    kept = list(sources({"aurora.md": HANDBOOK}, target=60))
    assert len(kept) > 1  # the sentence is not alone in its chunk, nor the chunk alone
    answer = compose("How long does the installation take?", kept, FakeEmbedder().embed)

    assert not answer.no_answer
    first = answer.evidence[0]
    assert first.text == "Installation takes about two minutes on a typical laptop."
    loc = first.location
    assert HANDBOOK[loc.char_start : loc.char_end] == "Installation takes about two minutes\non a typical laptop."
    assert (loc.line_start, loc.line_end) == (line_of(HANDBOOK, "Installation takes"), line_of(HANDBOOK, "on a typ"))
    assert loc.heading_path == "Aurora handbook > Installation"
    source = kept[first.number - 1]
    assert source.text[first.chunk_start : first.chunk_end] == HANDBOOK[loc.char_start : loc.char_end]
    assert f"{first.text} [{first.number}]" in answer.text
    assert answer.used[0] == first.number


def test_the_heading_path_follows_headings_inside_the_chunk() -> None:
    (whole,) = sources({"aurora.md": HANDBOOK})  # one chunk: its own heading path is the title's
    assert whole.location.heading_path == "Aurora handbook"
    answer = compose("What do licence keys start with?", [whole], None)
    assert answer.evidence[0].location.heading_path == "Aurora handbook > Licence key"
    assert answer.evidence[0].text == "Licence keys are 24 characters long and start with `AUR-`."


def test_overlapping_chunks_give_each_sentence_once() -> None:
    kept = list(sources({"aurora.md": HANDBOOK}, target=40, overlap=20))
    assert sum("2 GB of free disk space" in s.text for s in kept) >= 2  # the overlap really repeats it
    answer = compose("How much free disk space does the setup wizard check for?", kept, FakeEmbedder().embed)
    assert answer.text.count("2 GB") == 1


def test_sentences_are_ordered_by_document_rank_then_position() -> None:
    kept = list(sources({"aurora.md": HANDBOOK}, target=60))
    everything = extractive.ExtractiveOptions(relative_floor=0.0, min_score_without_embeddings=0.0)
    answer = compose("What happens without a licence key, and how long are keys?", kept, None, options=everything)
    assert [e.number for e in answer.evidence] == sorted(e.number for e in answer.evidence)
    spans = [e.location.char_start for e in answer.evidence]
    assert len(spans) == everything.max_sentences and spans == sorted(spans)


def test_table_rows_answer_and_look_alike_documents_are_told_apart() -> None:
    # Leeds ranks first, but the question names Bristol: the Bristol row answers.
    kept = list(sources({"office-leeds.md": LEEDS, "office-bristol.md": BRISTOL}))
    answer = compose("How many desks are there in the Bristol office?", kept, FakeEmbedder().embed)
    assert answer.evidence[0].text == "Desks: 64"
    assert answer.evidence[0].document_name == "office-bristol.md"
    assert BRISTOL[answer.evidence[0].location.char_start : answer.evidence[0].location.char_end] == "| Desks | 64 |"
    assert "142" not in answer.text


def test_a_question_about_something_the_documents_never_name_has_no_answer() -> None:
    kept = list(sources({"office-leeds.md": LEEDS, "office-bristol.md": BRISTOL}))
    answer = compose("How many car parking spaces does the Manchester office have?", kept, FakeEmbedder().embed)
    assert answer.no_answer and answer.evidence == () and answer.used == ()
    assert answer.text.startswith(NO_ANSWER)
    assert answer.closest is not None and answer.closest.document_name in answer.text


def test_unrelated_question_has_no_answer_with_and_without_embeddings() -> None:
    kept = list(sources({"aurora.md": HANDBOOK}, target=60))
    for embed in (FakeEmbedder().embed, None):
        answer = compose("What is the boiling point of mercury?", kept, embed)
        assert answer.no_answer, answer.text
        assert "[" not in answer.text  # nothing is cited


def test_no_sources_no_answer() -> None:
    answer = compose("Anything?", [], FakeEmbedder().embed)
    assert (answer.text, answer.no_answer, answer.closest) == (NO_ANSWER, True, None)


def test_one_embed_call_with_the_question_first_and_none_without_candidates() -> None:
    embedder = FakeEmbedder()
    kept = list(sources({"aurora.md": HANDBOOK}, target=60))
    compose("How long does installation take?", kept, embedder.embed)
    assert len(embedder.calls) == 1 and embedder.calls[0][0] == "How long does installation take?"
    compose("Anything?", [], embedder.embed)
    assert len(embedder.calls) == 1


def test_deterministic_whatever_order_the_sources_come_in() -> None:
    kept = list(sources({"office-leeds.md": LEEDS, "office-bristol.md": BRISTOL, "aurora.md": HANDBOOK}, target=60))
    question = "How many desks does the Leeds office have?"
    first = compose(question, kept, FakeEmbedder().embed)
    assert compose(question, list(reversed(kept)), FakeEmbedder().embed) == first
    assert "Desks: 142" in [e.text for e in first.evidence]


def test_the_document_own_bracketed_numbers_do_not_become_citations() -> None:
    doc = "# Paper\n\nThe sensor drifts by 2 % a year [12], as measured in the field [3, 4].\n"
    answer = compose("How much does the sensor drift a year?", list(sources({"paper.md": doc})), None)
    assert answer.text == "The sensor drifts by 2 % a year, as measured in the field. [1]"


def test_pieces_stream_the_text_word_by_word() -> None:
    answer = compose("How long does installation take?", list(sources({"aurora.md": HANDBOOK})), None)
    pieces = list(answer.pieces())
    assert "".join(pieces) == answer.text and len(pieces) == len(answer.text.split())


def test_composes_five_sources_in_well_under_50_ms_without_embeddings() -> None:
    kept = list(sources({"aurora.md": HANDBOOK * 3, "leeds.md": LEEDS, "bristol.md": BRISTOL}, target=80))[:5]
    times = []
    for _ in range(5):
        started = time.perf_counter()
        compose("How long does installation take on a laptop?", kept, None)
        times.append(time.perf_counter() - started)
    assert statistics.median(times) < 0.05


@pytest.mark.slow
def test_thresholds_hold_on_real_minilm_vectors() -> None:
    """all-MiniLM-L6-v2: answerable questions clear min_score, an unrelated one stays below it."""
    from app.llm.embedders.local import LocalEmbedder

    embed = LocalEmbedder().embed
    kept = list(sources({"aurora.md": HANDBOOK, "office-leeds.md": LEEDS, "office-bristol.md": BRISTOL}, target=60))
    for question, expected in [
        ("How long does it take to install Aurora?", "two minutes"),
        ("How much free disk space does Aurora need?", "2 GB"),
        ("How many parking spaces does the Bristol office have?", "12"),
    ]:
        answer = compose(question, kept, embed)
        assert not answer.no_answer and expected in answer.text, (question, answer.text)
        assert answer.evidence[0].score >= extractive.ExtractiveOptions().min_score
    unrelated = compose("What is the boiling point of mercury?", kept, embed)
    assert unrelated.no_answer, unrelated.text
    assert re.match(re.escape(NO_ANSWER), unrelated.text)


SECURITY = """# Security

## Disclosure

* A security report is received and is assigned a primary handler. This person will coordinate
  the fix and the release of every affected version.

## Setup

Install the checker first. Then run the following command:

```sh
vault-check --all
```

The check takes a few seconds.
"""


def test_a_sentence_opening_with_a_pronoun_brings_the_one_before_it() -> None:
    (whole,) = sources({"security.md": SECURITY})
    answer = compose("Who coordinates the fix and release process?", [whole], None)
    first = answer.evidence[0]
    assert first.text.startswith("A security report is received and is assigned a primary handler. This person")
    loc = first.location
    assert SECURITY[loc.char_start : loc.char_end].startswith("A security report is received")
    assert SECURITY[loc.char_start : loc.char_end].endswith("every affected version.")
    assert "primary handler" in answer.text


def test_a_sentence_introducing_a_short_code_block_brings_the_block() -> None:
    (whole,) = sources({"setup.md": SECURITY})
    answer = compose("What command runs the checker?", [whole], None)
    first = answer.evidence[0]
    assert first.text == "Then run the following command:\n```sh\nvault-check --all\n```"
    assert f"Then run the following command: [{first.number}]\n\n```sh\nvault-check --all\n```" in answer.text
    loc = first.location
    assert SECURITY[loc.char_start : loc.char_end] == "Then run the following command:\n\n```sh\nvault-check --all\n```"
    assert (loc.line_start, loc.line_end) == (line_of(SECURITY, "Then run"), line_of(SECURITY, "vault-check") + 1)
    # a sentence after the block starts a paragraph of its own, not the block's last line
    assert "```\n\n" in answer.text or answer.text.endswith("```")


LIMITS = """# Seed vault limits

The vault's limits may be read with `vault-query`:

```
$ vault-query --field=drawer_count_max vault
240
$ vault-query --field=packet_count_min vault
5
$ vault-query --field=packet_weight_max vault
900
$ vault-query --field=shelf_height_max vault
2100
```

Change them only with the keeper.
"""


def test_from_a_long_code_block_the_line_the_question_names_comes_with_its_output() -> None:
    (whole,) = sources({"limits.md": LIMITS})
    answer = compose("How do I read the vault's limits on packet weight?", [whole], None)
    first = answer.evidence[0]
    assert (
        first.text
        == "The vault's limits may be read with `vault-query`:\n```\n$ vault-query --field=packet_weight_max vault\n900\n```"
    )
    assert "drawer_count_max" not in answer.text and "shelf_height_max" not in answer.text
    loc = first.location
    assert LIMITS[loc.char_start : loc.char_end].endswith("--field=packet_weight_max vault\n900")
    assert loc.line_end == line_of(LIMITS, "\n900\n") + 1
