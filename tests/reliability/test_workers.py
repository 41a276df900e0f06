"""Several server processes (issue 16, item 5): ``ragchat serve`` with ``RAGCHAT_WORKERS=2`` answers
from both workers, what one stores the other finds (its in-memory indexes follow the journals),
and a killed worker's answer ends failed ("interrupted") while the other serves on. A client whose
websocket reconnects to another process follows its turn there until the answer is stored, and the
process writing it does not cancel it meanwhile (app/services/chat/follow.py)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db.database import Database
from app.settings import Settings
from benchmarks.load import Server
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION
from tests.reliability.helpers import CITED, SLOW, SYLLABLES, scripted_server
from tests.reliability.test_two_servers import MESSAGE, SEARCH, stream_until_tokens
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

# About 10 s at 25 ms a word: long enough to move the client, short enough to wait for.
MEDIUM = "Emperor penguins huddle " + " ".join(
    "".join(w) for w in itertools.islice(itertools.product(SYLLABLES, repeat=3), 400)
)
CHAT = """subscription($s: ID!, $c: String!, $k: String) { chat(sessionId: $s, content: $c, clientMessageId: $k) {
  __typename ... on ChatToken { text } ... on ChatRetrieval { messageId }
  ... on ChatDone { answer { id status content } } ... on ChatError { code message } } }"""
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  __typename ... on ChatMessage { status content } ... on Error { message } } }"""
SEALS_SEARCH = """query($p: ID!) { search(projectId: $p, query: "Weddell seals breathe", topK: 1, threshold: 0) {
  ... on SearchResults { kept { documentName } } } }"""
LAST = """query($id: ID!) { chatSession(id: $id) { ... on ChatSession { messages(last: 1) {
  ... on ChatMessageConnection { edges { node { status error } } } } } } }"""
LOAD = "{ providers { provider generations { limit inUse waiting } } }"
SCRIPTED = {"provider": "scripted", "model": "scripted", "threshold": 0.1, "answerMode": "GENERATIVE"}
PENGUINS = "# Penguins\n\nEmperor penguins huddle in winter."
SEALS = "# Seals\n\nWeddell seals breathe through holes in the winter ice."


def _session(api: Api) -> tuple[str, str]:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    assert api.run(ADD_DOC, p=pid, name="penguins.md", text=PENGUINS)["addDocument"]["added"] == 1
    return pid, api.run(CREATE_SESSION, p=pid, input=SCRIPTED)["createChatSession"]["id"]


def _last(api: Api, sid: str) -> dict[str, Any]:
    """The session's last message: the answer of its last turn."""
    edges = api.run(LAST, id=sid)["chatSession"]["messages"]["edges"]
    return dict(edges[0]["node"])


def _pid(api: Api) -> int:
    return int(api.http.get("/healthz").json()["pid"])


