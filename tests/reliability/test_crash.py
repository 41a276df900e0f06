"""SIGKILL at the worst moments, in real subprocesses: during a large `ragchat ingest` and during a chat
turn. After each kill the database passes integrity_check, every document is whole or absent,
interrupted answers are marked failed on restart, and running the work again completes it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.db import migrate
from benchmarks.load import Server, audit, open_db, problems
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.providers import scripted_env
from tests.waiting import wait_until

FILES = 320  # five embedding batches of 64 files
WORDS = "penguin owl tea winter night steam leaf huddle hunt mouse river stone cloud paper lamp clock".split()


def _corpus(folder: Path) -> None:
    rng = random.Random(11)
    for i in range(FILES):
        path = folder / f"part-{i % 8}" / (f"note-{i:04d}.md" if i % 2 else f"note-{i:04d}.txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 45)))
        path.write_text(f"# Note {i}\n\n{words}.\n", encoding="utf-8")


def _documents(database: Path) -> int:
    conn = open_db(database)
    try:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        conn.close()


def _stopped_or_reached(proc: subprocess.Popen[bytes], database: Path, documents: int) -> Callable[[], bool]:
    return lambda: proc.poll() is not None or _documents(database) >= documents


@pytest.mark.sqlite_only(reason="a SIGKILLed writer and SQLite's WAL file: PRAGMA integrity_check after each kill")
def test_sigkill_during_a_large_ingestion_leaves_whole_documents_and_a_rerun_completes(tmp_path: Path) -> None:
    server = Server(tmp_path)
    migrate.upgrade(f"sqlite:///{server.database}")
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    kills = []
    for threshold in (1, 100):  # in the first batch's writes, and well into the run
        with (tmp_path / "ingest.log").open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app", "ingest", str(corpus), "--project", "big"],
                cwd=tmp_path,
                env=server.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_until(_stopped_or_reached(proc, server.database, threshold), 240, f"{threshold} documents")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, "the ingestion finished before it could be killed"
        kills.append(_documents(server.database))
        assert problems(audit(server.database)) == [], f"after a kill at {kills[-1]} documents"
    assert kills[0] <= kills[1] < FILES

    rerun = server.cli("ingest", str(corpus), "--project", "big", timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    found = audit(server.database)
    assert problems(found) == []
    assert found["rows"]["documents"] == found["rows"]["chunks"] == FILES


@pytest.mark.sqlite_only(reason="a SIGKILLed server and SQLite's WAL file: PRAGMA integrity_check after the kill")
def test_sigkill_during_a_chat_turn_is_marked_interrupted_on_restart(tmp_path: Path) -> None:
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(["Emperor penguins huddle " + "slowly " * 400]), encoding="utf-8")
    server = Server(tmp_path, scripted_env(slow, token_delay_ms=50))
    migrate.upgrade(f"sqlite:///{server.database}")
    with server:
        api = Api(server.base)
        pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
        api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
        sid = api.run(CREATE_SESSION, p=pid, input={"provider": "scripted", "model": "scripted", "threshold": 0.1})
        sid = sid["createChatSession"]["id"]
        with api.websocket() as ws:
            stream = ws.subscribe(CHAT, s=sid, c="How do penguins keep warm?")
            message_id = next(stream)["data"]["chat"]["messageId"]  # a search pass's, then the retrieval's
            while next(stream)["data"]["chat"]["__typename"] != "ChatRetrieval":
                pass
            for _ in range(3):
                assert next(stream)["data"]["chat"]["__typename"] == "ChatToken"
            server.kill()  # mid-answer
        api.http.close()

    found = audit(server.database)
    assert found["answers_still_streaming"] == 1
    assert problems({**found, "answers_still_streaming": 0}) == []

    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps(["Emperor penguins huddle together [1]."]), encoding="utf-8")
    server.env.update({"RAGCHAT_LLM__SCRIPT": str(fast), "RAGCHAT_LLM__TOKEN_DELAY_MS": "0"})
    with server:
        api = Api(server.base)
        stored = api.run(
            "query($id: ID!) { message(id: $id) { ... on ChatMessage { status error content } } }", id=message_id
        )["message"]
        assert stored["status"] == "FAILED" and "interrupted" in stored["error"]
        assert stored["content"] == ""  # what streamed before the kill was never written: only the end is
        again = api.run(
            "mutation($id: ID!) { regenerateMessage(messageId: $id) { ... on ChatMessage { status content } } }",
            id=message_id,
        )["regenerateMessage"]
        assert again == {"status": "COMPLETE", "content": "Emperor penguins huddle together [1]."}
        api.http.close()
    assert problems(audit(server.database, server.log_text())) == []
    assert "answers were interrupted by the last shutdown" in server.log_text()
    assert os.path.getsize(server.database) > 0
