"""Small pieces the chat adapters share: wire messages and template-overhead token estimates."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from app.llm.base import Message, StreamEvent, Tokenizer
from app.llm.tool_calling import ToolStreamEvent

# What our adapters' stream() returns: an AsyncIterator (the Protocol) that also has aclose().
EventStream = AsyncGenerator[StreamEvent, None]
ToolEventStream = AsyncGenerator[ToolStreamEvent, None]


def wire_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Messages as the ``{"role", "content"}`` dicts every chat API (and llama.cpp's templates) take."""
    return [{"role": m.role, "content": m.content} for m in messages]


def templated_token_count(
    tokenizer: Tokenizer, messages: Sequence[Message], *, per_message: int, per_reply: int
) -> int:
    """Tokens of role and content, plus what the server's chat template adds around them.

    For remote models we cannot render the template ourselves, so the framing is a fixed overhead:
    OpenAI documents 3 tokens per message (``<|start|>role ... <|end|>``) and 3 to prime the reply.
    """
    framing = per_message * len(messages) + per_reply
    return framing + sum(tokenizer.count(m.role) + tokenizer.count(m.content) for m in messages)
