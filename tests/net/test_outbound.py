"""The outbound gate: at most so many requests to user-chosen addresses at once; one beyond waits
its turn for a while, then is refused with an error that says why."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from app.errors import FetchError
from app.net import outbound
from app.net.addresses import AddressPolicy
from app.net.fetch import FetchPolicy, fetch
from app.settings import OutboundSettings
from tests.net.server import DOC, serving
from tests.net.trickle import trickling

LOOPBACK = AddressPolicy.of(False, ["127.0.0.1/32"])


def policy(timeout: float) -> FetchPolicy:
    return FetchPolicy(LOOPBACK, max_bytes=4096, timeout=timeout, max_redirects=0, content_types=None)


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the trickling server saw no connection")


def test_a_fetch_beyond_the_limit_waits_for_a_slot_and_is_refused_when_none_comes() -> None:
    with trickling() as slow, serving() as fast:
        slow_url = f"http://127.0.0.1:{slow.port}/"
        fast_url = f"http://127.0.0.1:{fast.server_address[1]}/notes.md"

        async def scenario() -> None:
            gate = outbound.configure(OutboundSettings(max_concurrent=1, wait_seconds=0.3))
            holding = asyncio.ensure_future(fetch(slow_url, policy(timeout=3.0)))
            await _until(lambda: slow.accepted == 1)
            assert gate.in_use == 1
            with pytest.raises(
                FetchError, match=r"1 outbound requests open, its limit \(RAGCHAT_OUTBOUND__MAX_CONCURRENT\)"
            ):
                await fetch(fast_url, policy(timeout=3.0))
            with pytest.raises(FetchError, match="within 3 s"):
                await holding
            assert gate.in_use == 0
            # Waiting long enough, the next request gets the slot the slow one gives up.
            outbound.configure(OutboundSettings(max_concurrent=1, wait_seconds=10))
            holding = asyncio.ensure_future(fetch(slow_url, policy(timeout=0.5)))
            await _until(lambda: slow.accepted == 2)
            assert (await fetch(fast_url, policy(timeout=3.0))).data == DOC
            with pytest.raises(FetchError, match=r"within 0\.5 s"):
                await holding

        asyncio.run(scenario())
    assert fast.seen == [("/notes.md", f"127.0.0.1:{fast.server_address[1]}")]  # type: ignore[attr-defined]
