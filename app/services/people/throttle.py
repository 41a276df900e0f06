"""Sign-in attempts, limited per account and per address: a password cannot be guessed faster than
``attempts`` per ``window``, and one address cannot try many accounts.

Counted in this process (with ``serve --workers N`` each worker counts its own, so the bound is N
times as wide; documented in docs/SECURITY.md). Memory is bounded: the oldest keys are forgotten
first once ``max_keys`` are tracked.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable


class Throttle:
    def __init__(
        self,
        attempts: int,
        window_seconds: float,
        *,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.attempts = attempts
        self.window = window_seconds
        self.max_keys = max_keys
        self.clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, key: str) -> int:
        """Seconds until ``key`` may try again (0: now)."""
        with self._lock:
            times = self._recent(key)
            if times is None or len(times) < self.attempts:
                return 0
            return max(1, int(times[0] + self.window - self.clock()) + 1)

    def failed(self, key: str) -> None:
        with self._lock:
            times = self._recent(key)
            if times is None:
                times = self._failures[key] = deque(maxlen=self.attempts)
            times.append(self.clock())
            self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def _recent(self, key: str) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        cutoff = self.clock() - self.window
        while times and times[0] <= cutoff:
            times.popleft()
        return times


class SignInLimits:
    """The two throttles sign-in asks: one keyed by account (the email as typed, lower-cased: an
    unknown email is counted like a known one), one by client address. One per process, held by the
    container, shared by every sign-in (password, invitation, password change)."""

    def __init__(self, account: Throttle, address: Throttle) -> None:
        self.account = account
        self.address = address

    def retry_after(self, account: str, address: str) -> int:
        return max(self.account.retry_after(account), self.address.retry_after(address))

    def failed(self, account: str, address: str) -> None:
        self.account.failed(account)
        self.address.failed(address)

    def succeeded(self, account: str) -> None:
        # The address keeps its count: signing in to one's own account between guesses at others'
        # must not reset the per-address limit.
        self.account.succeeded(account)
