"""Generation slots per provider (app/services/chat/slots.py), through the chat engine over a real
migrated database: a question past the cap waits in line and runs when a slot frees, gives up with
BusyError and its place (nothing stored), leaves the line when cancelled; caps are per provider
(and per model when the settings name one); extractive answers take no slot."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.container import Container
from app.errors import BusyError
from app.llm.base import ModelCapabilities
from app.services import sessions
from app.services.chat.events import DoneEvent, RetrievalEvent, SearchProgressEvent, TokenEvent
from app.services.chat.live import LiveTurns
from app.services.chat.service import ChatService
from app.services.chat.slots import PoolLoad, SlotPool
from app.services.chat.store import Turn
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.services.chat.test_service import Rig


class Places(list[int]):
    """What ``queued`` was told, in order; ``told()`` waits for the first place."""

    def __init__(self) -> None:
        super().__init__()
        self._told = asyncio.Event()

    def __call__(self, place: int) -> None:
        self.append(place)
        self._told.set()

    async def told(self) -> None:
        async with asyncio.timeout(5):
            await self._told.wait()


@pytest.fixture
def rig(container: Container) -> Rig:
    container.settings.chat.max_concurrent_generations = 1  # the cap of a provider that declares none
    container.settings.chat.queue_timeout = 5.0
    built = Rig(container, FakeChatModel(), FakeEmbedder())
    remote = FakeChatModel("big", provider="remote", capabilities=ModelCapabilities(concurrency=2))
    built.models = FakeModels(built.model, FakeChatModel("own"), remote)
    built.service = ChatService(container.store, container.settings, lambda: built.embedder, built.models)
    return built


def stored(rig: Rig, sid: int) -> list[str]:
    return [m.content for m in sessions.messages(rig.container.store, sid, limit=20)]


async def finish(rig: Rig, turn: Turn) -> None:
    events = [e async for e in rig.service.run(turn)]
    assert isinstance(events[-1], DoneEvent), events[-1]


async def test_past_the_cap_a_question_waits_in_line_and_runs_when_a_slot_frees(rig: Rig) -> None:
    sid = rig.new_chat()
    first = await rig.service.start(sid, "first")
    places = Places()
    second = asyncio.create_task(rig.service.start(sid, "second", queued=places))
    await places.told()
    assert places == [1]
    assert stored(rig, sid) == ["first", ""]  # nothing of the waiting question is stored
    assert rig.service.slots.loads("fake", None) == [PoolLoad("fake", None, 1, 1, 1)]

    await finish(rig, first)
    turn = await asyncio.wait_for(second, 5)
    assert rig.service.slots.loads("fake", None) == [PoolLoad("fake", None, 1, 1, 0)]
    await finish(rig, turn)
    assert rig.service.generations_in_flight == 0
    assert stored(rig, sid)[2:] == ["second", "I could not find that in the documents."]


async def test_busy_after_the_wait_with_its_place_and_nothing_written(rig: Rig) -> None:
    rig.container.settings.chat.queue_timeout = 0.2
    sid = rig.new_chat()
    first = await rig.service.start(sid, "first")
    started = time.monotonic()
    with pytest.raises(BusyError) as caught:
        await rig.service.start(sid, "second")
    assert time.monotonic() - started >= 0.2
    busy = caught.value
    assert (busy.position, busy.retry_after) == (1, 2)  # 1st in line x 2 s (no hold measured yet) / 1 slot
    assert busy.message == (
        "all 1 generation slots of fake are taken (waited 0.2 s as number 1 in line); retry in about 2 s"
    )
    assert stored(rig, sid) == ["first", ""]
    assert rig.service.slots.loads("fake", None) == [PoolLoad("fake", None, 1, 1, 0)]

    rig.container.settings.chat.queue_timeout = 0  # refused at once: no place
    with pytest.raises(BusyError, match=r"\(the server does not queue\)") as caught:
        await rig.service.start(sid, "third")
    assert caught.value.position is None
    await finish(rig, first)
    await finish(rig, await rig.service.start(sid, "fourth now works"))


async def test_a_cancelled_waiter_leaves_the_line_and_those_behind_move_up(rig: Rig) -> None:
    sid = rig.new_chat()
    first = await rig.service.start(sid, "first")
    a_places = Places()
    b_places = Places()
    a = asyncio.create_task(rig.service.start(sid, "a", queued=a_places))
    await a_places.told()
    b = asyncio.create_task(rig.service.start(sid, "b", queued=b_places))
    await b_places.told()
    assert (a_places, b_places) == ([1], [2])

    a.cancel()
    with pytest.raises(asyncio.CancelledError):
        await a
    assert b_places == [2, 1]
    assert rig.service.slots.loads("fake", None) == [PoolLoad("fake", None, 1, 1, 1)]
    await finish(rig, first)
    await finish(rig, await asyncio.wait_for(b, 5))
    assert stored(rig, sid)[2:] == ["b", "I could not find that in the documents."]  # "a" was never stored
    assert rig.service.generations_in_flight == 0


async def test_caps_are_per_provider_and_per_model_when_the_settings_name_one(rig: Rig) -> None:
    rig.container.settings.chat.queue_timeout = 0.05
    rig.container.settings.chat.limits = {"fake/own": 1}
    fake, own, remote = rig.new_chat(), rig.new_chat(model="own"), rig.new_chat(provider="remote", model="big")
    held = [await rig.service.start(fake, "fake holds its provider's only slot")]
    held.append(await rig.service.start(own, "own has a pool of its own"))
    held += [await rig.service.start(remote, f"remote {n}") for n in (1, 2)]  # it declares 2
    with pytest.raises(BusyError, match="slots of remote are taken"):
        await rig.service.start(remote, "remote 3")
    with pytest.raises(BusyError, match="slots of fake/own are taken"):
        await rig.service.start(own, "own 2")
    assert rig.service.slots.loads("fake", None) == [PoolLoad("fake", None, 1, 1, 0), PoolLoad("fake", "own", 1, 1, 0)]
    assert rig.service.slots.loads("remote", 2) == [PoolLoad("remote", None, 2, 2, 0)]
    assert rig.service.generations_in_flight == 4
    for turn in held:
        await finish(rig, turn)
    assert rig.service.generations_in_flight == 0


async def test_an_extractive_answer_takes_no_slot(rig: Rig) -> None:
    generative = rig.new_chat()
    held = await rig.service.start(generative, "holds the only slot")
    rig.container.settings.chat.queue_timeout = 0
    events = await rig.ask(rig.new_chat(answer_mode="extractive"), "How do penguins survive the winter?")
    assert isinstance(events[-1], DoneEvent) and rig.service.generations_in_flight == 1
    await finish(rig, held)


async def test_a_regeneration_waits_in_line_too(rig: Rig) -> None:
    sid = rig.new_chat()
    earlier = await rig.service.start(sid, "first")
    await finish(rig, earlier)
    held = await rig.service.start(sid, "second")
    places = Places()
    again = asyncio.create_task(rig.service.start_regenerate(earlier.message_id, queued=places))
    await places.told()
    await finish(rig, held)
    await finish(rig, await asyncio.wait_for(again, 5))
    assert places == [1]


async def test_a_listener_that_fell_behind_takes_the_piled_up_tokens_at_once(rig: Rig) -> None:
    """What the chat subscription sends as one ChatToken when it is behind (fewer messages under load)."""
    rig.model.enqueue("one two three four")
    listener = await LiveTurns(rig.service).chat(rig.new_chat(), "penguins", None, lost=lambda: False)
    first = await anext(listener)
    while isinstance(first, SearchProgressEvent):
        first = await anext(listener)
    assert isinstance(first, RetrievalEvent)
    await asyncio.sleep(0.2)  # the turn runs on while this listener reads nothing
    token = await anext(listener)
    assert isinstance(token, TokenEvent) and token.text + listener.more_text() == "one two three four"
    assert listener.more_text() == ""
    assert isinstance(await anext(listener), DoneEvent)
    await listener.aclose()


async def test_a_waiter_cancelled_just_as_it_is_handed_the_slot_passes_it_on() -> None:
    pool = SlotPool("p", None, 1)
    held = await pool.acquire(1.0)
    b_places, c_places = Places(), Places()
    b = asyncio.create_task(pool.acquire(5.0, b_places))
    c = asyncio.create_task(pool.acquire(5.0, c_places))
    await b_places.told()
    await c_places.told()
    held.release()  # handed to b, which has not run yet...
    b.cancel()  # ...and is cancelled before it does
    with pytest.raises(asyncio.CancelledError):
        await b
    slot = await asyncio.wait_for(c, 5)
    assert (pool.in_use, pool.waiting, c_places) == (1, 0, [2, 1])
    slot.release()
    slot.release()  # a slot is given back once, whoever calls
    assert pool.in_use == 0
