"""The log an operator reads, through real endpoints: a live server with logging configured as
`ragchat serve` configures it (app/logs.py), and `ragchat serve` itself in a subprocess."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import SecretStr
from websockets.sync.client import connect

from app import logs
from app.container import Container
from app.main import create_app
from app.settings import Settings
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, Ws
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.live import free_port
from tests.reliability.helpers import fake_container
from tests.waiting import wait_until

KEY = "api-key-0123456789abcdef"
OPENAI_KEY = "sk-openai-key-fedcba9876543210"
HEALTH = "query Health { health { ok } }"
# The loggers configure() changes, restored after each test.
TOUCHED = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "httpx", "httpcore", "alembic")


class Log:
    """What the server logged, one formatted line per entry."""

    def __init__(self) -> None:
        self.out = io.StringIO()

    def lines(self) -> list[str]:
        return self.out.getvalue().splitlines()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines()]  # every line is one JSON object

    def summary(self, request_id: str) -> dict[str, Any] | None:
        found = [e for e in self.entries() if e["logger"] == "ragchat.request" and e.get("request_id") == request_id]
        assert len(found) <= 1, found
        return found[0] if found else None

    def wait_summary(self, request_id: str) -> dict[str, Any]:
        return wait_until(lambda: self.summary(request_id), 10, f"the line of request {request_id}")


@contextmanager
def configured(settings: Settings) -> Iterator[Log]:
    root = logging.getLogger()
    saved = root.level, list(root.handlers)
    touched = {name: (lg.level, lg.propagate, list(lg.handlers)) for name in TOUCHED if (lg := logging.getLogger(name))}
    log = Log()
    logs.configure(settings, stream=log.out)
    try:
        yield log
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        for name, (level, propagate, handlers) in touched.items():
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.propagate = propagate
            logger.handlers[:] = handlers


@contextmanager
def serving(container: Container, app: FastAPI | None = None) -> Iterator[str]:
    """The app under uvicorn as `ragchat serve` runs it (its logging options), in a thread."""
    port = free_port()
    config = uvicorn.Config(
        app or create_app(container.settings, container),
        host="127.0.0.1",
        port=port,
        ws="websockets-sansio",
        **logs.uvicorn_options(container.settings),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 20, "the server to start")
    assert thread.is_alive()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def rig(migrated: Settings, model: FakeChatModel) -> Iterator[Container]:
    migrated.api.api_keys = [SecretStr(KEY)]
    migrated.openai.api_key = SecretStr(OPENAI_KEY)
    migrated.log.format = "json"
    built = fake_container(migrated, model)
    yield built
    built.close()


@pytest.fixture
def logged(rig: Container) -> Iterator[tuple[Api, Log]]:
    with configured(rig.settings) as log, serving(rig) as base:
        api = Api(base, {"Authorization": f"Bearer {KEY}"})
        try:
            yield api, log
        finally:
            api.http.close()


def _request(api: Api, query: str, request_id: str, **variables: Any) -> httpx.Response:
    return api.http.post(
        "/graphql", json={"query": query, "variables": variables}, headers={"X-Request-ID": request_id}
    )


def _lines_of(log: Log, since: int, request_id: str) -> list[dict[str, Any]]:
    """The lines logged since entry ``since`` up to this request's summary line (the server is idle
    between the tests' requests, so they are all this request's)."""
    entries = log.entries()[since:]
    end = next(
        i for i, e in enumerate(entries) if e["logger"] == "ragchat.request" and e.get("request_id") == request_id
    )
    return entries[: end + 1]


def test_a_request_gets_one_json_summary_line_with_its_id(logged: tuple[Api, Log]) -> None:
    api, log = logged
    since = len(log.entries())
    response = _request(api, HEALTH, "probe-ok.1")
    assert response.status_code == 200 and response.json()["data"]["health"]["ok"] is True
    assert response.headers["x-request-id"] == "probe-ok.1"  # a sane client id is honoured
    line = log.wait_summary("probe-ok.1")
    assert line["level"] == "INFO"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["ts"])
    assert line | {"duration_ms": 0, "ts": "", "client": ""} == {
        "ts": "",
        "level": "INFO",
        "logger": "ragchat.request",
        "message": line["message"],
        "request_id": "probe-ok.1",
        "method": "POST",
        "path": "/graphql",
        "status": 200,
        "duration_ms": 0,
        "outcome": "ok",
        "client": "",
        "operation_name": "Health",
        "operation_type": "query",
    }
    assert line["duration_ms"] > 0 and line["client"] == "127.0.0.1"
    assert line["message"].startswith("POST /graphql 200 ") and line["message"].endswith(" ms query Health ok")
    assert {e.get("request_id") for e in _lines_of(log, since, "probe-ok.1")} == {"probe-ok.1"}


def test_client_mistakes_are_logged_with_their_outcome_and_no_traceback(logged: tuple[Api, Log]) -> None:
    api, log = logged
    since = len(log.entries())
    # A result union's ValidationError from a service, then one for a malformed id (a top-level
    # error until issue 14 item 3), then a document that does not validate (a GraphQL error).
    union = _request(
        api, "mutation Create($name: String!) { createProject(input: {name: $name}) { __typename } }", "bad-1", name=""
    )
    assert union.json()["data"]["createProject"]["__typename"] == "ValidationError"
    malformed = _request(api, 'query Project { project(id: "x") { __typename } }', "bad-2")
    assert malformed.json() == {"data": {"project": {"__typename": "ValidationError"}}}
    invalid = _request(api, "query Nope { nope }", "bad-3")
    assert invalid.json()["errors"]
    assert log.wait_summary("bad-1")["outcome"] == "ValidationError"
    assert log.wait_summary("bad-2")["outcome"] == "ValidationError"
    assert log.wait_summary("bad-3")["outcome"] == "graphql_errors"
    assert log.summary("bad-1")["operation_name"] == "Create"  # type: ignore[index]
    lines = log.entries()[since:]
    assert {e.get("request_id") for e in lines} == {"bad-1", "bad-2", "bad-3"}
    assert any(e["logger"] == "ragchat.graphql" and "'nope'" in e["message"] for e in lines)
    for entry in lines:
        assert entry["level"] == "INFO" and "exc" not in entry and "Traceback" not in json.dumps(entry), entry


def test_an_unexpected_error_is_logged_once_with_its_traceback_under_the_id_the_client_sees(
    logged: tuple[Api, Log], rig: Container
) -> None:
    api, log = logged
    with rig.store.write() as db:
        db.connection().exec_driver_sql("ALTER TABLE chat_messages RENAME TO chat_messages_gone")  # both backends
    since = len(log.entries())
    body = _request(api, 'query Message { message(id: "1") { __typename } }', "oops-1").json()
    assert body["errors"][0]["message"] == "Unexpected error (request oops-1); it has been logged."
    summary = log.wait_summary("oops-1")
    assert (summary["outcome"], summary["level"]) == ("internal_error", "WARNING")
    lines = _lines_of(log, since, "oops-1")
    assert {e.get("request_id") for e in lines} == {"oops-1"}
    tracebacks = [e for e in lines if "exc" in e]
    assert len(tracebacks) == 1 and tracebacks[0]["level"] == "ERROR"
    assert "chat_messages" in tracebacks[0]["exc"]


def test_an_error_escaping_the_app_is_a_500_carrying_the_id_of_its_logged_traceback(rig: Container) -> None:
    # Every route of ours catches what it expects; this one stands for the bug that was not expected.
    app = create_app(rig.settings, rig)

    @app.get("/healthz/broken")
    def broken() -> None:
        raise RuntimeError("a bug nobody anticipated")

    app.router.routes.insert(0, app.router.routes.pop())  # before the frontend, mounted at /

    with configured(rig.settings) as log, serving(rig, app) as base:
        response = httpx.get(f"{base}/healthz/broken", headers={"X-Request-ID": "bug-7"})
        assert response.status_code == 500
        assert response.headers["x-request-id"] == "bug-7"
        assert response.text == "Internal Server Error (request bug-7)"  # no traceback for the client
        summary = log.wait_summary("bug-7")
        assert (summary["status"], summary["outcome"]) == (500, "internal_error")
        tracebacks = [e for e in log.entries() if "exc" in e]
        assert len(tracebacks) == 1 and tracebacks[0]["request_id"] == "bug-7"
        assert "a bug nobody anticipated" in tracebacks[0]["exc"]
        carries_on = httpx.get(f"{base}/healthz", headers={"Authorization": f"Bearer {KEY}"})
        assert carries_on.status_code == 200  # and the server carries on


def _run(api: Api, log: Log, query: str, request_id: str, **variables: Any) -> dict[str, Any]:
    """Run an operation and wait for its line (logged just after the response is sent)."""
    body = _request(api, query, request_id, **variables).json()
    assert "errors" not in body, body
    log.wait_summary(request_id)
    return body["data"]


def _session(api: Api, log: Log, answer_mode: str) -> str:
    pid = _run(api, log, CREATE_PROJECT, f"{answer_mode}-1", name=f"kb-{answer_mode}")["createProject"]["id"]
    text = "# Penguins\n\nEmperor penguins huddle in the winter."
    _run(api, log, ADD_DOC, f"{answer_mode}-2", p=pid, name="penguins.md", text=text)
    chosen = {"provider": "fake", "model": "scripted", "threshold": 0.1, "answerMode": answer_mode}
    return _run(api, log, CREATE_SESSION, f"{answer_mode}-3", p=pid, input=chosen)["createChatSession"]["id"]


@pytest.mark.parametrize("answer_mode", ["GENERATIVE", "EXTRACTIVE"])
def test_a_chat_turn_is_logged_with_its_ids_and_stage_timings(
    logged: tuple[Api, Log], model: FakeChatModel, answer_mode: str
) -> None:
    api, log = logged
    sid = _session(api, log, answer_mode)
    model.enqueue("Penguins huddle together [1].")
    since = len(log.entries())
    url = api.base.replace("http://", "ws://") + "/graphql"
    headers = {"X-Request-ID": f"ws-{answer_mode}"}
    with connect(url, subprotocols=["graphql-transport-ws"], additional_headers=headers) as socket:  # type: ignore[list-item]
        assert socket.response is not None and socket.response.headers["X-Request-ID"] == f"ws-{answer_mode}"
        ws = Ws(socket, {"authorization": f"Bearer {KEY}"})
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="How do penguins keep warm?")]
    done = events[-1]["answer"]
    assert done["status"] == "COMPLETE"
    connection = log.wait_summary(f"ws-{answer_mode}")
    assert connection | {"duration_ms": 0, "client": "", "ts": "", "message": "", "close_code": 0} == {
        "ts": "",
        "level": "INFO",
        "logger": "ragchat.request",
        "message": "",
        "request_id": f"ws-{answer_mode}",
        "method": "WS",
        "path": "/graphql",
        "status": 101,
        "duration_ms": 0,
        "outcome": "ok",
        "client": "",
        "operation_name": None,  # the CHAT document is anonymous
        "operation_type": "subscription",
        "close_code": 0,
        "operation_count": 1,
    }
    lines = _lines_of(log, since, f"ws-{answer_mode}")
    # Everything the connection caused carries its id, the turn that ran in its own task included.
    assert {e.get("request_id") for e in lines} == {f"ws-{answer_mode}"}
    (operation,) = [e for e in lines if e["logger"] == "ragchat.graphql.operation"]
    assert operation["operation_type"] == "subscription" and operation["outcome"] == "ok"
    (turn,) = [e for e in lines if e["logger"] == "ragchat.chat"]
    assert turn["session_id"] == int(sid) and turn["message_id"] == int(done["id"])
    assert turn["user_message_id"] == int(done["id"]) - 1
    assert turn["outcome"] == "complete" and turn["error"] is None
    assert (turn["provider"], turn["model"]) == ("fake", "scripted")
    assert turn["answer_mode_requested"] == answer_mode.lower() == turn["answer_mode"]
    stages = {t["stage"].lower(): t["ms"] for t in done["trace"]["timings"]}
    assert turn["timings_ms"] == stages  # the same timings the stored trace holds
    assert {"retrieval_embed", "retrieval_vector", "generate" if answer_mode == "GENERATIVE" else "extract"} <= set(
        stages
    )
    assert turn["duration_ms"] >= max(stages.values())
    assert "How do penguins keep warm?" not in log.out.getvalue()  # the question is the user's, not the log's


def test_a_failed_turn_says_why(logged: tuple[Api, Log], model: FakeChatModel) -> None:
    from app.errors import ProviderUnavailableError

    api, log = logged
    sid = _session(api, log, "GENERATIVE")
    model.enqueue(ProviderUnavailableError("the model server is down", provider="fake"))
    with api.websocket({"authorization": f"Bearer {KEY}"}) as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins?")]
    assert events[-1]["__typename"] == "ChatError"
    turn = wait_until(lambda: [e for e in log.entries() if e["logger"] == "ragchat.chat"], 10, "the turn's line")[0]
    assert turn["outcome"] == "failed" and turn["error"] == "provider_unavailable"
    assert "exc" not in turn and turn["level"] == "INFO"


@pytest.mark.parametrize(
    "hostile",
    ["x" * 65, "two words", "<script>alert(1)</script>", "id\u202egnp", "-leading-dash", "a,b", "%0d%0aforged"],
)
def test_a_hostile_request_id_is_replaced(logged: tuple[Api, Log], hostile: str) -> None:
    api, log = logged
    response = api.http.post("/graphql", json={"query": HEALTH}, headers={"X-Request-ID": hostile.encode()})
    made = response.headers["x-request-id"]
    assert made != hostile and re.fullmatch(r"[0-9a-f]{12}", made)
    assert log.wait_summary(made)["outcome"] == "ok"
    assert hostile not in log.out.getvalue() and hostile.encode().decode("latin-1") not in log.out.getvalue()


def test_refusals_are_logged_with_an_id_too(logged: tuple[Api, Log]) -> None:
    api, log = logged
    refused = httpx.post(f"{api.base}/graphql", json={"query": HEALTH}, headers={"X-Request-ID": "nokey-1"})
    assert refused.status_code == 401 and refused.headers["x-request-id"] == "nokey-1"
    line = log.wait_summary("nokey-1")
    assert (line["status"], line["outcome"], "operation_name" in line) == (401, "http_401", False)


def test_secrets_never_reach_the_log(logged: tuple[Api, Log], rig: Container) -> None:
    api, log = logged
    wrong = "Bearer wrong-key-5551212"
    httpx.post(f"{api.base}/graphql", json={"query": HEALTH}, headers={"Authorization": wrong})
    api.http.get("/healthz", params={"api_key": "query-string-secret-77"})
    created = _run(api, log, CREATE_PROJECT, "vars-1", name="variable-content-secret-99")
    assert created["createProject"]["__typename"] == "Project"
    # A secret reaching a logger by mistake is redacted by the handler, whatever the logger.
    logging.getLogger("some.library").warning("retrying with key %s and %s", KEY, OPENAI_KEY)
    text = log.out.getvalue()
    for secret in (KEY, OPENAI_KEY, "wrong-key-5551212", "query-string-secret-77", "variable-content-secret-99"):
        assert secret not in text
    assert "retrying with key [redacted] and [redacted]" in text


def test_text_format_is_one_readable_line_per_record(rig: Container) -> None:
    rig.settings.log.format = "text"
    with configured(rig.settings) as log, serving(rig) as base:
        httpx.post(
            f"{base}/graphql",
            json={"query": HEALTH},
            headers={"Authorization": f"Bearer {KEY}", "X-Request-ID": "text-1"},
        )
        line = wait_until(lambda: [x for x in log.lines() if "[text-1]" in x], 10, "the request's line")[-1]
        logging.getLogger("ragchat.test").info("a client wrote\nFAKE 2025-01-01 ERROR forged")
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} INFO  ragchat\.request \[text-1\] POST /graphql 200 [0-9.]+ ms query Health ok",
        line,
    ), line
    assert not any(x.startswith("FAKE") for x in log.lines())  # control characters are escaped
    assert "a client wrote\\nFAKE" in log.out.getvalue()


def test_log_settings_and_the_deprecated_log_level(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (Settings().log.level, Settings().log.format) == ("info", "text")
    monkeypatch.setenv("RAGCHAT_LOG_LEVEL", "warning")  # the old name still works...
    assert Settings().log.level == "warning"
    monkeypatch.setenv("RAGCHAT_LOG__LEVEL", "debug")  # ...and the new one wins
    monkeypatch.setenv("RAGCHAT_LOG__FORMAT", "json")
    assert (Settings().log.level, Settings().log.format) == ("debug", "json")


def test_ragchat_serve_writes_only_json_lines_and_no_access_log_of_uvicorns(tmp_path: Path, database_url: str) -> None:
    env = {
        **os.environ,
        "RAGCHAT_DATABASE_URL": database_url,
        "RAGCHAT_LOG__FORMAT": "json",
        "RAGCHAT_API__API_KEYS": json.dumps([KEY]),
    }
    subprocess.run([sys.executable, "-m", "app", "migrate"], env=env, check=True, capture_output=True)
    port = free_port()
    errors = tmp_path / "stderr.log"
    with errors.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=sink
        )
    try:

        def answered() -> httpx.Response | None:
            assert proc.poll() is None, errors.read_text()
            try:
                return httpx.post(
                    f"http://127.0.0.1:{port}/graphql?token=in-the-query-string",
                    json={"query": HEALTH},
                    headers={"Authorization": f"Bearer {KEY}", "X-Request-ID": "cli-1"},
                    timeout=2,
                )
            except httpx.TransportError:
                return None

        assert wait_until(answered, 60, "`ragchat serve` to answer", interval=0.2).status_code == 200

        def summary() -> dict[str, Any] | None:
            entries = [json.loads(line) for line in errors.read_text().splitlines()]
            return next((e for e in entries if e.get("request_id") == "cli-1"), None)

        line = wait_until(summary, 10, "the request's line", detail=errors.read_text)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    entries = [json.loads(text) for text in errors.read_text().splitlines()]  # every line is JSON
    assert line["logger"] == "ragchat.request" and line["operation_name"] == "Health"
    messages = [e["message"] for e in entries]
    assert sum("Uvicorn running on" in m for m in messages) == 1  # uvicorn's lines, once, in our format
    assert not any("HTTP/1.1" in m for m in messages)  # no access line of uvicorn's
    assert "in-the-query-string" not in errors.read_text() and KEY not in errors.read_text()


def test_the_default_handler_writes_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Something swaps stderr for a while (pytest's capture, a test server's thread) and closes the
    # stream it lent: the handler must follow the current one, not fail on the closed one.
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    try:
        lent = io.StringIO()
        monkeypatch.setattr(sys, "stderr", lent)
        logs.configure(Settings(), level="WARNING")
        lent.close()
        current = io.StringIO()
        monkeypatch.setattr(sys, "stderr", current)
        logging.getLogger("ragchat.test").warning("still written")
        # (the old failure also reached the current stderr, as logging's "--- Logging error ---" report)
        assert current.getvalue().splitlines()[-1].endswith("WARNING ragchat.test still written")
        assert "Logging error" not in current.getvalue()
    finally:
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
        root.handlers[:] = before
        root.setLevel(level)
