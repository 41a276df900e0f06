"""Run a chat turn to its end for callers that want the finished answer (sendMessage)."""

from __future__ import annotations

from app.container import Container
from app.services.chat_live import Listener


def _connection_lost() -> bool:
    # An HTTP caller cannot stop a turn on purpose: if it goes away, its connection was lost, and
    # the same request sent again with its clientMessageId finds the turn (see chat_live).
    return True


async def _drain(listener: Listener) -> int:
    try:
        async for _ in listener:
            pass
    finally:
        await listener.aclose()
    return listener.answer_id


async def complete(container: Container, session_id: int, content: str, client_key: str | None = None) -> int:
    """Ask and wait; returns the assistant message id (its status says complete or failed).
    With ``client_key``, a repeat returns the turn it started (waiting for it if still running)."""
    live = container.chat.live
    return await _drain(await live.chat(session_id, content, client_key, lost=_connection_lost))


async def complete_regenerate(container: Container, message_id: int, client_key: str | None = None) -> int:
    live = container.chat.live
    return await _drain(await live.regenerate(message_id, client_key, lost=_connection_lost))
