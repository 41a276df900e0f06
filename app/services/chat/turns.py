"""Run a chat turn to its end for callers that want the finished answer (sendMessage)."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.chat.events import DoneEvent, StoredAnswer
from app.services.chat.live import Listener, LiveTurns
from app.services.people.access import THE_SERVER, Caller


@dataclass(frozen=True)
class Finished:
    """A turn's end: its answer's id (its status says complete or failed) and, when this turn stored
    it complete, the stored answer as read back by that transaction (no need to read it again)."""

    answer_id: int
    stored: StoredAnswer | None = None


def _connection_lost() -> bool:
    # An HTTP caller cannot stop a turn on purpose: if it goes away, its connection was lost, and
    # the same request sent again with its clientMessageId finds the turn (see chat_live).
    return True


async def _drain(listener: Listener) -> Finished:
    stored = None
    try:
        async for event in listener:
            if isinstance(event, DoneEvent):
                stored = event.answer
    finally:
        await listener.aclose()
    return Finished(listener.answer_id, stored)


async def complete(
    live: LiveTurns, chat_id: int, content: str, client_key: str | None = None, *, caller: Caller = THE_SERVER
) -> Finished:
    """Ask in chat session ``chat_id`` and wait for the answer. With ``client_key``, a repeat
    returns the turn it started (waiting for it if still running)."""
    return await _drain(await live.chat(chat_id, content, client_key, lost=_connection_lost, caller=caller))


async def complete_regenerate(
    live: LiveTurns, message_id: int, client_key: str | None = None, *, caller: Caller = THE_SERVER
) -> Finished:
    return await _drain(await live.regenerate(message_id, client_key, lost=_connection_lost, caller=caller))
