"""Run a chat turn to its end for callers that want the finished answer (sendMessage)."""

from __future__ import annotations

from app.services.chat_live import Listener, LiveTurns


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


async def complete(live: LiveTurns, chat_id: int, content: str, client_key: str | None = None) -> int:
    """Ask in chat session ``chat_id`` and wait; returns the assistant message id (its status says
    complete or failed). With ``client_key``, a repeat returns the turn it started (waiting for it
    if still running)."""
    return await _drain(await live.chat(chat_id, content, client_key, lost=_connection_lost))


async def complete_regenerate(live: LiveTurns, message_id: int, client_key: str | None = None) -> int:
    return await _drain(await live.regenerate(message_id, client_key, lost=_connection_lost))
