"""Run a chat turn to its end for callers that want the finished answer (sendMessage, the CLI)."""

from __future__ import annotations

from app.container import Container
from app.services.chat_store import Turn


async def _drain(container: Container, turn: Turn) -> int:
    async for _ in container.chat.run(turn):
        pass
    return turn.message_id


async def complete(container: Container, session_id: int, content: str) -> int:
    """Ask and wait; returns the assistant message id (its status says complete or failed)."""
    return await _drain(container, await container.chat.start(session_id, content))


async def complete_regenerate(container: Container, message_id: int) -> int:
    return await _drain(container, await container.chat.start_regenerate(message_id))
