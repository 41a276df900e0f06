"""A short, bounded answer from a chat model: the text of one non-streamed reply, for the helper
calls that are not the answer (query expansion, reranking as judge, a follow-up's rewrite, the
judgement of a retrieval pass)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from app.errors import ProviderTimeoutError
from app.llm.base import ChatModel, GenerationOptions, Message, TextDelta


async def complete(
    model: ChatModel,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    seconds: float,
    stop: tuple[str, ...] = (),
) -> str:
    """The model's reply, at most ``max_tokens`` long, sampled cold (temperature 0), ending at any of
    ``stop``. Raises ``ProviderTimeoutError`` when the whole reply takes longer than ``seconds``, and
    the model's own ``ProviderError``s. The stream is closed on the way out, so a local model stops
    generating at once."""
    parts: list[str] = []
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0, stop=stop)
    with anyio.move_on_after(seconds) as scope:
        stream = model.stream(messages, options)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
    if scope.cancelled_caught:
        raise ProviderTimeoutError(
            f"{model.provider}/{model.model} did not finish within {seconds:g} s",
            provider=model.provider,
            retryable=True,
        )
    return "".join(parts)
