"""Generation slots counted across the worker processes of one ``ragchat serve --workers N``.

A cap is the server's (RAGCHAT_CHAT__LIMITS, a provider's declared concurrency), whatever the
number of workers. Splitting it (``ceil(cap / N)`` each) was measured first and dropped: the kernel
hands connections to workers unevenly (they arrive in bursts, and whichever worker wakes first
takes them), so at 32 streams on 2 workers one worker's 16 slots were full while the other's were
not, 814 position updates were sent to waiting clients and throughput fell to 0.32 of ideal
(docs/BENCHMARKS.md, finding 7, fourth pass).

So the workers count together: one small file per pool in a folder the parent makes for this run
(``WORKER_SLOTS``, in the workers' environment), holding ``pid count`` lines, read and rewritten
under an exclusive ``flock`` (tens of microseconds, twice a turn). A worker that was killed leaves
its line behind; a line whose process no longer exists is not counted and is dropped at the next
write. A caller waiting in line while the whole cap is taken in other workers cannot be woken by
them: its worker looks again every ``POLL`` seconds (app/services/chat/slots.py).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

WORKER_SLOTS = "RAGCHAT_WORKER_SLOTS"  # set by app/serving.py for its workers; not a setting
POLL = 0.02  # seconds between a waiting worker's looks at the shared count
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class SharedCount:
    """One pool's slots taken, server-wide (module docstring)."""

    def __init__(self, folder: Path, label: str) -> None:
        self.path = folder / (_UNSAFE.sub("_", label) + ".slots")
        self._pid = os.getpid()

    def take(self, cap: int) -> bool:
        """Count one slot for this process if fewer than ``cap`` are taken server-wide."""
        return self._change(+1, cap)

    def give_back(self) -> None:
        self._change(-1, None)

    def total(self) -> int:
        with _locked(self.path) as handle:
            return sum(_live(handle).values())

    def _change(self, step: int, cap: int | None) -> bool:
        with _locked(self.path) as handle:
            counts = _live(handle)
            if cap is not None and sum(counts.values()) >= cap:
                return False
            counts[self._pid] = max(0, counts.get(self._pid, 0) + step)
            handle.seek(0)
            handle.truncate()
            handle.write("".join(f"{pid} {n}\n" for pid, n in counts.items() if n))
            return True


@contextmanager
def _locked(path: Path) -> Iterator[TextIO]:
    with path.open("a+", encoding="ascii") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # let go when the file closes
        handle.seek(0)
        yield handle


def _live(handle: TextIO) -> dict[int, int]:
    counts: dict[int, int] = {}
    for line in handle.read().splitlines():
        pid, _, n = line.partition(" ")
        if pid.isdigit() and n.isdigit() and _alive(int(pid)):
            counts[int(pid)] = int(n)
    return counts


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now holds the number: not one of ours
        return False
    # A killed worker stays a zombie until the supervisor reaps it (uvicorn looks every ~0.5 s):
    # it exists for kill(0) but holds nothing.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc here: kill(0) is all there is to go by
    return stat.rsplit(")", 1)[-1].split()[:1] not in (["Z"], ["X"])


def shared_folder() -> Path | None:
    """The folder of this run's shared counts, when this process is one of several workers."""
    folder = os.environ.get(WORKER_SLOTS)
    return Path(folder) if folder else None
