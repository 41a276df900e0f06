"""Chat through the official ``ollama`` client: ``POST /api/chat`` streaming NDJSON.

Each line carries a piece of the answer; the last one (``"done": true``) carries
``prompt_eval_count`` and ``eval_count``, which become :class:`Usage`. Ollama exposes no
tokenizer, so token counts before generation are estimates (:class:`EstimateTokenizer`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import ollama
import pydantic

from app.llm.base import GenerationOptions, Message, TextDelta, Tokenizer, Usage
from app.llm.chat.common import EventStream, templated_token_count, wire_messages
from app.llm.tokenizers import EstimateTokenizer
from app.llm.vendor_errors import Vendor, from_ollama, stopped
from app.settings import OllamaSettings


class OllamaChatModel:
    """A model served by Ollama. Close with :meth:`aclose`."""

    provider = "ollama"

    def __init__(self, model: str, settings: OllamaSettings, *, context_window: int) -> None:
        self.model = model
        self.context_window = context_window
        self.tokenizer: Tokenizer = EstimateTokenizer()
        self._vendor = Vendor.ollama(settings)
        self._client = ollama.AsyncClient(host=settings.host, timeout=settings.timeout)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        # Typical Ollama templates wrap each message in a start marker, role and end marker.
        return templated_token_count(self.tokenizer, messages, per_message=4, per_reply=3)

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> EventStream:
        final: ollama.ChatResponse | None = None
        parts: list[str] = []
        try:
            responses = await self._client.chat(
                model=self.model, messages=wire_messages(messages), stream=True, options=self._options(options)
            )
            try:
                async for response in responses:
                    content = response.message.content
                    if content:
                        parts.append(content)
                        yield TextDelta(content)
                    if response.done:
                        final = response
            finally:
                # The client's generator holds the HTTP response open until it is closed.
                aclose = getattr(responses, "aclose", None)
                if aclose is not None:
                    await aclose()
        except (ollama.ResponseError, ConnectionError, httpx.TransportError) as exc:
            raise from_ollama(exc, self._vendor, self.model) from exc
        except (httpx.RequestError, json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise stopped(self._vendor, self.model, str(exc) or type(exc).__name__) from exc
        if final is None:
            raise stopped(self._vendor, self.model, "the stream ended without its final message")
        # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
        prompt_tokens = final.prompt_eval_count
        completion_tokens = final.eval_count
        yield Usage(
            prompt_tokens=self.count_message_tokens(messages) if prompt_tokens is None else prompt_tokens,
            completion_tokens=self.tokenizer.count("".join(parts)) if completion_tokens is None else completion_tokens,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    def _options(self, options: GenerationOptions) -> dict[str, Any]:
        # num_ctx: Ollama's own default window is small and it truncates longer prompts silently;
        # asking for ours keeps the chat service's token budget true.
        sent: dict[str, Any] = {
            "num_predict": options.max_tokens,
            "temperature": options.temperature,
            "num_ctx": self.context_window,
        }
        if options.stop:
            sent["stop"] = list(options.stop)
        return sent
