"""/metrics (app/ops/metrics.py): each family after a chat turn, an upload and errors, with bounded
labels; who may read it; and one scrape covering two worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api
from tests.ops.scrapes import label_values, scrape, value
from tests.reliability.helpers import CITED, scripted_server

PENGUINS = "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter."
CREATE = """mutation CreateKb($name: String!) { createProject(input: {name: $name}) {
  __typename ... on Project { id } ... on ValidationError { message } } }"""
ADD = """mutation AddNotes($p: ID!, $text: String!) { addDocument(projectId: $p, name: "penguins.md", text: $text) {
  ... on UploadReport { added } } }"""
UPLOAD = """mutation UploadFiles($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files, wait: true) {
  __typename ... on IngestionJob { finished } } }"""
SESSION = """mutation OpenChat($p: ID!) { createChatSession(projectId: $p,
  input: {provider: "fake", model: "scripted", threshold: 0.1, answerMode: GENERATIVE}) { ... on ChatSession { id } } }"""
SEND = """mutation Ask($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  __typename ... on ChatMessage { status } } }"""


def _turn(api: Api) -> None:
    pid = api.run(CREATE, name="kb")["createProject"]["id"]
    assert api.run(ADD, p=pid, text=PENGUINS)["addDocument"]["added"] == 1
    report = api.upload(UPLOAD, {"variables.files.0": ("a.txt", b"alpha beta gamma")}, {"p": pid})
    assert report["data"]["uploadDocuments"]["finished"] is True
    sid = api.run(SESSION, p=pid)["createChatSession"]["id"]
    assert api.run(SEND, s=sid, c="How do penguins survive winter?")["sendMessage"]["status"] == "COMPLETE"


def test_a_scrape_after_a_turn_an_upload_and_errors_has_every_family(
    api: Api, model: FakeChatModel, backend: str
) -> None:
    model.enqueue("Penguins huddle [1].")
    _turn(api)
    # Errors: a result union's error member, a field that does not exist, a document that does not parse.
    assert api.run(CREATE, name="")["createProject"]["__typename"] == "ValidationError"
    assert api.raw("query Broken { noSuchField }").json()["errors"]
    assert api.raw("query Unfinished {").json()["errors"]
    samples = scrape(api.base)

    ops = "ragchat_graphql_operations_total"
    assert value(samples, ops, operation="Ask", type="mutation", outcome="ok") >= 1
    assert value(samples, ops, operation="UploadFiles", type="mutation", outcome="ok") >= 1
    assert value(samples, ops, operation="CreateKb", outcome="ValidationError") >= 1
    assert value(samples, ops, operation="Broken", outcome="graphql_errors") >= 1
    # Not parsed: the client's name is not a label.
    assert "Unfinished" not in label_values(samples, ops, "operation")
    assert value(samples, ops, operation="other", type="other") >= 1
    assert value(samples, "ragchat_graphql_operation_seconds_count", operation="Ask", type="mutation") >= 1

    assert value(samples, "ragchat_chat_turns_total", mode="generative", provider="fake", outcome="complete") >= 1
    stages = label_values(samples, "ragchat_chat_stage_seconds_count", "stage")
    assert {"retrieval_embed", "retrieval_vector", "budget", "first_token", "generate", "citations"} <= stages
    assert value(samples, "ragchat_chat_first_token_seconds_count", provider="fake") >= 1
    assert value(samples, "ragchat_chat_tokens_total", provider="fake", direction="in") > 0
    assert value(samples, "ragchat_chat_tokens_total", provider="fake", direction="out") > 0
    assert value(samples, "ragchat_generation_slots_in_use", pool="fake") == 0  # taken, then given back
    assert "ragchat_generation_slots_waiting" in {s.name for s in samples}

    assert value(samples, "ragchat_ingestion_items", state="ready") >= 1
    assert value(samples, "ragchat_ingestion_queue_depth") == 0
    assert value(samples, "ragchat_ingestion_finished_items_total", state="ready") >= 1
    assert value(samples, "ragchat_ingestion_chunks_total") >= 1
    assert "ragchat_db_connections_in_use" in {s.name for s in samples}
    if backend == "sqlite":  # PostgreSQL's vectors stay in pgvector
        assert value(samples, "ragchat_index_spaces_loaded") == 1 and value(samples, "ragchat_index_vectors") == 2
    # No user text in any label: not the question, not the document's name or text.
    text = " ".join(str(s.labels) for s in samples)
    assert "penguins" not in text.lower() and "a.txt" not in text


def test_operation_names_past_the_cap_are_other(api: Api) -> None:
    from app.ops import metrics

    ops = "ragchat_graphql_operations_total"
    others = value(scrape(api.base), ops, operation="other")
    for number in range(metrics.MAX_OPERATIONS + 5):
        assert api.raw(f"query Invented{number} {{ __typename }}").status_code == 200
    samples = scrape(api.base)
    invented = {label for label in label_values(samples, ops, "operation") if label.startswith("Invented")}
    assert len(invented) == metrics.MAX_OPERATIONS  # the cap (the scrapes are not operations)
    assert value(samples, ops, operation="other") == others + 5


def test_metrics_need_full_rights_or_an_allowed_address(fake_container: Container) -> None:
    fake_container.settings.api.api_keys = [SecretStr("server-key")]
    with live_api(fake_container) as api:
        assert httpx.get(f"{api.base}/metrics").status_code == 401
        assert httpx.get(f"{api.base}/metrics", headers={"authorization": "Bearer wrong"}).status_code == 401
        scrape(api.base, {"authorization": "Bearer server-key"})
    fake_container.settings.ops.metrics_allow = ["127.0.0.0/8"]
    with live_api(fake_container) as api:
        scrape(api.base)  # loopback is allow-listed: no key needed
    fake_container.settings.ops.metrics_allow = ["10.0.0.0/8"]
    with live_api(fake_container) as api:
        assert httpx.get(f"{api.base}/metrics").status_code == 401


@pytest.mark.postgres
def test_one_scrape_covers_two_workers(tmp_path: Path, migrated: Settings) -> None:
    srv = scripted_server(tmp_path, "w", migrated.database_url, [CITED] * 4, delay_ms=1)
    srv.env["RAGCHAT_WORKERS"] = "2"
    with srv:
        pids: set[int] = set()
        sent = 0
        for _ in range(200):  # new connections until both workers answered one (the kernel spreads them)
            with httpx.Client(base_url=srv.base, timeout=30) as client:
                pids.add(int(client.get("/healthz").json()["pid"]))
                assert client.post("/graphql", json={"query": "query Probe { __typename }"}).status_code == 200
                sent += 1
            if len(pids) == 2 and sent >= 4:
                break
        assert len(pids) == 2
        # Every probe counted, whichever worker ran it and whichever worker answers the scrape.
        for _ in range(4):
            assert value(scrape(srv.base), "ragchat_graphql_operations_total", operation="Probe") == sent


def _python(folder: Path, code: str) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_killed_workers_slots_stop_counting_when_a_worker_starts(tmp_path: Path) -> None:
    # A worker holding two slots dies without a word (os._exit, as under SIGKILL): its file stays.
    _python(tmp_path, "import os; from app.ops import metrics; metrics.slots('fake', 2, 1); os._exit(0)")
    read = "from app.ops import metrics; print(metrics.exposition()[0].decode())"
    before = _python(tmp_path, read)
    assert 'ragchat_generation_slots_in_use{pool="fake"} 2.0' in before
    after = _python(tmp_path, "from app.ops import metrics; metrics.forget_dead_workers(); " + read.split("; ", 1)[1])
    assert 'ragchat_generation_slots_in_use{pool="fake"}' not in after
