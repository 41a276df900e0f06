"""Every benchmark runs on tiny inputs and writes its JSON and PNG. Nothing here is timed: the
benchmarks measure, these tests only check that they still work."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run
from benchmarks.common import Config

NEEDS_LLAMA = {"first_token", "llama_builds", "openai_door"}  # run the local GGUF chat model


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]], dict[str, str]]:
    root = tmp_path_factory.mktemp("bench")
    cfg = replace(Config(tiny=True), out_dir=root / "out", cache_dir=root / "cache")
    results, failures = run.run_all(cfg)
    return cfg.out_dir, results, failures


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.requires_llama) if name in NEEDS_LLAMA else name for name in run.BENCHMARKS],
)
def test_each_benchmark_writes_json_and_a_plot(
    tiny_run: tuple[Path, dict[str, dict[str, Any]], dict[str, str]], name: str
) -> None:
    out, results, failures = tiny_run
    assert name not in failures, failures.get(name)
    payload = json.loads((out / f"{name}.json").read_text())
    assert payload["benchmark"] == name and payload["mode"] == "tiny"
    assert {"nproc", "cpu", "memory_gib", "commit", "date"} <= set(payload["machine"])
    assert (out / f"{name}.png").stat().st_size > 1000
    assert "|" in results[name]["table"]


@pytest.mark.slow
def test_the_report_keeps_the_rest_of_benchmarks_md(
    tiny_run: tuple[Path, dict[str, dict[str, Any]], dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, results, failures = tiny_run
    text = run.report(Config(tiny=True), results, failures, seconds=1.0)
    assert "Summary" in text and "vector retrieve()" in text and "CPUs" in text
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## Retrieval quality\n\nnDCG numbers.\n")
    monkeypatch.setattr(run, "DOC", doc)
    run.update_doc(text)
    run.update_doc(text)  # a second run replaces the block, it does not add another
    written = doc.read_text()
    assert written.startswith("# Benchmarks\n\n## Retrieval quality\n\nnDCG numbers.\n")
    assert written.count(run.START) == 1 and written.count(run.END) == 1
