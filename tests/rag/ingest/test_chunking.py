"""The chunker: invariants as properties over generated text, then structure, overlap and stability."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.llm.base import Tokenizer
from app.llm.tokenizers import MINILM_TOKENIZER, EstimateTokenizer, HFTokenizer
from app.rag.ingest.chunking import chunk
from app.rag.ingest.parsers.markdown import parse_markdown
from app.rag.ingest.types import ChunkSpec, Heading, ParsedDocument

MINILM = HFTokenizer(MINILM_TOKENIZER)
ESTIMATE = EstimateTokenizer()
TOKENIZERS = {"minilm": MINILM, "estimate": ESTIMATE}
# A boundary can tokenise differently alone than in context (e.g. "##ing" vs "ing"); allow that much.
OVERLAP_SLACK = 2

PROPERTY = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


Limits = tuple[int, int, int]  # target, overlap, max


def check_invariants(doc: ParsedDocument, chunks: list[ChunkSpec], tokenizer: Tokenizer, limits: Limits) -> None:
    """Everything that must hold for any document, tokenizer and limits."""
    _target, overlap, max_tokens = limits
    text = doc.text
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text == text[c.char_start : c.char_end]
        assert c.text.strip() == c.text != ""
        assert c.token_count <= max_tokens
        assert tokenizer.count(c.text) <= max_tokens
        assert c.line_start == text.count("\n", 0, c.char_start) + 1
        assert c.line_end == text.count("\n", 0, c.char_end - 1) + 1
    for before, after in itertools.pairwise(chunks):
        assert before.char_start < after.char_start
        assert before.char_end < after.char_end
        if after.char_start < before.char_end:
            assert tokenizer.count(text[after.char_start : before.char_end]) <= overlap + OVERLAP_SLACK
    covered = 0
    for c in chunks:  # every non-whitespace character is in some chunk
        assert text[covered : c.char_start].strip() == ""
        covered = max(covered, c.char_end)
    assert text[covered:].strip() == ""
    if not text.strip():
        assert chunks == []


limits_strategy = st.integers(4, 48).flatmap(
    lambda target: st.tuples(st.just(target), st.integers(0, target - 1), st.integers(target, 2 * target))
)

unicode_text = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=12),
        st.sampled_from(
            ["e\u0301", "\u0301", "👍🏽", "👨\u200d👩\u200d👧", "中文", "日本語。", " ", "\n", "\n\n", ". "]
        ),
        st.sampled_from(["word", "Word.", "tokenisation", "#", "```"]),
    ),
    max_size=80,
).map("".join)

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon", "naïve", "東京", "🙂", "x=1;", "end."])
sentence = st.lists(words, min_size=1, max_size=14).map(lambda ws: " ".join(ws) + ".")
paragraph = st.lists(sentence, min_size=1, max_size=5).map(" ".join)
heading = st.tuples(st.integers(1, 4), st.lists(words, min_size=1, max_size=3)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1])
)
fence = st.lists(st.sampled_from(["x = 1", "# not a heading", "", "print(x)  # done"]), max_size=12).map(
    lambda lines: "```python\n" + "\n".join(lines) + "\n```"
)
markdown_text = st.lists(st.one_of(paragraph, heading, fence), max_size=20).map("\n\n".join)
blank_heavy = st.lists(
    st.sampled_from(["\n", "\n\n\n", "   ", "\t", "word", "Word.", "é", "🙂", "\u3000", "\r\n"]), max_size=200
).map("".join)


@pytest.mark.parametrize("name", TOKENIZERS)
@PROPERTY
@given(text=unicode_text, limits=limits_strategy)
def test_invariants_on_unicode_text(name: str, text: str, limits: Limits) -> None:
    tokenizer = TOKENIZERS[name]
    doc = ParsedDocument(text=text, kind="text")
    chunks = chunk(doc, tokenizer, target_tokens=limits[0], overlap_tokens=limits[1], max_tokens=limits[2])
    check_invariants(doc, chunks, tokenizer, limits)
    assert chunk(doc, tokenizer, target_tokens=limits[0], overlap_tokens=limits[1], max_tokens=limits[2]) == chunks


@pytest.mark.parametrize("name", TOKENIZERS)
@PROPERTY
@given(text=markdown_text, limits=limits_strategy)
def test_invariants_on_markdown(name: str, text: str, limits: Limits) -> None:
    tokenizer = TOKENIZERS[name]
    doc = parse_markdown(text)
    chunks = chunk(doc, tokenizer, target_tokens=limits[0], overlap_tokens=limits[1], max_tokens=limits[2])
    check_invariants(doc, chunks, tokenizer, limits)
    for c in chunks:  # the heading path is the heading stack at the chunk's start
        in_force = [h for h in doc.headings if h.start <= c.char_start]
        assert c.heading_path.split(" > ")[-1] == (in_force[-1].title if in_force else "")


@PROPERTY
@given(text=blank_heavy, limits=limits_strategy)
def test_invariants_on_blank_heavy_text(text: str, limits: Limits) -> None:
    doc = ParsedDocument(text=text, kind="text")
    chunks = chunk(doc, MINILM, target_tokens=limits[0], overlap_tokens=limits[1], max_tokens=limits[2])
    check_invariants(doc, chunks, MINILM, limits)


@PROPERTY
@given(pages=st.lists(paragraph, min_size=1, max_size=4), limits=limits_strategy)
def test_chunks_never_cross_pages(pages: list[str], limits: Limits) -> None:
    starts = [sum(len(p) + 2 for p in pages[:n]) for n in range(len(pages))]
    doc = ParsedDocument(text="\n\n".join(pages), kind="pdf", page_starts=tuple(starts))
    chunks = chunk(doc, ESTIMATE, target_tokens=limits[0], overlap_tokens=limits[1], max_tokens=limits[2])
    check_invariants(doc, chunks, ESTIMATE, limits)
    for c in chunks:
        assert c.page is not None
        page_start = starts[c.page - 1]
        assert page_start <= c.char_start and c.char_end <= page_start + len(pages[c.page - 1])


def test_short_document_is_one_chunk() -> None:
    doc = parse_markdown("# Guide\n\n## Install\n\n  Run the installer.  \n\n")
    [only] = chunk(doc, MINILM)
    assert only.text == "# Guide\n\n## Install\n\n  Run the installer."
    assert (only.char_start, only.line_start, only.line_end, only.page) == (0, 1, 5, None)
    assert only.heading_path == "Guide"
    assert only.token_count == MINILM.count(only.text)


def test_empty_and_blank_documents_have_no_chunks() -> None:
    assert chunk(ParsedDocument(text="", kind="text"), MINILM) == []
    assert chunk(ParsedDocument(text=" \n\n\t\u3000", kind="text"), MINILM) == []


@pytest.mark.parametrize(
    ("target", "overlap", "max_tokens"), [(0, 0, None), (10, 10, None), (10, -1, None), (10, 2, 9)]
)
def test_rejects_impossible_limits(target: int, overlap: int, max_tokens: int | None) -> None:
    with pytest.raises(ValueError, match="target_tokens"):
        chunk(
            ParsedDocument(text="x", kind="text"),
            MINILM,
            target_tokens=target,
            overlap_tokens=overlap,
            max_tokens=max_tokens,
        )


def prose(n: int, seed: int = 0) -> str:
    """``n`` distinct, deterministic sentences."""
    vocabulary = "river stone lamp garden orbit paper violet signal harbor copper window meadow".split()
    return " ".join(
        f"The {vocabulary[(i * 7 + seed) % 12]} and the {vocabulary[(i * 5 + seed + 3) % 12]} number {i + seed}."
        for i in range(n)
    )


def test_cuts_prefer_headings_then_paragraphs() -> None:
    text = "# Guide\n\n" + prose(12) + "\n\n## Install\n\n" + prose(30, 1) + "\n\n" + prose(30, 2)
    doc = parse_markdown(text)
    chunks = chunk(doc, MINILM, target_tokens=200, overlap_tokens=20)
    install = text.index("## Install")
    assert any(c.char_start == install for c in chunks)  # a new section starts clean...
    assert next(c for c in chunks if c.char_start == install).heading_path == "Guide > Install"
    assert not any(c.char_start < install < c.char_end for c in chunks)  # ...with no overlap into it
    for c in chunks[:-1]:  # every other cut falls on a paragraph or sentence end
        assert text[c.char_end - 1] == "." or text[c.char_end :].startswith("\n\n")
    check_invariants(doc, chunks, MINILM, (200, 20, 250))


def test_overlap_starts_at_a_clean_boundary() -> None:
    doc = ParsedDocument(text=prose(200), kind="text")
    chunks = chunk(doc, MINILM, target_tokens=100, overlap_tokens=24)
    assert len(chunks) > 5
    assert all(c.token_count == MINILM.count(c.text) for c in chunks)  # clean edges: context-free counts
    for before, after in itertools.pairwise(chunks):
        shared = MINILM.count(doc.text[after.char_start : before.char_end])
        assert 12 <= shared <= 24
        assert doc.text[after.char_start - 1] == " " and doc.text[after.char_start].isupper()  # a sentence start


def test_zero_overlap_tiles_the_text() -> None:
    doc = ParsedDocument(text=prose(200), kind="text")
    chunks = chunk(doc, MINILM, target_tokens=64, overlap_tokens=0)
    for before, after in itertools.pairwise(chunks):
        assert doc.text[before.char_end : after.char_start] == " "
    assert all(c.token_count <= 80 for c in chunks)


def test_fenced_code_is_kept_whole_when_it_fits() -> None:
    code = "```python\n" + "\n".join(f"value_{n} = compute({n})" for n in range(20)) + "\n```"
    text = prose(8) + "\n\n" + code + "\n\n" + prose(20, 1)
    doc = parse_markdown(text)
    fence_start, fence_end = text.index("```"), text.rindex("```") + 3
    chunks = chunk(doc, MINILM, target_tokens=200, overlap_tokens=32)
    assert MINILM.count(code) < 250 < MINILM.count(text)
    assert any(c.char_start <= fence_start and fence_end <= c.char_end for c in chunks)
    assert not any(fence_start < c.char_start < fence_end or fence_start < c.char_end < fence_end for c in chunks)


def test_a_fence_longer_than_the_limit_is_split_at_lines() -> None:
    code = "```\n" + "\n".join(f"line {n} of the listing" for n in range(200)) + "\n```"
    doc = parse_markdown("Intro.\n\n" + code)
    chunks = chunk(doc, MINILM, target_tokens=50, overlap_tokens=8)
    assert len(chunks) > 5
    for c in chunks[:-1]:
        assert doc.text[c.char_end] == "\n"
    check_invariants(doc, chunks, MINILM, (50, 8, 62))


def test_heading_path_follows_the_level_stack() -> None:
    text = "# A\n\none\n\n## B\n\ntwo\n\n### C\n\nthree\n\n## D\n\nfour"
    doc = ParsedDocument(
        text=text,
        kind="markdown",
        headings=tuple(
            Heading(text.index(t), level, t[-1]) for t, level in [("# A", 1), ("## B", 2), ("### C", 3), ("## D", 2)]
        ),
    )
    paths = [c.heading_path for c in chunk(doc, MINILM, target_tokens=4, overlap_tokens=0)]
    assert paths == ["A", "A > B", "A > B > C", "A > D"]


def test_a_word_longer_than_the_limit_is_cut_between_tokens_not_graphemes() -> None:
    text = "e\u0301" * 300  # one "word" of 600 code points: e + combining acute
    chunks = chunk(ParsedDocument(text=text, kind="text"), ESTIMATE, target_tokens=20, overlap_tokens=4)
    assert len(chunks) > 10
    for c in chunks:
        assert c.text[0] == "e"  # never starts with a bare combining mark
    check_invariants(ParsedDocument(text=text, kind="text"), chunks, ESTIMATE, (20, 4, 25))


def test_an_edit_in_one_paragraph_changes_only_nearby_chunks() -> None:
    sections = [
        f"## Part {n}\n\n" + "\n\n".join(prose(4 + (n * 3 + p) % 5, n * 10 + p) for p in range(4)) for n in range(30)
    ]
    original = "# Manual\n\n" + "\n\n".join(sections)
    middle = sections[15]
    edited = original.replace(middle, middle.replace("number", "edited number, with more words,", 3))
    before = [c.content_hash for c in chunk(parse_markdown(original), MINILM)]
    after = [c.content_hash for c in chunk(parse_markdown(edited), MINILM)]
    changed = set(after) - set(before)
    assert len(before) > 20
    assert 1 <= len(changed) <= 3
    assert len(set(before) & set(after)) >= len(before) - 3


def test_a_megabyte_chunks_in_roughly_linear_time() -> None:
    text = "\n\n".join(prose(40, n) for n in range(700))[:1_000_000]
    doc = ParsedDocument(text=text, kind="text")
    started = time.perf_counter()
    chunks = chunk(doc, ESTIMATE)
    elapsed = time.perf_counter() - started
    assert len(chunks) > 1000
    assert elapsed < 10  # about 0.5 s here; a quadratic cut search would take minutes
