"""StepDeadline: one timer per stream bounds each step like asyncio.timeout_at around it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.services.chat.step_deadline import StepDeadline


async def _ticks(gaps: list[float]) -> AsyncIterator[int]:
    for n, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield n


def test_steps_in_time_pass_even_when_the_stream_outlasts_the_first_deadline() -> None:
    async def main() -> list[int]:
        steps = StepDeadline()
        stream = _ticks([0.01] * 20)  # 0.2 s in all, each step well within its 0.1 s
        got = []
        try:
            while True:
                try:
                    got.append(await steps.step(anext(stream), steps.time() + 0.1))
                except StopAsyncIteration:
                    return got
        finally:
            steps.close()

    assert asyncio.run(main()) == list(range(20))


def test_a_late_step_raises_timeout_error_and_the_task_is_not_left_cancelling() -> None:
    async def main() -> tuple[list[int], int]:
        steps = StepDeadline()
        stream = _ticks([0.01, 0.01, 0.5])
        got = []
        with pytest.raises(TimeoutError):
            while True:
                got.append(await steps.step(anext(stream), steps.time() + 0.1))
        steps.close()
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0.01)  # no stray cancellation arrives later
        return got, task.cancelling()

    assert asyncio.run(main()) == ([0, 1], 0)


def test_a_shorter_deadline_after_a_longer_one_is_kept() -> None:
    async def main() -> float:
        steps = StepDeadline()
        loop = asyncio.get_running_loop()
        assert await steps.step(asyncio.sleep(0.01, "first"), steps.time() + 30) == "first"  # timer at +30 s
        started = loop.time()
        with pytest.raises(TimeoutError):
            await steps.step(asyncio.sleep(5), steps.time() + 0.05)
        steps.close()
        return loop.time() - started

    assert asyncio.run(main()) < 1.0


def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    async def main() -> None:
        async def stepper() -> None:
            steps = StepDeadline()
            try:
                await steps.step(asyncio.sleep(5), steps.time() + 10)
            finally:
                steps.close()

        task = asyncio.create_task(stepper())
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_cancellation_at_the_deadline_from_elsewhere_is_not_taken_for_the_timeout() -> None:
    async def main() -> None:
        async def stepper() -> None:
            steps = StepDeadline()
            try:
                await steps.step(asyncio.sleep(5), steps.time() + 0.05)
            finally:
                steps.close()

        task = asyncio.create_task(stepper())
        loop = asyncio.get_running_loop()
        # Cancelled from outside in the same loop iteration as the deadline's timer fires.
        loop.call_at(loop.time() + 0.05, task.cancel)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
