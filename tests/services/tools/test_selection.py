"""Tool selection by retrieval over a real migrated store: the group filter, top-K by cosine (scores
derived exactly from pinned vectors), the core merge, the minimum score, stored vectors (built on
save, rebuilt when stale or of another space) and degradation when the embedder fails."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from app.container import Container
from app.db.models import ToolVector
from app.errors import ProviderUnavailableError
from app.services.tools import catalog as tools
from app.services.tools.definitions import ToolChanges
from app.services.tools.selection import select_tools
from app.settings import ToolSettings
from tests.fakes import FakeEmbedder

DIMS = 8
MESSAGE = "please refund order 42"
SERVER_TOOLS_ONLY = 0  # a knowledge base id no tool has: only the server's tools are in reach


def axis(*weights: float) -> list[float]:
    return [*weights, *([0.0] * (DIMS - len(weights)))]


def add(container: Container, embedder: FakeEmbedder, name: str, group: str, vector: list[float], **more: object):  # type: ignore[no-untyped-def]
    changes = ToolChanges(
        name=name,
        description=f"the {name} tool",
        input_schema={"type": "object", "properties": {}},
        examples=[f"use {name}"],
        group=group,
        method="GET",
        url_template=f"https://api.example.com/{name}",
        **more,  # type: ignore[arg-type]
    )
    embedder.pin(f"{name} — the {name} tool", vector)  # its parts, embedded one by one and averaged
    embedder.pin(f"use {name}", vector)
    return tools.create(container.store, ToolSettings(), lambda: embedder, changes)


@pytest.fixture
def embedder() -> FakeEmbedder:
    fake = FakeEmbedder(dimensions=DIMS)
    fake.pin(MESSAGE, axis(1.0))
    return fake


@pytest.fixture
def ops(container: Container, embedder: FakeEmbedder) -> Container:
    add(container, embedder, "refund", "ops", axis(1.0))  # cosine 1
    add(container, embedder, "orders", "ops", axis(1.0, 1.0))  # 1/sqrt(2)
    add(container, embedder, "status", "ops", axis(1.0, 3.0))  # 1/sqrt(10)
    add(container, embedder, "weather", "ops", axis(0.0, 1.0), core=True)  # 0, but core
    add(container, embedder, "payroll", "hr", axis(1.0))  # would rank first, but not allowed
    return container


def names(chosen) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(c.tool.name, c.reason.value) for c in chosen]


def test_ranks_allowed_tools_by_cosine_keeps_top_k_and_adds_core(ops: Container, embedder: FakeEmbedder) -> None:
    embedder.calls.clear()
    got = select_tools(ops.store, lambda: embedder, ToolSettings(top_k=2), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert got.groups == ("ops",) and got.degraded is None
    assert [(c.tool.name, round(c.score or 0, 6)) for c in got.candidates] == [
        ("refund", 1.0),
        ("orders", round(1 / math.sqrt(2), 6)),
        ("status", round(1 / math.sqrt(10), 6)),
        ("weather", 0.0),
    ]
    assert names(got.chosen) == [("refund", "ranked"), ("orders", "ranked"), ("weather", "core")]
    # The tool vectors were built when the tools were saved: only the message is embedded now.
    assert embedder.calls == [[MESSAGE]] and got.embedded_tools == 0


def test_a_core_tool_ranked_in_the_top_k_is_offered_once(ops: Container, embedder: FakeEmbedder) -> None:
    got = select_tools(ops.store, lambda: embedder, ToolSettings(top_k=4), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert names(got.chosen) == [
        ("refund", "ranked"),
        ("orders", "ranked"),
        ("status", "ranked"),
        ("weather", "ranked"),
    ]


def test_minimum_score_drops_weak_matches_but_not_core_tools(ops: Container, embedder: FakeEmbedder) -> None:
    got = select_tools(
        ops.store, lambda: embedder, ToolSettings(top_k=6, min_score=0.5), ["ops"], MESSAGE, SERVER_TOOLS_ONLY
    )
    assert names(got.chosen) == [("refund", "ranked"), ("orders", "ranked"), ("weather", "core")]


def test_groups_filter_what_can_be_offered(ops: Container, embedder: FakeEmbedder) -> None:
    got = select_tools(ops.store, lambda: embedder, ToolSettings(), ["hr", "ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert {c.tool.name for c in got.candidates} == {"refund", "orders", "status", "weather", "payroll"}
    embedder.calls.clear()
    none = select_tools(ops.store, lambda: embedder, ToolSettings(), [], MESSAGE, SERVER_TOOLS_ONLY)
    assert none.chosen == () and none.candidates == () and embedder.calls == []  # no groups: no tools, no work


def test_embedder_failure_offers_every_allowed_tool_flagged_and_logged(
    ops: Container, embedder: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    embedder.fail_with = ProviderUnavailableError("embedding server down", provider="fake")
    with caplog.at_level(logging.WARNING, logger="ragchat.tools"):
        got = select_tools(ops.store, lambda: embedder, ToolSettings(top_k=1), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert got.degraded is not None and "ProviderUnavailableError" in got.degraded
    assert sorted(names(got.chosen)) == sorted((n, "all") for n in ("refund", "orders", "status", "weather"))
    assert all(c.score is None for c in got.candidates)
    assert "degraded to all 4 allowed tools" in caplog.text


def test_a_tool_saved_while_the_embedder_failed_gets_its_vector_at_the_next_selection(
    container: Container, embedder: FakeEmbedder
) -> None:
    embedder.fail_with = RuntimeError("model file missing")
    add(container, embedder, "refund", "ops", axis(1.0))
    assert tools.indexed(container.store, [t.id for t in tools.list_tools(container.store, "ops")]) == set()
    embedder.fail_with = None
    got = select_tools(container.store, lambda: embedder, ToolSettings(), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert embedder.calls == [[MESSAGE, "refund — the refund tool", "use refund"]]
    assert got.embedded_tools == 1 and [c.score for c in got.candidates] == [pytest.approx(1.0)]
    embedder.calls.clear()
    select_tools(container.store, lambda: embedder, ToolSettings(), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert embedder.calls == [[MESSAGE]]  # stored now


def test_vectors_of_another_space_or_stale_text_are_rebuilt_never_compared(
    ops: Container, embedder: FakeEmbedder
) -> None:
    other = FakeEmbedder(dimensions=DIMS, model="another-model")
    other.pinned = dict(embedder.pinned)
    got = select_tools(ops.store, lambda: other, ToolSettings(), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert got.embedded_tools == 4
    with ops.store.read() as db:
        spaces = {v.space for v in db.query(ToolVector)}
    assert spaces == {"fake/another-model@8", "fake/hash-words@8"}  # hr's payroll was not touched
    refund = next(t for t in tools.list_tools(ops.store, "ops") if t.name == "refund")
    with ops.store.write() as db:  # text changed behind the service's back: the hash tells
        db.query(ToolVector).filter(ToolVector.tool_id == refund.id).update({"text_hash": "0" * 64})
    other.calls.clear()
    select_tools(ops.store, lambda: other, ToolSettings(), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert other.calls == [[MESSAGE, "refund — the refund tool", "use refund"]]


def test_changing_a_tools_text_rebuilds_its_vector_on_save(ops: Container, embedder: FakeEmbedder) -> None:
    status = next(t for t in tools.list_tools(ops.store, "ops") if t.name == "status")
    embedder.pin("status — refunds for an order", axis(1.0, 0.0))
    embedder.pin("refund an order", axis(1.0, 0.2))
    changes = ToolChanges(description="refunds for an order", examples=["refund an order"])
    tools.update(ops.store, ToolSettings(), lambda: embedder, status.id, changes)
    embedder.calls.clear()
    got = select_tools(ops.store, lambda: embedder, ToolSettings(top_k=2), ["ops"], MESSAGE, SERVER_TOOLS_ONLY)
    assert embedder.calls == [[MESSAGE]]
    assert names(got.chosen)[:2] == [("refund", "ranked"), ("status", "ranked")]
    stored = np.frombuffer(next(v.vector for v in _vectors(ops) if v.tool_id == status.id), dtype=np.float32)
    mean = embedder.pinned["status — refunds for an order"] + embedder.pinned["refund an order"]
    assert stored == pytest.approx(mean / np.linalg.norm(mean))  # the parts' average, normalised


def _vectors(container: Container) -> list[ToolVector]:
    with container.store.read() as db:
        return list(db.query(ToolVector))
