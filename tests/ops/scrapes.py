"""Reading what /metrics answered, with prometheus-client's own parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def scrape(base: str, headers: dict[str, str] | None = None) -> list[Sample]:
    response = httpx.get(f"{base}/metrics", headers=headers or {}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return [sample for family in text_string_to_metric_families(response.text) for sample in family.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels`` (0 when none)."""
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def label_values(samples: list[Sample], name: str, label: str) -> set[str]:
    return {s.labels[label] for s in samples if s.name == name and label in s.labels}
