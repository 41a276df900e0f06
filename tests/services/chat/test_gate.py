"""The gate on a chat turn's CPU-bound steps (app/services/chat/gate.py): at most WORKERS threads
inside at once, a place given back while a thread waits on something else (a model's reply, an
embedding), and a turn's embedder that is the same object from turn to turn (its cache is kept per
object)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import anyio
import anyio.to_thread

from app.services.chat import gate as chat_gate
from tests.fakes import FakeEmbedder


def _inside(workers: int, work: float) -> int:
    """How many of ``workers`` threads were inside the gate at once, at most."""
    inside, most = 0, 0
    lock = threading.Lock()

    def step() -> None:
        nonlocal inside, most
        with chat_gate.cpu():
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(work)
            with lock:
                inside -= 1

    _run(step, workers)
    return most


def _run(step: Callable[[], None], workers: int) -> None:
    threads = [threading.Thread(target=step) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)


def test_at_most_workers_steps_run_at_once() -> None:
    assert _inside(8, 0.02) == chat_gate.WORKERS


def test_a_step_waiting_elsewhere_gives_its_place_back() -> None:
    # All 8 meet while waiting "on a provider": impossible if the waits kept their places (2).
    met = threading.Barrier(8, timeout=5)
    broken: list[BaseException] = []

    def step() -> None:
        with chat_gate.cpu(), chat_gate.released():
            try:
                met.wait()
            except threading.BrokenBarrierError as exc:
                broken.append(exc)

    _run(step, 8)
    assert not broken
    assert _inside(8, 0.01) == chat_gate.WORKERS  # and every place came back


def test_the_gate_is_reentrant_in_a_thread() -> None:
    with chat_gate.cpu(), chat_gate.cpu():
        pass
    assert _inside(4, 0.01) == chat_gate.WORKERS  # every place came back


def test_a_turns_embedder_is_one_object_per_embedder() -> None:
    fake = FakeEmbedder()
    current = [fake]
    get = chat_gate.ungated(lambda: current[0])
    first = get()
    assert get() is first and first.space == fake.space
    assert (first.embed(["penguins"]) == fake.embed(["penguins"])).all()
    current[0] = FakeEmbedder()
    assert get() is not first


async def test_steps_waiting_for_a_place_leave_the_worker_threads_to_other_work() -> None:
    """More turns' steps than the shared pool has threads (40) wait for a place: they wait on the
    loop, not in threads, so another thread's work runs meanwhile."""
    held, free = threading.Semaphore(0), threading.Event()

    def hold() -> None:
        held.release()
        free.wait(10)

    holders = [asyncio.ensure_future(chat_gate.run(hold)) for _ in range(chat_gate.WORKERS)]
    try:
        for _ in holders:  # every place taken
            assert await anyio.to_thread.run_sync(held.acquire, True, 10)
        waiting = [asyncio.ensure_future(chat_gate.run(lambda: None)) for _ in range(60)]
        await asyncio.sleep(0)
        with anyio.fail_after(10):  # a bound, so that the old behaviour fails rather than hangs
            assert await anyio.to_thread.run_sync(lambda: "another thread's work") == "another thread's work"
    finally:
        free.set()
    await asyncio.gather(*holders, *waiting)
