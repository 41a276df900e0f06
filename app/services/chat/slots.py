"""Generation slots: how many answers each chat provider writes at once, and the line to wait in.

One pool per provider, shared by its models, unless ``RAGCHAT_CHAT__LIMITS`` names a model on its
own (``{"openai/gpt-4o": 8}``): that model then has a pool of its own. A pool's cap is the first
found of: the model's entry in ``RAGCHAT_CHAT__LIMITS``, the provider's entry there, what the
provider declares (``ModelCapabilities.concurrency``: openai 32, ollama 4), and
``RAGCHAT_CHAT__MAX_CONCURRENT_GENERATIONS`` (3), meant for the in-process model on a few cores.

The cap is the server's: with ``RAGCHAT_WORKERS`` processes (app/serving.py) the workers count
their slots together (app/services/chat/shared_slots.py). A slot freed in one worker goes to that
worker's line first; a line whose worker finds the cap taken by others looks again every
``shared_slots.POLL`` seconds, so the order is first come first served within a worker only.

A caller that finds every slot taken waits in line, first come first served, for at most
``RAGCHAT_CHAT__QUEUE_TIMEOUT`` seconds (5), told its place (1 = next) each time it changes; then
:class:`BusyError` with that place and a retry delay. A slot freed while others wait is handed to
the first of them directly, so a newcomer never overtakes the line. A caller cancelled while it
waits leaves the line (those behind it move up); one cancelled just as it was handed a slot passes
the slot on. Everything here runs on the event loop, so no locks.

The retry delay: a pool with ``limit`` slots, each held ``hold`` seconds on average, frees one every
``hold / limit`` seconds, so the caller at place ``p`` would get one in about ``p * hold / limit``
seconds (``hold`` is a moving average of the slots' hold times; 2 s until one has been freed).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.errors import BusyError
from app.llm.base import ChatModels
from app.ops import metrics
from app.services.chat import shared_slots
from app.services.chat.shared_slots import SharedCount
from app.settings import ChatSettings

Queued = Callable[[int], None]  # told the caller's place in line (1 = next) whenever it changes
FIRST_GUESS = 2.0  # seconds a slot is held, until one has been
SMOOTHING = 0.2  # weight of the latest hold time in the moving average
MAX_RETRY_AFTER = 300


@dataclass(frozen=True)
class PoolLoad:
    """One pool's state: its provider, its model (None: shared by the provider's models), its cap,
    the slots taken and the callers waiting."""

    provider: str
    model: str | None
    limit: int
    in_use: int
    waiting: int


class Slot:
    """A taken slot; ``release`` gives it back (once, whoever calls it)."""

    def __init__(self, pool: SlotPool) -> None:
        self._pool: SlotPool | None = pool
        self._since = time.monotonic()

    def release(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.release(time.monotonic() - self._since)


class _Waiter:
    def __init__(self, queued: Queued | None) -> None:
        self.granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queued = queued
        self.place = 0

    def tell(self, place: int) -> None:
        if place != self.place:
            self.place = place
            if self.queued is not None:
                self.queued(place)


class SlotPool:
    def __init__(self, provider: str, model: str | None, limit: int, shared: SharedCount | None = None) -> None:
        self.provider, self.model, self.limit = provider, model, limit
        self.in_use = 0  # in this process
        self.shared = shared  # the count over every worker process, when there are several
        self._line: deque[_Waiter] = deque()
        self._hold = FIRST_GUESS
        self._poller: asyncio.Task[None] | None = None

    @property
    def label(self) -> str:
        return self.provider if self.model is None else f"{self.provider}/{self.model}"

    @property
    def waiting(self) -> int:
        return len(self._line)

    def load(self) -> PoolLoad:
        in_use = self.shared.total() if self.shared is not None else self.in_use
        return PoolLoad(self.provider, self.model, self.limit, in_use, self.waiting)

    def _take(self) -> bool:
        free = self.shared.take(self.limit) if self.shared is not None else self.in_use < self.limit
        if free:
            self.in_use += 1
            self._report()
        return free

    async def acquire(self, patience: float, queued: Queued | None = None) -> Slot:
        """A slot, at once or after waiting in line up to ``patience`` s; else :class:`BusyError`."""
        if not self._line and self._take():
            return Slot(self)
        if patience <= 0:
            raise self._busy(self.waiting + 1, waited=0.0)
        waiter = _Waiter(queued)
        self._line.append(waiter)
        self._report()
        waiter.tell(len(self._line))
        if self.shared is not None and self._poller is None:
            self._poller = asyncio.create_task(self._poll(), name=f"slots of {self.label}")
        try:
            async with asyncio.timeout(patience):
                await waiter.granted
        except TimeoutError:
            if _handed(waiter):  # handed over just as the time ran out: keep it
                return Slot(self)
            raise self._busy(self._leave(waiter), waited=patience) from None
        except asyncio.CancelledError:
            if _handed(waiter):
                self.release(self._hold)  # pass it on to the next in line (held for no time: not counted)
            else:
                self._leave(waiter)
            raise
        return Slot(self)

    def release(self, held: float) -> None:
        self._hold += SMOOTHING * (held - self._hold)
        if self._hand_over():  # the slot changes hands: in_use (and the shared count) stay
            return
        self.in_use -= 1
        self._report()
        if self.shared is not None:
            self.shared.give_back()

    def _hand_over(self) -> bool:
        while self._line:
            waiter = self._line.popleft()
            if not waiter.granted.done():
                waiter.granted.set_result(None)
                self._moved()
                return True
        return False

    async def _poll(self) -> None:
        """While this worker's line waits, take slots other workers freed (module docstring)."""
        try:
            while self._line:
                await asyncio.sleep(shared_slots.POLL)
                while self._line and self._take():
                    if not self._hand_over():  # everyone left meanwhile
                        self.release(self._hold)
        finally:
            self._poller = None

    def _leave(self, waiter: _Waiter) -> int:
        """Take ``waiter`` out of the line; its place (1 = next) when it left."""
        place = self._line.index(waiter) + 1 if waiter in self._line else waiter.place
        if waiter in self._line:
            self._line.remove(waiter)
            self._moved()
        return place

    def _report(self) -> None:
        """This process's share of the pool, for /metrics (summed over the workers there)."""
        metrics.slots(self.label, self.in_use, len(self._line))

    def _moved(self) -> None:
        self._report()
        for place, waiter in enumerate(self._line, start=1):
            waiter.tell(place)

    def retry_after(self, place: int) -> int:
        """Seconds until the caller at ``place`` would likely get a slot (module docstring)."""
        return max(1, min(MAX_RETRY_AFTER, math.ceil(place * self._hold / self.limit)))

    def _busy(self, place: int, *, waited: float) -> BusyError:
        retry = self.retry_after(place)
        how = f"waited {waited:g} s as number {place} in line" if waited else "the server does not queue"
        return BusyError(
            f"all {self.limit} generation slots of {self.label} are taken ({how}); retry in about {retry} s",
            retry_after=retry,
            position=place if waited else None,
        )


