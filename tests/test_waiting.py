"""The one polling helper: returns what it waited for, and fails clearly instead of hanging."""

from __future__ import annotations

import itertools

import pytest

from tests.waiting import wait_until


def test_returns_the_first_truthy_value() -> None:
    calls = itertools.count()
    assert wait_until(lambda: (n := next(calls)) >= 3 and f"call {n}", 5, interval=0) == "call 3"


def test_times_out_naming_what_it_waited_for_and_the_detail() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0.05 s waiting for the server to start\nlog tail"):
        wait_until(lambda: None, 0.05, "the server to start", interval=0.01, detail=lambda: "log tail")


def test_a_hopeless_wait_fails_at_once_with_the_predicates_error() -> None:
    def died() -> bool:
        raise RuntimeError("the server exited with 1")

    with pytest.raises(RuntimeError, match="exited"):
        wait_until(died, 60)
