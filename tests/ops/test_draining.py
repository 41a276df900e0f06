"""Graceful shutdown (app/ops/draining.py): on SIGTERM a ``ragchat serve`` process takes no new turn,
lets the answer it is streaming finish and says so in its log, then stops; an answer that outlasts
``RAGCHAT_OPS__SHUTDOWN_GRACE`` is cut off, and the log says that too."""

from __future__ import annotations

import itertools
import signal
from pathlib import Path

from app.settings import Settings
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION
from tests.reliability.helpers import SLOW, SYLLABLES, scripted_server
from tests.reliability.test_two_servers import stream_until_tokens
from tests.waiting import wait_until

# 80 distinct words (no loop for the answer guard): about 2.4 s at 30 ms a word.
SHORT = "Emperor penguins huddle " + " ".join(
    "".join(w) for w in itertools.islice(itertools.product(SYLLABLES, repeat=3), 80)
)
SCRIPTED = {"provider": "scripted", "model": "scripted", "threshold": 0.1, "answerMode": "GENERATIVE"}
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  __typename ... on ChatMessage { status } ... on Error { message } } }"""


def _session(api: Api) -> str:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in winter.")
    return str(api.run(CREATE_SESSION, p=pid, input=SCRIPTED)["createChatSession"]["id"])


def test_a_stopping_server_finishes_its_streaming_answer_and_refuses_new_turns(
    tmp_path: Path, migrated: Settings
) -> None:
    srv = scripted_server(tmp_path, "s", migrated.database_url, [SHORT, SHORT], delay_ms=30)
    srv.env["RAGCHAT_LOG__LEVEL"] = "info"
    api = Api(srv.base)
    with srv, api.http:  # the client's connections closed with the block
        sid = _session(api)
        with api.websocket() as ws:
            _, stream = stream_until_tokens(ws, sid, "How do penguins keep warm?", tokens=3)
            assert srv.proc is not None
            srv.proc.send_signal(signal.SIGTERM)
            wait_until(lambda: "no new chat turns" in srv.log_text(), 20, "the drain's first line")
            refused = api.run(SEND, s=sid, c="And in a blizzard?")["sendMessage"]
            assert refused["__typename"] == "BusyError" and "stopping" in refused["message"], refused
            events = [event["data"]["chat"] for event in stream]
        done = events[-1]
        assert done["__typename"] == "ChatDone" and done["answer"]["status"] == "COMPLETE", done
        assert sum(event["__typename"] == "ChatToken" for event in events) > 3  # streamed on after the signal
        assert srv.proc.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    log = srv.log_text()
    assert "waiting up to 30 s for 1 streaming answer to finish" in log
    assert "every streaming answer finished" in log


def test_an_answer_outlasting_the_grace_is_cut_off_and_the_log_says_so(tmp_path: Path, migrated: Settings) -> None:
    srv = scripted_server(tmp_path, "s", migrated.database_url, [SLOW], delay_ms=30)
    srv.env.update({"RAGCHAT_LOG__LEVEL": "info", "RAGCHAT_OPS__SHUTDOWN_GRACE": "0.5"})
    api = Api(srv.base)
    with srv, api.http:  # the client's connections closed with the block
        sid = _session(api)
        with api.websocket() as ws:
            stream_until_tokens(ws, sid, "How do penguins keep warm?", tokens=3)
            assert srv.proc is not None
            srv.proc.send_signal(signal.SIGTERM)
            assert srv.proc.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert "1 answer still streaming after 0.5 s are cut off" in srv.log_text()
