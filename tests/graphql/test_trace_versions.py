"""Stored traces are read through one validated model: an old version-1 trace (before answer modes)
still reads, and a corrupt or unknown-version one costs only the message's trace, never the query."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.container import Container
from app.db.models import ChatMessage
from app.services.chat import trace_model
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT

SESSION = """mutation($p: ID!) { createChatSession(projectId: $p, input: {provider: "fake", model: "scripted"}) {
  ... on ChatSession { id } } }"""
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { ... on ChatMessage { id } } }"""
MESSAGE = """query($id: ID!) { message(id: $id) { __typename ... on ChatMessage { content noContext
  degraded { reason message }
  usage { prompt completion context }
  trace { query provider model effectiveMode fusion embeddingSpace noContext degraded { reason message }
    settings { enableRag topK threshold includeCitations mode }
    candidates { chunkId documentId documentName score vectorRank keywordRank fusedRank fusedScore fate
      location { charStart charEnd lineStart lineEnd page headingPath } }
    timings { stage ms }
    tokens { prompt context completion answerReserve contextWindow tokenizer exact }
    budget { chunksOverBudget historyDropped }
    citations { validRemoved: invalidRemoved valid attributed }
    answer { mode } } } } }"""

# The shape the first trace version stored (app/services/chat/trace.py at 0c4b6ba): no `answer`.
VERSION_1: dict[str, Any] = {
    "version": 1,
    "query": "Where do penguins breed?",
    "provider": "fake",
    "model": "scripted",
    "settings": {"enableRag": True, "topK": 5, "threshold": 0.3, "includeCitations": True, "mode": "hybrid"},
    "noContext": False,
    "historyTurns": 0,
    "embeddingSpace": "fake/hash-words@64",
    "effectiveMode": "hybrid",
    "tokens": {
        "prompt": 120,
        "context": 40,
        "completion": 9,
        "answerReserve": 512,
        "contextWindow": 4096,
        "tokenizer": "estimate",
        "exact": False,
    },
    "budget": {"chunksOverBudget": [], "historyDropped": 0},
    "sourceChunkIds": [3],
    "citations": {"valid": 1, "invalidRemoved": 0, "attributed": True},
    "degraded": [],
    "timingsMs": {"retrieval_embed": 1.5, "generate": 20.25},
    "candidates": [
        {
            "chunkId": 3,
            "documentId": 1,
            "documentName": "penguins.md",
            "score": 0.61,
            "vectorRank": 1,
            "keywordRank": None,
            "fusedRank": 1,
            "fusedScore": 0.016,
            "fate": "kept",
            "location": {
                "char_start": 0,
                "char_end": 60,
                "line_start": 1,
                "line_end": 3,
                "page": None,
                "heading_path": "Penguins",
            },
        }
    ],
}


def _message(api: Api) -> str:
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins breed on the sea ice.")
    sid = api.run(SESSION, p=pid)["createChatSession"]["id"]
    return str(api.run(SEND, s=sid, c="Where do penguins breed?")["sendMessage"]["id"])


def test_a_new_turn_records_how_its_hybrid_search_fused(api: Api) -> None:
    trace = api.run(MESSAGE, id=_message(api))["message"]["trace"]
    assert trace["effectiveMode"] == "HYBRID" and trace["fusion"] == "CONVEX"


def _store(container: Container, message_id: str, trace: object) -> None:
    with container.store.write() as db:
        row = db.get(ChatMessage, int(message_id))
        assert row is not None and row.role == "assistant"
        row.trace = trace  # type: ignore[assignment]  # a corrupt row may hold anything JSON


