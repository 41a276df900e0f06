"""Streamed tokens in batches (app/services/chat/live.py, ``Listener``): the first token goes out at
once, tokens within the window of the last one sent go out together, and any other event — the
answer's end, an error after a stop — ends a batch at once, so nothing the model wrote is held back
or lost. The window here is a minute: a batch that waited for it would stall the test, not pass it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from app.errors import ErrorCode
from app.services.chat.events import ChatEvent, DoneEvent, ErrorEvent, TokenEvent
from app.services.chat.live import Listener, LiveTurn, LiveTurns
from app.settings import Settings

MINUTE = 60.0
SOON = 5.0  # how long a step that should not wait may take on a busy machine


class _Engine:
    """What LiveTurns reads of the chat engine here: its settings (nothing is started or stored)."""

    def __init__(self, settings: Settings) -> None:
        self.settings, self.store = settings, None


@pytest.fixture
def live() -> Iterator[LiveTurn]:
    turn = LiveTurn(None, keyed=False)  # type: ignore[arg-type]  # the turn itself is not read here
    yield turn


def _listener(turn: LiveTurn, window: float) -> Listener:
    registry = LiveTurns(_Engine(Settings()))  # type: ignore[arg-type]
    return Listener(registry, 7, turn, lambda: False, [], window=window)


async def _next(listener: Listener) -> ChatEvent:
    return await asyncio.wait_for(anext(listener), SOON)


async def test_the_first_token_goes_out_at_once_and_later_ones_wait_for_the_next_event(live: LiveTurn) -> None:
    listener = _listener(live, MINUTE)
    live.publish(TokenEvent(7, "Pen"))
    assert await _next(listener) == TokenEvent(7, "Pen")
    live.publish(TokenEvent(7, "guins"))
    batch = asyncio.ensure_future(anext(listener))
    for _ in range(20):  # let it start waiting for the window's end
        await asyncio.sleep(0)
    assert not batch.done()  # within the window: waits for more
    live.publish(TokenEvent(7, " huddle"))
    live.publish(TokenEvent(7, "."))
    live.publish(DoneEvent(7))  # the answer's end ends the batch at once
    assert await asyncio.wait_for(batch, SOON) == TokenEvent(7, "guins huddle.")
    assert await _next(listener) == DoneEvent(7)
    live.finished = True
    await listener.aclose()


async def test_a_stop_loses_no_token_the_model_wrote_before_it(live: LiveTurn) -> None:
    listener = _listener(live, MINUTE)
    live.publish(TokenEvent(7, "One"))
    assert await _next(listener) == TokenEvent(7, "One")
    live.publish(TokenEvent(7, " two"))
    stopped = ErrorEvent(7, ErrorCode.CANCELLED, "cancelled", partial="One two")
    live.publish(stopped)
    live.close()
    assert [await _next(listener), await _next(listener)] == [TokenEvent(7, " two"), stopped]
    with pytest.raises(StopAsyncIteration):
        await _next(listener)
    await listener.aclose()


async def test_without_a_window_a_token_goes_out_as_it_comes_unless_others_piled_up(live: LiveTurn) -> None:
    listener = _listener(live, 0.0)
    live.publish(TokenEvent(7, "a"))
    assert await _next(listener) == TokenEvent(7, "a")
    live.publish(TokenEvent(7, "b"))
    assert await _next(listener) == TokenEvent(7, "b")
    live.publish(TokenEvent(7, "c"))
    live.publish(TokenEvent(7, "d"))  # a listener that fell behind catches up in one event
    assert await _next(listener) == TokenEvent(7, "cd")
    live.finished = True
    await listener.aclose()


def test_the_window_is_a_setting_with_a_default() -> None:
    assert Settings().chat.stream_coalesce_ms == 40.0
    assert LiveTurns(_Engine(Settings(chat={"stream_coalesce_ms": 0})))._window() == 0.0  # type: ignore[arg-type]
