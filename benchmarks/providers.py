"""Providers for the benchmarks: wrappers that implement the real Protocols and measure the time
spent inside the provider they wrap, so a benchmark can subtract it from end-to-end times."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app.llm.base import (
    ChatModel,
    Embedder,
    GenerationOptions,
    Message,
    ModelCapabilities,
    ProviderModels,
    SpaceId,
    StreamEvent,
    Vectors,
)


class Clock:
    """Seconds spent inside providers, added up across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds = 0.0

    def add(self, seconds: float) -> None:
        with self._lock:
            self.seconds += seconds

    def take(self) -> float:
        with self._lock:
            seconds, self.seconds = self.seconds, 0.0
            return seconds


class TimedEmbedder:
    """Another embedder, presented in ``space`` (the knowledge base's), with its time measured.
    ``block`` adds a blocking sleep per call: an embedder that would stall the event loop if the
    server ever called it there."""

    def __init__(self, inner: Embedder, space: SpaceId, clock: Clock, *, block: float = 0.0) -> None:
        self.inner = inner
        self.space = space
        self.tokenizer = inner.tokenizer
        self.max_tokens = inner.max_tokens
        self.clock = clock
        self.block = block

    def embed(self, texts: Sequence[str]) -> Vectors:
        start = time.perf_counter()
        try:
            if self.block:
                time.sleep(self.block)
            return self.inner.embed(texts)
        finally:
            self.clock.add(time.perf_counter() - start)


class QueryVectorsOnly:
    """An embedder for retrieval calls that are always given the query vector."""

    def __init__(self, space: SpaceId, tokenizer: Any = None) -> None:
        self.space = space
        self.tokenizer = tokenizer
        self.max_tokens = 256

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise AssertionError("the benchmark passes query vectors; nothing should embed here")


class TimedChatModel:
    """Another chat model with the time spent inside its stream measured (each step of the
    iteration, including the model's own awaits) and the messages it was sent recorded."""

    def __init__(self, inner: ChatModel, clock: Clock) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.context_window = inner.context_window
        self.tokenizer = inner.tokenizer
        self.clock = clock
        self.sent: list[list[Message]] = []

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        start = time.perf_counter()
        try:
            return self.inner.count_message_tokens(messages)
        finally:
            self.clock.add(time.perf_counter() - start)

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        self.sent.append(list(messages))
        events = self.inner.stream(messages, options)
        try:
            while True:
                start = time.perf_counter()
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    return
                finally:
                    self.clock.add(time.perf_counter() - start)
                yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]


class Models:
    """A chat-model registry (the interface ChatService uses) over given model instances."""

    def __init__(self, *models: ChatModel) -> None:
        self.models = {(m.provider, m.model): m for m in models}

    def get(self, provider: str, model: str) -> ChatModel:
        self.validate(provider, model)
        return self.models[(provider, model)]

    def validate(self, provider: str, model: str) -> None:
        from app.errors import ValidationError

        if (provider, model) not in self.models:
            raise ValidationError("model", f"unknown model {provider}/{model}")

    def capabilities(self, provider: str, model: str) -> ModelCapabilities:
        self.validate(provider, model)
        return ModelCapabilities()  # the benchmarks measure the generative path

    async def list_models(self) -> list[ProviderModels]:
        providers = sorted({p for p, _ in self.models})
        return [
            ProviderModels(p, True, None, tuple(m for q, m in self.models if q == p), False, None) for p in providers
        ]