def test_an_old_version_1_trace_without_answer_still_reads(api: Api, fake_container: Container) -> None:
    mid = _message(api)
    _store(fake_container, mid, VERSION_1)
    got = api.run(MESSAGE, id=mid)["message"]
    trace = got["trace"]
    assert trace["answer"] is None and trace["effectiveMode"] == "HYBRID"
    assert trace["fusion"] is None  # recorded only since convex fusion
    assert trace["settings"] == {
        "enableRag": True,
        "topK": 5,
        "threshold": 0.3,
        "includeCitations": True,
        "mode": "HYBRID",
    }
    assert trace["candidates"][0]["location"]["headingPath"] == "Penguins"
    assert trace["candidates"][0]["fate"] == "KEPT" and trace["candidates"][0]["chunkId"] == "3"
    assert trace["timings"] == [{"stage": "RETRIEVAL_EMBED", "ms": 1.5}, {"stage": "GENERATE", "ms": 20.25}]
    assert trace["tokens"]["contextWindow"] == 4096 and trace["citations"]["validRemoved"] == 0
    assert got["usage"] == {"prompt": 120, "completion": 9, "context": 40}
    parsed = trace_model.parse(VERSION_1)
    assert parsed is not None and parsed.answer is None and parsed.source_chunk_ids == [3]


# How each producer worded its degradation before they had reasons (app/rag/search/retrieval.py and
# app/services/chat/service.py at 1bba690): stored as the message alone.
LEGACY_DEGRADED = [
    ("vector search failed (no such table: vec_space_1); used keyword search only", "VECTOR_SEARCH_FAILED"),
    ("could not read stored vectors to score candidates (disk I/O error)", "SCORES_UNAVAILABLE"),
    ("no context: the embedding server is unreachable", "RETRIEVAL_FAILED"),
]


def test_degradations_stored_as_bare_messages_read_with_their_reason(api: Api, fake_container: Container) -> None:
    mid = _message(api)
    _store(fake_container, mid, {**VERSION_1, "degraded": [message for message, _ in LEGACY_DEGRADED]})
    got = api.run(MESSAGE, id=mid)["message"]
    expected = [{"reason": reason, "message": message} for message, reason in LEGACY_DEGRADED]
    assert got["degraded"] == got["trace"]["degraded"] == expected


def test_a_degradation_is_stored_with_its_reason_and_reads_back_the_same() -> None:
    parsed = trace_model.parse(
        {**VERSION_1, "degraded": [{"reason": "scores_unavailable", "message": "could not read stored vectors"}]}
    )
    assert parsed is not None
    assert parsed.stored()["degraded"] == [{"reason": "scores_unavailable", "message": "could not read stored vectors"}]
    assert trace_model.parse(parsed.stored()) == parsed


@pytest.mark.parametrize(
    "stored",
    [
        {key: value for key, value in VERSION_1.items() if key != "settings"},
        {**VERSION_1, "candidates": [{**VERSION_1["candidates"][0], "fate": "misplaced"}]},
        {**VERSION_1, "degraded": ["the moon was in the wrong phase"]},
        {**VERSION_1, "timingsMs": {"teleport": 1.0}},
        {**VERSION_1, "version": 99},
        {**VERSION_1, "version": "1"},
        ["not", "a", "trace"],
    ],
    ids=[
        "missing-settings",
        "unknown-fate",
        "unknown-degradation",
        "unknown-stage",
        "future-version",
        "string-version",
        "not-an-object",
    ],
)
def test_a_corrupt_or_unknown_trace_reads_as_null_and_is_logged(
    api: Api, fake_container: Container, stored: object, caplog: pytest.LogCaptureFixture
) -> None:
    mid = _message(api)
    _store(fake_container, mid, stored)
    with caplog.at_level(logging.WARNING, logger="app.services.chat.trace_model"):
        body = api.raw(MESSAGE, {"id": mid}).json()
    assert "errors" not in body, body
    got = body["data"]["message"]
    assert got["__typename"] == "ChatMessage" and got["content"]
    assert (got["trace"], got["usage"], got["noContext"], got["degraded"]) == (None, None, False, [])
    assert any("stored trace ignored" in r.getMessage() for r in caplog.records)


def test_a_fresh_trace_round_trips_through_the_model(api: Api, fake_container: Container) -> None:
    mid = _message(api)
    with fake_container.store.read() as db:
        row = db.get(ChatMessage, int(mid))
        assert row is not None
        raw = row.trace
    trace = trace_model.parse(raw)
    assert trace is not None and trace.version == trace_model.TRACE_VERSION and trace.answer is not None
    assert trace.stored() == raw