@contextmanager
def _on_worker(base: str, pid: int | None = None, *, avoid: int | None = None, timeout: float = 60) -> Iterator[Api]:
    """A client whose (kept-alive) connection was accepted by worker ``pid`` (or any but ``avoid``):
    the kernel hands each new connection to one of the workers; new ones are opened until it fits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        api = Api(base)
        try:
            found = _pid(api)
        except httpx.TransportError:
            found = None
        if found is not None and (found == pid if pid is not None else found != avoid):
            try:
                yield api
            finally:
                api.http.close()
            return
        api.http.close()
        time.sleep(0.05)
    raise AssertionError(f"no connection reached worker {pid or f'other than {avoid}'} in {timeout} s")


def _writer_pid(url: str, message_id: str) -> int:
    """The process writing answer ``message_id`` (its server's registered pid)."""
    store = Database.from_url(url)
    try:
        with store.read() as db:
            query = text("SELECT s.pid FROM chat_messages m JOIN servers s ON s.id = m.owner WHERE m.id = :id")
            return int(db.execute(query, {"id": int(message_id)}).scalar_one())
    finally:
        store.dispose()


def _client_per_worker(base: str, clients: ExitStack) -> tuple[Api, int, Api, int]:
    """A client on each of the two workers, and each worker's pid."""
    one = clients.enter_context(_on_worker(base))
    first = _pid(one)
    two = clients.enter_context(_on_worker(base, avoid=first))
    return one, first, two, _pid(two)


def _capped_workers(tmp_path: Path, url: str, answer: str, delay_ms: int, queue_timeout: int) -> Server:
    """Two workers sharing a cap of one scripted generation, callers waiting ``queue_timeout`` s for it."""
    srv = scripted_server(tmp_path, "w", url, [answer], delay_ms=delay_ms)
    srv.env.update(
        {
            "RAGCHAT_WORKERS": "2",
            "RAGCHAT_CHAT__LIMITS": '{"scripted": 1}',
            "RAGCHAT_CHAT__QUEUE_TIMEOUT": str(queue_timeout),
        }
    )
    return srv


def test_two_workers_on_one_port_serve_one_database_and_a_killed_ones_answer_is_failed(
    tmp_path: Path, migrated: Settings
) -> None:
    # Each worker has its own scripted model: its first answer is CITED, its next ones SLOW.
    srv = scripted_server(tmp_path, "w", migrated.database_url, [CITED, SLOW], delay_ms=20)
    srv.env["RAGCHAT_WORKERS"] = "2"
    with srv, ExitStack() as clients:
        one, first, two, second = _client_per_worker(srv.base, clients)
        project, sid = _session(one)
        # Worker two loads its indexes now; then worker one adds a document: two finds it at once.
        assert [h["documentName"] for h in two.run(SEARCH, p=project)["search"]["kept"]] == ["penguins.md"]
        assert one.run(ADD_DOC, p=project, name="seals.md", text=SEALS)["addDocument"]["added"] == 1
        assert two.run(SEALS_SEARCH, p=project)["search"]["kept"] == [{"documentName": "seals.md"}]
        # Each worker answers a turn.
        for api in (one, two):
            answer = api.run(SEND, s=sid, c="How do penguins keep warm?")["sendMessage"]
            assert answer == {"__typename": "ChatMessage", "status": "COMPLETE", "content": CITED}
        assert (_pid(one), _pid(two)) == (first, second)

        # Kill the worker writing an answer: the other serves on, and the answer ends failed.
        with Api(srv.base).websocket() as ws:
            killed, _ = stream_until_tokens(ws, sid, "And in a blizzard?", tokens=3)
            victim = _writer_pid(migrated.database_url, killed)
            os.kill(victim, signal.SIGKILL)
        survivor = clients.enter_context(_on_worker(srv.base, second if victim == first else first))
        ended = wait_until(
            lambda: (m := survivor.run(MESSAGE, id=killed)["message"])["status"] != "STREAMING" and m, 20, "the end"
        )
        assert ended["status"] == "FAILED" and "interrupted" in ended["error"], ended
        assert survivor.run(SEARCH, p=project)["search"]["kept"][0] == {"documentName": "penguins.md"}


def _healthz_pids(port: int, count: int) -> list[int]:
    """Open ``count`` connections at once, then ask each which process accepted it (/healthz)."""
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
    try:
        for conn in conns:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        pids = []
        for conn in conns:
            response = b""
            while chunk := conn.recv(65536):
                response += chunk
            pids.append(int(json.loads(response.split(b"\r\n\r\n", 1)[1])["pid"]))
        return pids
    finally:
        for conn in conns:
            conn.close()


def test_connections_opened_together_are_spread_over_the_workers(tmp_path: Path, migrated: Settings) -> None:
    """Each worker listens on a socket of its own in the port's SO_REUSEPORT group (app/serving.py).
    On one shared socket, the worker that woke first took nearly every connection waiting: 32 opened
    together went 31/1 (a hash spreads them like coin tosses: fewer than 4 of 32 is ~3 in 10^6)."""
    srv = scripted_server(tmp_path, "w", migrated.database_url, [CITED], delay_ms=1)
    srv.env["RAGCHAT_WORKERS"] = "2"
    with srv, ExitStack() as clients:
        _, first, _, second = _client_per_worker(srv.base, clients)  # both workers are serving
        pids = _healthz_pids(srv.port, 32)
        counts = {pid: pids.count(pid) for pid in (first, second)}
        assert sum(counts.values()) == 32 and min(counts.values()) >= 4, counts


def test_a_port_already_taken_stops_the_workers_with_a_clear_error(tmp_path: Path, migrated: Settings) -> None:
    srv = scripted_server(tmp_path, "w", migrated.database_url, [CITED], delay_ms=1)
    srv.env["RAGCHAT_WORKERS"] = "2"
    with socket.socket() as taken:  # another program's socket, without SO_REUSEPORT
        taken.bind(("127.0.0.1", srv.port))
        taken.listen()
        with pytest.raises(RuntimeError, match="exited with 3") as failed:
            srv.start(timeout=60)
    assert f"cannot listen on 127.0.0.1:{srv.port}" in str(failed.value), str(failed.value)


def _scripted_load(api: Api) -> dict[str, Any]:
    (pool,) = next(p for p in api.run(LOAD)["providers"] if p["provider"] == "scripted")["generations"]
    return dict(pool)


def test_the_workers_share_one_cap_and_a_killed_workers_slots_are_not_counted(
    tmp_path: Path, migrated: Settings
) -> None:
    srv = _capped_workers(tmp_path, migrated.database_url, SLOW, delay_ms=20, queue_timeout=0)
    with srv, ExitStack() as clients:
        one, first, two, second = _client_per_worker(srv.base, clients)
        _, sid = _session(one)
        with Api(srv.base).websocket() as ws:  # the one slot, taken in whichever worker
            answer, _ = stream_until_tokens(ws, sid, "How do penguins keep warm?", tokens=1)
            for api in (one, two):  # both workers are refused: the cap is the server's, not each worker's
                busy = api.run(SEND, s=sid, c="And in a blizzard?")["sendMessage"]
                assert busy["__typename"] == "BusyError", busy
                assert busy["message"].startswith("all 1 generation slots of scripted are taken"), busy
                assert _scripted_load(api) == {"limit": 1, "inUse": 1, "waiting": 0}
            holder = _writer_pid(migrated.database_url, answer)
            os.kill(holder, signal.SIGKILL)
        survivor = clients.enter_context(_on_worker(srv.base, second if holder == first else first))
        free = {"limit": 1, "inUse": 0, "waiting": 0}  # the dead worker's slot (dead, or a zombie not yet reaped)
        wait_until(lambda: _scripted_load(survivor) == free, 5, "the killed worker's slot to be free")


def test_a_question_waiting_in_one_worker_gets_the_slot_another_worker_frees(
    tmp_path: Path, migrated: Settings
) -> None:
    short = " ".join(MEDIUM.split()[:120]) + " [1]."  # ~3 s at 25 ms a word
    srv = _capped_workers(tmp_path, migrated.database_url, short, delay_ms=25, queue_timeout=30)
    with srv, ExitStack() as clients:
        one, first, two, _ = _client_per_worker(srv.base, clients)
        _, sid = _session(one)
        with one.websocket() as ws:
            answer, _ = stream_until_tokens(ws, sid, "How do penguins keep warm?", tokens=1)
            # A question to the worker not holding the slot waits in its line, and gets the slot when
            # the holder's answer ends (~3 s): freed in one process, taken by the other's look.
            other = two if _writer_pid(migrated.database_url, answer) == first else one
            waited = other.run(SEND, s=sid, c="And in a blizzard?")["sendMessage"]
        assert waited["__typename"] == "ChatMessage" and waited["status"] == "COMPLETE", waited


def _leave_after_tokens(api: Api, sid: str, question: str, key: str, tokens: int = 3) -> None:
    """Ask with ``key`` and drop the connection (not a graphql-ws complete) after ``tokens`` tokens."""
    with api.websocket() as ws:
        for event in ws.subscribe(CHAT, s=sid, c=question, k=key):
            tokens -= event["data"]["chat"]["__typename"] == "ChatToken"
            if not tokens:
                return
    raise AssertionError("the turn ended before its tokens came")


def test_a_client_that_reconnects_to_another_server_follows_its_turn_there(tmp_path: Path, migrated: Settings) -> None:
    url = migrated.database_url
    # Without a follower, A cancels an orphaned turn after 3 s (the client needs ~1 s to come back
    # through B on an idle machine, more on a loaded one: a shorter grace made the test flaky).
    grace = {"RAGCHAT_CHAT__REATTACH_GRACE": "3"}
    a = scripted_server(tmp_path, "a", url, [MEDIUM, SLOW], delay_ms=25)
    b = scripted_server(tmp_path, "b", url, [CITED], delay_ms=20)
    a.env.update(grace)
    b.env.update(grace)
    api_a, api_b = Api(a.base), Api(b.base)
    with a, b, api_a.http, api_b.http:
        _, sid = _session(api_a)
        question = "How do penguins keep warm?"
        _leave_after_tokens(api_a, sid, question, "turn-1")  # the connection to A is lost...
        with api_b.websocket() as ws:  # ...and the client comes back through B: it gets the answer A wrote
            events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c=question, k="turn-1")]
        assert [e["__typename"] for e in events] == ["ChatDone"], events
        done = events[0]["answer"]  # what A stored (the answer guard's verdict on MEDIUM)
        stored = api_a.run(MESSAGE, id=done["id"])["message"]
        assert done["status"] == stored["status"] == "COMPLETE" and done["content"] == stored["content"], stored

        # A follower that leaves stops holding the turn: A then cancels it, as it would have at once.
        question = "And in a blizzard?"
        _leave_after_tokens(api_a, sid, question, "turn-2")
        with api_b.websocket() as ws:
            ws.ws.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {"query": CHAT, "variables": {"s": sid, "c": question, "k": "turn-2"}},
                    }
                )
            )
            time.sleep(5.0)  # past A's grace: only the follower keeps the turn going
            assert _last(api_a, sid)["status"] == "STREAMING"
        ended = wait_until(lambda: (m := _last(api_a, sid))["status"] != "STREAMING" and m, 20, "A to cancel")
        assert ended["status"] == "FAILED", ended
