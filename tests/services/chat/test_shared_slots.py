"""The workers' shared slot count (app/services/chat/shared_slots.py): a slot held by a process that is
gone, or killed and not yet reaped (a zombie), is not counted."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from app.services.chat.shared_slots import SharedCount
from tests.waiting import wait_until


def _held_by(folder: Path, pid: int, n: int) -> SharedCount:
    count = SharedCount(folder, "scripted")
    count.path.write_text(f"{pid} {n}\n", encoding="ascii")
    return count


def test_a_killed_workers_slots_free_before_it_is_reaped(tmp_path: Path) -> None:
    worker = subprocess.Popen(["sleep", "60"])
    try:
        count = _held_by(tmp_path, worker.pid, 2)
        assert count.total() == 2 and not count.take(2)  # a live worker's slots count against the cap
        os.kill(worker.pid, signal.SIGKILL)
        wait_until(lambda: count.total() == 0, 5, "the zombie's slots to stop counting")  # not reaped yet
        assert count.take(2) and count.total() == 1
        assert f"{worker.pid} " not in count.path.read_text(encoding="ascii")  # dropped at the write
    finally:
        worker.kill()
        worker.wait()


def test_slots_taken_and_given_back_are_counted_per_process(tmp_path: Path) -> None:
    count = SharedCount(tmp_path, "openai/gpt 4")  # a label is made safe for a file name
    assert count.path.name == "openai_gpt_4.slots"
    assert count.take(2) and count.take(2) and not count.take(2)
    count.give_back()
    assert count.total() == 1
