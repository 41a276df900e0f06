"""A short run of benchmarks/load.py (the long one is `python -m benchmarks.load`): a real server
subprocess with 20 concurrent chat subscriptions while documents are ingested and sessions come and
go; afterwards the audit must find nothing lost and nothing inconsistent."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.load import load
from tests.tally import CASES


@pytest.mark.sqlite_only(
    reason="benchmarks/load.py serves and audits a SQLite file (PRAGMA integrity_check, FTS5's integrity-check)"
)
def test_a_short_load_holds_and_loses_nothing(tmp_path: Path) -> None:
    kinds = ("chat", "addDocument", "uploadDocuments", "createChatSession", "deleteChatSession", "read")
    # 4 s of load, longer (up to 30 s more) until every kind of operation has completed once: on a
    # busy machine a session's deletion could come round after the 4 s and the test failed on time.
    report = load(tmp_path, seconds=4, chats=20, ingesters=2, max_generations=8, required=kinds, grace=30)
    assert report["problems"] == [], report
    operations = report["operations"]
    for name in kinds:
        assert operations[name]["ok"] > 0, (name, operations[name])
    assert report["accepted_answers"] > 0
    assert report["audit"]["messages"].get("lost", 0) == 0
    assert report["audit"]["integrity_check"] == "ok"
    CASES["load: requests completed in the short run"] += report["completed"]
