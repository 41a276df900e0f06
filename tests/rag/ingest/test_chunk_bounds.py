"""Chunks are bounded in characters as well as tokens, and count the tokens of text the tokenizer
reads as one unknown token (issue 11, item 8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.container import Container
from app.errors import SettingsError
from app.rag.ingest.chunking import chunk
from app.rag.ingest.parsers.markdown import parse_markdown
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.ingest.types import ParsedDocument
from app.services import projects
from app.settings import load_settings
from tests.fakes import FakeEmbedder
from tests.rag.ingest.test_chunking import ESTIMATE, MINILM, PROPERTY, TOKENIZERS, check_invariants


def test_a_word_without_spaces_is_cut_and_counted_by_its_length() -> None:
    # WordPiece reads a word of more than 100 characters as one [UNK]: it was one 3,000,000-character
    # chunk with token_count 1.
    text = "x" * 300_000
    chunks = chunk(ParsedDocument(text=text, kind="text"), MINILM)
    assert len(chunks) > 100
    assert max(len(c.text) for c in chunks) <= 4000
    for c in chunks:
        assert c.token_count >= len(c.text) // 4  # about one token per 4 characters, not 1
    check_invariants(ParsedDocument(text=text, kind="text"), chunks, MINILM, (200, 32, 250))


def test_few_tokens_spread_over_many_characters_are_cut_by_length() -> None:
    # 120 words 5,000 spaces apart: 120 tokens fit one chunk, 600,000 characters do not.
    text = (" " * 5000).join(f"word{n}" for n in range(120))
    chunks = chunk(ParsedDocument(text=text, kind="text"), MINILM, max_chars=4000)
    assert max(len(c.text) for c in chunks) <= 4000
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")


def test_text_the_tokenizer_drops_still_counts_towards_the_length() -> None:
    # BERT's normaliser drops control characters: no token covers them, but the chunk holds them.
    text = ("word " + "\x01" * 300 + " ") * 40
    chunks = chunk(ParsedDocument(text=text, kind="text"), MINILM, max_chars=600)
    assert chunks and max(len(c.text) for c in chunks) <= 600
    check_invariants(ParsedDocument(text=text, kind="text"), chunks, MINILM, (200, 32, 250))


def test_the_ingested_chunks_honour_the_character_setting(container: Container) -> None:
    container.settings.ingest.max_chunk_chars = 1000
    pid = projects.create(container.store, "kb").id
    text = ("alpha" + " " * 900 + "beta ") * 50
    result = Ingestor(container.store, FakeEmbedder(), container.settings.ingest).ingest(
        pid, [Source.from_bytes("spaced.txt", text.encode())]
    )
    assert result.files[0].status == "added", result.files[0].error
    with container.store.read() as db:
        longest = db.connection().exec_driver_sql("SELECT max(length(text)) FROM chunks").scalar_one()
    assert 0 < longest <= 1000


def test_a_chunk_limit_below_the_longest_token_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk(ParsedDocument(text="some text", kind="text"), ESTIMATE, max_chars=10)


long_runs = st.lists(
    st.one_of(
        st.sampled_from(["word", "Word.", " ", "\n", "\n\n", "é", "🙂", "中文"]),
        st.integers(1, 700).map(lambda n: "x" * n),  # words up to 700 characters
        st.integers(1, 700).map(lambda n: " " * n),  # long blank runs
        st.integers(1, 300).map(lambda n: "\x01" * n),  # characters WordPiece drops
        st.integers(1, 200).map(lambda n: "#" + "-" * n),
    ),
    max_size=40,
).map("".join)


@pytest.mark.parametrize("name", TOKENIZERS)
@PROPERTY
@given(
    text=long_runs,
    limits=st.integers(4, 48).flatmap(
        lambda t: st.tuples(st.just(t), st.integers(0, t - 1), st.integers(t, 2 * t), st.integers(384, 900))
    ),
)
def test_invariants_hold_with_a_character_limit(name: str, text: str, limits: tuple[int, int, int, int]) -> None:
    tokenizer = TOKENIZERS[name]
    target, overlap, max_tokens, max_chars = limits
    for doc in (ParsedDocument(text=text, kind="text"), parse_markdown(text)):
        chunks = chunk(
            doc, tokenizer, target_tokens=target, overlap_tokens=overlap, max_tokens=max_tokens, max_chars=max_chars
        )
        check_invariants(doc, chunks, tokenizer, (target, overlap, max_tokens))
        assert all(len(c.text) <= max_chars for c in chunks), (text, limits, [len(c.text) for c in chunks])


def test_a_character_limit_too_small_for_the_token_target_is_refused_at_start() -> None:
    with pytest.raises(SettingsError, match=r"max_chunk_chars \(4000\) must be at least 4 characters per token"):
        load_settings(ingest={"chunk_tokens": 2000, "overlap_tokens": 32})
    assert load_settings(ingest={"chunk_tokens": 2000, "max_chunk_chars": 8000}).ingest.max_chunk_chars == 8000