def _handed(waiter: _Waiter) -> bool:
    return waiter.granted.done() and not waiter.granted.cancelled()


class SlotPools:
    """The pools of one ChatService, made on first use (module docstring)."""

    def __init__(self, settings: ChatSettings, models: ChatModels, *, shared: Path | None = None) -> None:
        self._settings = settings
        self._models = models
        self._shared = shared  # the folder of the counts shared by the workers (shared_slots.py)
        self._pools: dict[tuple[str, str | None], SlotPool] = {}

    def pool(self, provider: str, model: str) -> SlotPool:
        own = f"{provider}/{model}" in self._settings.limits
        key = (provider, model if own else None)
        if key not in self._pools:
            declared = self._models.capabilities(provider, model).concurrency
            pool = SlotPool(provider, key[1], self.limit(provider, model if own else None, declared))
            if self._shared is not None:
                pool.shared = SharedCount(self._shared, pool.label)
            self._pools[key] = pool
        return self._pools[key]

    def limit(self, provider: str, model: str | None, declared: int | None) -> int:
        limits = self._settings.limits
        found = limits.get(f"{provider}/{model}") if model is not None else None
        return found or limits.get(provider) or declared or self._settings.max_concurrent_generations

    async def acquire(self, provider: str, model: str, queued: Queued | None = None) -> Slot:
        return await self.pool(provider, model).acquire(self._settings.queue_timeout, queued)

    @property
    def in_use(self) -> int:
        return sum(pool.in_use for pool in self._pools.values())

    def loads(self, provider: str, declared: int | None) -> list[PoolLoad]:
        """The provider's pools: its shared one (made or not) and those of its models with limits."""
        found = [pool.load() for (name, _), pool in self._pools.items() if name == provider]
        if not any(load.model is None for load in found):
            found.append(PoolLoad(provider, None, self.limit(provider, None, declared), 0, 0))
        for key in self._settings.limits:
            name, _, model = key.partition("/")
            if name == provider and model and not any(load.model == model for load in found):
                found.append(PoolLoad(provider, model, self._settings.limits[key], 0, 0))
        return sorted(found, key=lambda load: (load.model is not None, load.model or ""))
