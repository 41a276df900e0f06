"""docs/grafana-dashboard.json queries only metrics the server exports (app/ops/metrics.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

from app.ops import metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def test_every_dashboard_query_names_an_exported_metric() -> None:
    assert metrics.OPERATIONS is not None  # the families are registered on import
    exported = {sample.name for family in REGISTRY.collect() for sample in family.samples} | {
        family.name for family in REGISTRY.collect()
    }
    # Histograms export _bucket/_sum/_count, counters _total: a family's name covers its samples.
    families = {family.name for family in REGISTRY.collect() if family.name.startswith("ragchat_")}
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    used = {
        name for panel in panels for target in panel["targets"] for name in re.findall(r"ragchat_\w+", target["expr"])
    }
    assert used
    for name in used:
        base = re.sub(r"_(bucket|sum|count|total)$", "", name)
        assert base in families or name in exported, name
    # And every family is on the dashboard.
    assert families <= {re.sub(r"_(bucket|sum|count|total)$", "", name) for name in used} | {
        "ragchat_index_warmup_seconds"
    }
