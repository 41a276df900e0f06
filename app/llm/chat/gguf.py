"""What a GGUF file says about talking to its model: its tokenizer and its chat template.

Both read a loaded ``llama_cpp.Llama``. Tokenising and rendering touch only the vocabulary and
Python, never the llama.cpp context, so they are safe while another thread generates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from app.errors import ProviderError
from app.llm.base import Message
from app.llm.chat.common import wire_messages

if TYPE_CHECKING:
    from llama_cpp import Llama


class GGUFTokenizer:
    """A GGUF model's own tokenizer behind the :class:`app.llm.base.Tokenizer` Protocol.

    ``llama`` is called on each use, so the model loads on first use, not when this is built.
    """

    exact = True

    def __init__(self, name: str, llama: Callable[[], Llama]) -> None:
        self.name = name
        self._llama = llama

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of ``text``, no BOS added; ``special`` parses markers like ``<|im_start|>``."""
        if not text:
            return []
        return self._llama().tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def spans(self, text: str) -> list[tuple[int, int]]:
        llama = self._llama()
        # Byte-level BPE tokens may end inside a multi-byte character: a boundary there is moved back
        # to the start of that character, which merges the token with the next one.
        char_at_byte: list[int] = []
        for index, char in enumerate(text):
            char_at_byte.extend([index] * len(char.encode("utf-8")))
        char_at_byte.append(len(text))
        bounds = [0]
        offset = 0
        for token in self.encode(text):
            offset = min(offset + len(llama.detokenize([token])), len(char_at_byte) - 1)
            bounds.append(char_at_byte[offset])
        bounds[-1] = len(text)  # a tokenizer that normalises text must still cover all of it
        return [(a, b) for a, b in pairwise(bounds) if b > a]


class ChatTemplate:
    """The model's chat template from its GGUF metadata, rendered the way llama.cpp's own chat
    completion renders it (same Jinja formatter, same BOS/EOS strings, generation prompt added)."""

    def __init__(self, llama: Llama) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ProviderError(f"{llama.model_path} has no chat template in its metadata", provider="local")
        self.eos = _special_text(llama, llama.token_eos())
        bos = _special_text(llama, llama.token_bos())
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=self.eos, bos_token=bos)

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text, ending with the assistant's turn opened (``<|im_start|>assistant\\n``)."""
        # llama_types declares TypedDicts per role; our plain dicts have exactly their keys.
        return self._formatter(messages=wire_messages(messages)).prompt  # type: ignore[arg-type]


def _special_text(llama: Llama, token: int) -> str:
    return llama.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""
