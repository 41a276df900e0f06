"""The tool-selection benchmark's data and harness (benchmarks/tool_selection.py): enough tools and
held-out requests, and a harness that places each expected tool where the ranking puts it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.settings import Settings
from benchmarks import tool_selection
from tests.fakes import FakeEmbedder

BUILTINS = {"search_knowledge_base", "read_document", "list_documents"}


def test_the_data_has_30_tools_and_60_held_out_requests_each_naming_a_real_tool() -> None:
    definitions, cases = tool_selection.load()
    names = {d["name"] for d in definitions}
    assert len(definitions) >= 30 and len(names) == len(definitions)
    assert len(cases) >= 60
    assert {c.tool for c in cases} <= names | BUILTINS
    assert names <= {c.tool for c in cases}  # every registered tool is asked for
    examples = {e.strip().lower() for d in definitions for e in d["examples"]}
    assert not [c.request for c in cases if c.request.strip().lower() in examples]  # held out


@pytest.mark.sqlite_only(reason="the bench harness builds its own scratch SQLite knowledge base (app/bench/scratch.py)")
def test_the_harness_ranks_through_the_product_and_places_each_expected_tool(tmp_path: Path) -> None:
    definitions, cases = tool_selection.load()
    embedder = FakeEmbedder(dimensions=64)
    # Each tool (its parts) and each request for it share one direction: a perfect embedder.
    directions = {name: i for i, name in enumerate(sorted({d["name"] for d in definitions} | BUILTINS))}
    for d in definitions:
        for part in [f"{d['name']} — {d['description']}", *d["examples"]]:
            embedder.pin(part, np.eye(64)[directions[d["name"]]])
    for case in cases:
        embedder.pin(case.request, np.eye(64)[directions[case.tool]])
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}")
    product, joined, bare = tool_selection.run(settings, embedder)
    assert [r.variant for r in (product, joined, bare)] == list(tool_selection.VARIANTS)
    custom = [i for i, c in enumerate(cases) if c.tool not in BUILTINS]
    assert all(product.ranks[i] == 1 for i in custom)  # the built-ins' texts are not pinned here
    assert product.recall(6) >= len(custom) / len(cases) and len(product.ranks) == len(cases)
    # Folded into one text, the pinned parts are gone: the hash-word fallback ranks instead.
    assert joined.recall(1) < 1.0
