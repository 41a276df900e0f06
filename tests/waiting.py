"""Waiting for something another thread or process does: one bounded polling loop for every test."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float = 20.0,
    what: str = "the condition",
    *,
    interval: float = 0.02,
    detail: Callable[[], str] | None = None,
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Bounded, so a test cannot hang: after ``timeout`` seconds it fails with "timed out after N s
    waiting for <what>", followed by ``detail()`` (a server's log, say) when given. A predicate
    that finds the wait hopeless (the server process died) raises its own error at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            message = f"timed out after {timeout} s waiting for {what}"
            raise AssertionError(f"{message}\n{detail()}" if detail else message)
        time.sleep(interval)
