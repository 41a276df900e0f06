"""The sentence splitter: exact offsets for any text, then the Markdown and prose rules, then words."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.rag.answer import sentences
from app.rag.answer.sentences import split, stem, terms

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PIECES = st.sampled_from(
    ["Aurora syncs notes.", " ", "\n", "\n\n", "e.g. ", "3.5", "# Title", "- item", "| a | b |", "|---|", "```",
     "**Opened:** 2014", "[1]", "Dr. Who", "? ", "! ", "こんにちは。", "word", ", ", "; ", "> ", "---", "\t",
     "a  b", "      "]
)  # fmt: skip


@PROPERTY
@given(st.lists(PIECES, max_size=40).map("".join), st.integers(min_value=20, max_value=400))
def test_units_are_exact_trimmed_ordered_slices(text: str, max_chars: int) -> None:
    units = split(text, max_chars=max_chars)
    for unit in units:
        assert unit.text == text[unit.start : unit.end]
        assert unit.text == unit.text.strip() and unit.text
    assert all(a.end <= b.start for a, b in itertools.pairwise(units))


def kinds(text: str) -> list[tuple[str, str]]:
    return [(u.kind, u.text) for u in split(text)]


def test_sentences_end_at_stops_followed_by_a_capital_not_at_abbreviations_or_decimals() -> None:
    text = "Use e.g. Linux or Mac. Dr. Who is 3.5 m tall! Is it? yes it is. The end"
    assert [u.text for u in split(text)] == [
        "Use e.g. Linux or Mac.",
        "Dr. Who is 3.5 m tall!",
        "Is it? yes it is.",
        "The end",
    ]


def test_markers_after_a_full_stop_stay_with_their_sentence() -> None:
    assert [u.text for u in split("Penguins huddle. [1] Owls hunt [2]. I like cheese.")] == [
        "Penguins huddle. [1]",
        "Owls hunt [2].",
        "I like cheese.",
    ]


def test_wrapped_lines_join_and_short_capitalised_lines_are_titles() -> None:
    text = "Installation\nTo install Aurora, download the installer and run\nsetup. It takes two minutes."
    assert kinds(text) == [
        ("title", "Installation"),
        ("sentence", "To install Aurora, download the installer and run\nsetup."),
        ("sentence", "It takes two minutes."),
    ]


def test_markdown_blocks() -> None:
    text = (
        "---\ntitle: x\n---\n# Guide ##\n\nIntro text here.\n\nUsage\n=====\n\n```bash\nrun it. Now.\n```\n\n"
        "| Item | Leeds |\n|---|---|\n| Desks | 142 |\n\n- first item\n  continued.\n2. second item\n\n> quoted"
    )
    assert kinds(text) == [
        ("code", "---\ntitle: x\n---"),
        ("heading", "Guide"),
        ("sentence", "Intro text here."),
        ("heading", "Usage"),
        ("code", "```bash\nrun it. Now.\n```"),
        ("table", "| Item | Leeds |"),
        ("rule", "|---|---|"),
        ("table", "| Desks | 142 |"),
        ("item", "first item\n  continued."),
        ("item", "second item"),
        ("sentence", "quoted"),
    ]


def test_bold_labelled_lines_are_fields_even_without_list_markers() -> None:
    text = "**Effective from:** 1 February 2024\n**Replaces:** 2023 edition\nOwner: Finance\nReview date: May"
    assert kinds(text) == [
        ("item", "**Effective from:** 1 February 2024"),
        ("item", "**Replaces:** 2023 edition"),
        ("item", "Owner: Finance"),
        ("item", "Review date: May"),
    ]


def test_long_sentences_become_clauses_at_semicolons_then_commas() -> None:
    text = (
        "Aurora keeps its settings in one small file in your home folder; the most useful options are the sync "
        "interval, the data folder, where notes are stored, and the proxy, for networks that need one."
    )
    clauses = [u.text for u in split(text, max_chars=120)]
    assert clauses[0] == "Aurora keeps its settings in one small file in your home folder;"
    assert " ".join(clauses) == text and all(len(c) <= 120 for c in clauses)


def test_cjk_full_stops_end_sentences_without_spaces() -> None:
    text = "これは文です。次の文\uff01"
    assert [u.text for u in split(text)] == ["これは文です。", "次の文\uff01"]


def test_normalised_collapses_whitespace_and_quote_markers() -> None:
    (unit,) = split("> a quoted\n> line   here")
    assert unit.normalised == "a quoted line here"


def test_terms_stem_drop_stop_words_and_keep_numbers() -> None:
    assert terms("How do I install Aurora's sync_interval? It's 30 seconds, 0.25 threshold.") == [
        "install", "aurora", "sync", "interval", "30", "second", "0.25", "threshold",
    ]  # fmt: skip
    assert {stem(w) for w in ("installing", "installation", "installed", "installs")} == {"install"}
    assert stem("copies") == "copy" and stem("stopped") == "stop" and stem("status") == "status"
    assert sentences.numbers("Desks: 142 (of which 30), opened 2014") == {"142", "30", "2014"}


def test_a_short_first_line_over_deeper_indented_lines_is_a_definitions_term() -> None:
    text = "   www-data\n          Some web servers run as www-data.\n\n   Other groups follow.\n   More text."
    assert kinds(text) == [
        ("title", "www-data"),
        ("sentence", "Some web servers run as www-data."),
        ("sentence", "Other groups follow."),
        ("sentence", "More text."),
    ]
    # Not a term: a wrapped line at the same depth, a line ending in punctuation, a list item's text.
    assert kinds("keeper\nlends seeds.") == [("sentence", "keeper\nlends seeds.")]
    assert kinds("Note:\n      lends seeds.")[0] == ("sentence", "Note:\n      lends seeds.")
    assert kinds("- keeper\n      lends seeds.") == [("item", "keeper\n      lends seeds.")]


def test_columns_over_a_line_of_dashes_are_a_plain_text_table() -> None:
    text = (
        "   Each level is a bit of the variable:\n"
        "  Name       Value   Meaning\n"
        "  ---------------------------\n"
        "  FETCH          1   Report every fetch\n"
        "  STORE          2   Report writes to the\n"
        "                     store\n"
        "\n"
        "Title\n"
        "-----\n"
    )
    assert kinds(text) == [
        ("sentence", "Each level is a bit of the variable:"),
        ("table", "Name       Value   Meaning"),
        ("rule", "---------------------------"),
        ("table", "FETCH          1   Report every fetch"),
        ("table", "STORE          2   Report writes to the\n                     store"),
        ("heading", "Title"),  # no columns: a setext heading as before
    ]


def test_a_contraction_is_its_stop_word_not_a_content_word() -> None:
    # "What's" was "what" and "we're" "we'r": content words no sentence shares, diluting the overlap.
    assert terms("What's the rate? There's a fee. We're adding it; I've seen it.") == ["rate", "fee", "add", "seen"]
    assert terms("Can't I return it? We don't") == ["return"]
    assert terms("the manager's approval, the team\u2019s rules") == ["manager", "approval", "team", "rule"]
