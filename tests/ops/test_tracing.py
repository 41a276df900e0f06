"""OpenTelemetry (app/ops/tracing.py): a chat turn's span under its request's, its stages' spans in
the order the stored trace timed them, the trace id in the stored trace and the logs; with an OTLP
endpoint configured, the spans reach a loopback collector."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from app import logs
from app.container import Container
from app.db.models import ChatMessage
from app.ops import tracing
from app.settings import LogSettings
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api
from tests.waiting import wait_until

CREATE = 'mutation { createProject(input: {name: "kb"}) { ... on Project { id } } }'
ADD = """mutation($p: ID!) { addDocument(projectId: $p, name: "penguins.md",
  text: "# Penguins\\n\\nEmperor penguins huddle together to survive the winter.") { ... on UploadReport { added } } }"""
SESSION = """mutation($p: ID!) { createChatSession(projectId: $p,
  input: {provider: "fake", model: "scripted", threshold: 0.1, answerMode: GENERATIVE}) { ... on ChatSession { id } } }"""
ASK = """mutation Ask($s: ID!) { sendMessage(sessionId: $s, content: "How do penguins survive winter?") {
  ... on ChatMessage { id status trace { timings { stage ms } } } } }"""


def _turn(api: Api, model: FakeChatModel) -> dict[str, Any]:
    pid = api.run(CREATE)["createProject"]["id"]
    assert api.run(ADD, p=pid)["addDocument"]["added"] == 1
    sid = api.run(SESSION, p=pid)["createChatSession"]["id"]
    model.enqueue("Penguins huddle [1].")
    answer: dict[str, Any] = api.run(ASK, s=sid)["sendMessage"]
    assert answer["status"] == "COMPLETE", answer
    return answer


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing.configure(processor=SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        tracing.shutdown()


def test_a_turn_yields_its_stage_spans_in_order_under_its_request(
    spans: InMemorySpanExporter,
    fake_container: Container,
    model: FakeChatModel,
) -> None:
    out = io.StringIO()
    handler = logs.build_handler(LogSettings(format="json"), stream=out)  # the server's own JSON lines
    chat_log = logging.getLogger("ragchat.chat")
    chat_log.addHandler(handler)
    level = chat_log.level
    chat_log.setLevel(logging.INFO)
    try:
        with live_api(fake_container) as api:
            answer = _turn(api, model)
    finally:
        chat_log.removeHandler(handler)
        chat_log.setLevel(level)
    finished = spans.get_finished_spans()
    turn = next(span for span in finished if span.name == "chat turn")
    request = next(span for span in finished if span.context.span_id == turn.parent.span_id)
    assert request.name == "POST /graphql" and request.parent is None
    assert turn.attributes["ragchat.outcome"] == "complete" and turn.attributes["ragchat.provider"] == "fake"
    assert turn.attributes["gen_ai.usage.output_tokens"] > 0
    children = [s for s in finished if s.parent is not None and s.parent.span_id == turn.context.span_id]
    stages = sorted((s for s in children if "ragchat.stage" in (s.attributes or {})), key=lambda s: s.end_time)
    # The chat model's call is a span of its own, as OpenTelemetry's GenAI conventions name it.
    (call,) = [s for s in children if s.name == "chat scripted"]
    assert call.attributes["gen_ai.provider.name"] == "fake" and call.attributes["gen_ai.request.model"] == "scripted"
    assert call.attributes["gen_ai.usage.output_tokens"] > 0 and call.attributes["ragchat.first_token_ms"] >= 0
    assert call.kind.name == "CLIENT" and call.status.status_code.name == "UNSET"
    assert len(children) == len(stages) + 1
    timed = [timing["stage"].lower() for timing in answer["trace"]["timings"]]
    assert [span.name for span in stages] == timed
    assert {"retrieval_embed", "first_token", "generate"} <= set(timed)
    assert all(span.context.trace_id == turn.context.trace_id for span in stages)
    trace_id = format(turn.context.trace_id, "032x")
    # The stored retrieval trace and the turn's log line carry the trace id.
    with fake_container.store.read() as db:
        stored = db.execute(select(ChatMessage.trace).where(ChatMessage.id == int(answer["id"]))).scalar_one()
    assert (json.loads(stored) if isinstance(stored, str) else stored)["traceId"] == trace_id
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines and all(line.get("trace_id") == trace_id for line in lines), lines
    # No user text on any span.
    assert "penguins" not in json.dumps([dict(s.attributes or {}) for s in finished]).lower()


def test_without_an_endpoint_nothing_is_traced(fake_container: Container, model: FakeChatModel) -> None:
    assert not tracing.enabled()
    with live_api(fake_container) as api:
        answer = _turn(api, model)
    with fake_container.store.read() as db:
        stored = db.execute(select(ChatMessage.trace).where(ChatMessage.id == int(answer["id"]))).scalar_one()
    assert (json.loads(stored) if isinstance(stored, str) else stored).get("traceId") is None


class _Collector(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        _Collector.received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_with_an_otlp_endpoint_the_spans_reach_the_collector(fake_container: Container, model: FakeChatModel) -> None:
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    _Collector.received.clear()
    try:
        fake_container.settings.ops.otlp_endpoint = f"http://127.0.0.1:{collector.server_port}/v1/traces"
        with live_api(fake_container) as api:
            _turn(api, model)
        # The server's shutdown sent what was buffered.
        names = wait_until(
            lambda: (
                {
                    span.name
                    for request in _Collector.received
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                }
                or None
            ),
            20,
            "spans at the collector",
        )
        assert {"chat turn", "POST /graphql", "retrieval_embed", "generate"} <= names
        assert not tracing.enabled()
    finally:
        collector.shutdown()
        collector.server_close()


UPLOAD = """mutation Upload($p: ID!, $files: [Upload!]!) { uploadDocuments(projectId: $p, files: $files, wait: true) {
  ... on IngestionJob { id finished items { id state } } } }"""


def test_an_ingested_item_has_a_span_with_ids_not_names(spans: InMemorySpanExporter, fake_container: Container) -> None:
    with live_api(fake_container) as api:
        pid = api.run(CREATE)["createProject"]["id"]
        job = api.upload(UPLOAD, {"variables.files.0": ("secret-plans.txt", b"alpha beta gamma")}, {"p": pid})
        job = job["data"]["uploadDocuments"]
    item = next(span for span in spans.get_finished_spans() if span.name == "ingestion item")
    assert item.attributes["ragchat.job_id"] == int(job["id"]) and item.attributes["ragchat.state"] == "ready"
    assert item.attributes["ragchat.chunks"] >= 1
    assert "secret" not in json.dumps(dict(item.attributes or {}))


def test_a_traced_model_can_be_offered_tools_exactly_when_the_model_can(spans: InMemorySpanExporter) -> None:
    from types import SimpleNamespace

    from app.llm.tool_calling import ToolCallingModel
    from app.services.chat.trace import _Traced, _TracedTools

    plain = SimpleNamespace(
        provider="p", model="m", context_window=1, tokenizer=None, stream=None, count_message_tokens=None
    )
    span = tracing.TurnSpan("p", "m")
    assert not isinstance(_Traced(plain, span), ToolCallingModel)  # type: ignore[arg-type]
    assert isinstance(_TracedTools(FakeChatModel(), span), ToolCallingModel)
    assert _Traced(plain, span).model == "m"  # type: ignore[arg-type]
    span.end("complete", None, None, None)
