"""Fake providers that implement the real Protocols, for fast, deterministic tests.

``FakeEmbedder`` hashes words into a fixed number of dimensions (similar texts share words, so
they get similar vectors) and lets a test pin exact vectors for exact texts. ``FakeChatModel``
streams scripted answers (``enqueue``) and records what it was sent (``history``).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Sequence

import numpy as np

from app.errors import ProviderError
from app.llm.base import GenerationOptions, Message, ModelCapabilities, SpaceId, StreamEvent, TextDelta, Usage, Vectors
from app.llm.tokenizers import EstimateTokenizer

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    def __init__(self, dimensions: int = 64, model: str = "hash-words") -> None:
        self.space = SpaceId("fake", model, dimensions)
        self.tokenizer = EstimateTokenizer()
        self.max_tokens = 512
        self.pinned: dict[str, Vectors] = {}
        self.calls: list[list[str]] = []
        self.fail_with: Exception | None = None

    def pin(self, text: str, vector: Sequence[float]) -> None:
        v = np.asarray(vector, dtype=np.float32)
        self.pinned[text] = v / np.linalg.norm(v)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.fail_with is not None:
            raise self.fail_with
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.space.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            if text in self.pinned:
                out[i] = self.pinned[text]
                continue
            for word in _WORD.findall(text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.space.dimensions] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else np.eye(self.space.dimensions, dtype=np.float32)[0]
        return out


class FakeChatModel:
    provider = "fake"

    def __init__(
        self,
        model: str = "scripted",
        context_window: int = 4096,
        token_delay: float = 0.0,
        capabilities: ModelCapabilities | None = None,
    ) -> None:
        self.model = model
        self.capabilities = capabilities or ModelCapabilities()
        self.context_window = context_window
        self.tokenizer = EstimateTokenizer()
        self.token_delay = token_delay
        self.script: list[str | Exception] = []
        self.history: list[list[Message]] = []
        self.default_answer = "I could not find that in the documents."

    def enqueue(self, *answers: str | Exception) -> None:
        self.script.extend(answers)

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        self.history.append(list(messages))
        answer = self.script.pop(0) if self.script else self.default_answer
        if isinstance(answer, Exception):
            raise answer
        pieces = re.findall(r"\S+\s*|\s+", answer)
        sent = 0
        for piece in pieces:
            if "<FAIL>" in piece:
                raise ProviderError("the fake model failed mid-stream", provider="fake", retryable=True)
            if self.token_delay:
                await asyncio.sleep(self.token_delay)
            else:
                await asyncio.sleep(0)
            sent += 1
            yield TextDelta(piece)
        yield Usage(prompt_tokens=self.count_message_tokens(messages), completion_tokens=sent)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self.tokenizer.count(m.content) + 4 for m in messages)


class FakeModels:
    """A chat-model registry holding fake models (the real registry's get/validate interface)."""

    def __init__(self, *models: FakeChatModel) -> None:
        self.models = {m.model: m for m in models} or {"scripted": FakeChatModel()}

    def get(self, provider: str, model: str) -> FakeChatModel:
        self.validate(provider, model)
        return self.models[model]

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        self.validate(provider, model)
        return self.models[model].capabilities

    async def list_models(self) -> list[object]:
        from app.llm.chat.registry import ProviderModels

        return [ProviderModels("fake", True, None, tuple(self.models), False, next(iter(self.models)))]

    def validate(self, provider: str, model: str) -> None:
        from app.errors import ValidationError

        if provider != "fake":
            raise ValidationError("provider", f"unknown provider {provider!r}")
        if model not in self.models:
            raise ValidationError("model", f"unknown model {model!r}")
