"""Fake providers that implement the real Protocols, for fast, deterministic tests.

``FakeEmbedder`` hashes words into a fixed number of dimensions (similar texts share words, so
they get similar vectors) and lets a test pin exact vectors for exact texts. ``FakeChatModel``
streams scripted answers (``enqueue``) and records what it was sent (``history``); ``FakeModels``
serves fake chat models as the provider ``fake``. The same fake chat model reaches a real server
as the ``scripted`` test provider (:mod:`tests.providers`).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Sequence

import numpy as np

from app.errors import ProviderError
from app.llm.base import (
    GenerationOptions,
    Message,
    ModelCapabilities,
    ProviderModels,
    SpaceId,
    StreamEvent,
    TextDelta,
    Usage,
    Vectors,
)
from app.llm.tokenizers import EstimateTokenizer
from app.llm.tool_calling import ToolCallDelta, ToolCalls, ToolSpec, ToolStreamEvent, Turn, as_messages

_WORD = re.compile(r"\w+")
_PIECE = re.compile(r"\S+\s*|\s+")


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
    """Streams scripted answers: the ``enqueue``d ones in turn, then ``default_answer``. An answer is
        a string, streamed word by word (``<FAIL>`` in it fails the stream there with ``mid_stream``), or
        an exception, raised before the first token. Records what it was sent (``history``).

    It also implements :class:`app.llm.tool_calling.ToolCallingModel` (``stream_tools``): a scripted
    :class:`ToolCalls` is streamed as one delta per call, then the calls, then usage; ``offered``
    records the tool names each ``stream_tools`` call was given. Whether a session may use that is its
    ``capabilities.tool_calling``, as for real providers.

        In-process tests use it directly; the ``scripted`` test provider (:mod:`tests.providers`) serves
        one to a real server from a JSON script.
    """

    def __init__(
        self,
        model: str = "scripted",
        context_window: int = 4096,
        token_delay: float = 0.0,
        capabilities: ModelCapabilities | None = None,
        *,
        provider: str = "fake",
        mid_stream: type[ProviderError] = ProviderError,
    ) -> None:
        self.provider = provider
        self.model = model
        self.capabilities = capabilities or ModelCapabilities()
        self.context_window = context_window
        self.tokenizer = EstimateTokenizer()
        self.token_delay = token_delay
        self.first_token_delay = 0.0
        self.mid_stream = mid_stream
        self.script: list[str | Exception | ToolCalls] = []
        self.offered: list[list[str]] = []
        self.history: list[list[Message]] = []
        self.default_answer: str | Exception = "I could not find that in the documents."

    def enqueue(self, *answers: str | Exception | ToolCalls) -> None:
        self.script.extend(answers)

    async def stream_tools(
        self, turns: Sequence[Turn], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> AsyncIterator[ToolStreamEvent]:
        self.offered.append([tool.name for tool in tools])
        if self.script and isinstance(self.script[0], ToolCalls):
            calls = self.script.pop(0)
            assert isinstance(calls, ToolCalls)
            self.history.append(as_messages(turns))
            for index, call in enumerate(calls.calls):
                yield ToolCallDelta(index, call.id, call.name, call.arguments)
            yield calls
            yield Usage(self.count_message_tokens(as_messages(turns)), len(calls.calls))
            return
        async for event in self.stream(as_messages(turns), options):
            yield event

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        self.history.append(list(messages))
        answer = self.script.pop(0) if self.script else self.default_answer
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, ToolCalls):
            raise AssertionError("a scripted tool call reached stream(): only stream_tools() may call tools")
        sent = 0
        await asyncio.sleep(self.first_token_delay)  # reading the prompt
        for piece in _PIECE.findall(answer):
            if "<FAIL>" in piece:
                message = f"the {self.provider} model failed mid-stream"
                raise self.mid_stream(message, provider=self.provider, retryable=True)
            await asyncio.sleep(self.token_delay)
            sent += 1
            yield TextDelta(piece)
        yield Usage(prompt_tokens=self.count_message_tokens(messages), completion_tokens=sent)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self.tokenizer.count(m.content) + 4 for m in messages)


class FakeModels:
    """A chat-model registry holding fake models (the real registry's get/validate interface), by
    model name; each model under its own ``provider`` ("fake" unless given)."""

    def __init__(self, *models: FakeChatModel) -> None:
        self.models = {m.model: m for m in models} or {"scripted": FakeChatModel()}

    def get(self, provider: str, model: str) -> FakeChatModel:
        self.validate(provider, model)
        return self.models[model]

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        self.validate(provider, model)
        return self.models[model].capabilities

    async def list_models(self) -> list[ProviderModels]:
        found = []
        for provider in dict.fromkeys(m.provider for m in self.models.values()):
            names = tuple(name for name, m in self.models.items() if m.provider == provider)
            declared = self.models[names[0]].capabilities.concurrency
            found.append(ProviderModels(provider, True, None, names, False, names[0], concurrency=declared))
        return found

    def validate(self, provider: str, model: str) -> None:
        from app.errors import ValidationError

        if provider not in {m.provider for m in self.models.values()}:
            raise ValidationError("provider", f"unknown provider {provider!r}")
        if model not in self.models or self.models[model].provider != provider:
            raise ValidationError("model", f"unknown model {model!r}")
