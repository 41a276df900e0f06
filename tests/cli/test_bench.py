"""`ragchat bench retrieval` on a tiny BEIR folder whose right answers are known."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DOCS = {
    "d1": ("Penguins", "Emperor penguins huddle together through the Antarctic winter."),
    "d2": ("Owls", "Barn owls hunt mice at night by sound alone."),
    "d3": ("Tea", "Green tea leaves are steamed or pan fired after picking."),
    "d4": ("Volcanoes", "Basaltic lava flows from shield volcanoes in Hawaii."),
}
QUERIES = {"q1": "how do penguins survive the antarctic winter", "q2": "owls hunting mice at night"}
QRELS = {"q1": "d1", "q2": "d2"}


def _dataset(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, (t, x) in DOCS.items())
    )
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS.items())
    )
    return root


def _bench(dataset: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "bench", "retrieval", "--dataset", str(dataset), "--split", "test", *args],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "BENCH_CACHE": str(dataset.parent / "cache"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_json_reports_trec_metrics_for_each_mode(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "beir")
    single = _bench(dataset, "--mode", "keyword", "--json")
    assert single.returncode == 0, single.stderr
    result = json.loads(single.stdout)
    assert result["ndcg@10"] == 1.0 and result["recall@100"] == 1.0  # each query's document ranks first
    assert (result["docs"], result["queries"]) == (4, 2)
    assert "ingesting corpus" in single.stderr  # progress

    table = _bench(dataset, "--mode", "vector", "--mode", "hybrid")
    assert table.returncode == 0, table.stderr
    assert "nDCG@10" in table.stdout and "vector" in table.stdout and "hybrid" in table.stdout


def test_the_ingested_corpus_is_reused_across_query_time_variants(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "beir")
    first = json.loads(_bench(dataset, "--mode", "hybrid", "--json").stdout)
    assert first["reused_cached_database"] is False and first["ndcg@10"] == 1.0
    (cached,) = (tmp_path / "cache").glob("beir-4-c200-*.db")
    second = _bench(
        dataset, "--mode", "hybrid", "--json", "--rrf-k", "5", "--keyword-weight", "0", "--feedback-docs", "1"
    )
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["reused_cached_database"] is True and again["chunks"] == first["chunks"]
    assert "ingesting corpus" in second.stderr and cached.exists()
    other = json.loads(_bench(dataset, "--mode", "keyword", "--json", "--no-cache").stdout)
    assert other["reused_cached_database"] is False
    assert len(list((tmp_path / "cache").glob("*.db"))) == 1  # --no-cache left the cache alone


def test_each_embedder_precision_has_its_own_cached_corpus(tmp_path: Path) -> None:
    """int8 and fp32 share one vector space but not their vectors: comparing them (issue 16 item 4)
    must not measure the fp32 ingest twice."""
    dataset = _dataset(tmp_path / "beir")
    fp32 = json.loads(_bench(dataset, "--mode", "vector", "--json", env={"RAGCHAT_EMBEDDER__PRECISION": "fp32"}).stdout)
    int8 = _bench(dataset, "--mode", "vector", "--json", env={"RAGCHAT_EMBEDDER__PRECISION": "int8"})
    assert int8.returncode == 0, int8.stderr
    assert fp32["reused_cached_database"] is False and json.loads(int8.stdout)["reused_cached_database"] is False
    assert len(list((tmp_path / "cache").glob("beir-4-c200-*.db"))) == 2
    again = _bench(dataset, "--mode", "vector", "--json", env={"RAGCHAT_EMBEDDER__PRECISION": "int8"})
    assert json.loads(again.stdout)["reused_cached_database"] is True


def test_a_folder_that_is_not_beir_is_refused(tmp_path: Path) -> None:
    refused = _bench(tmp_path)
    assert refused.returncode != 0
    assert "corpus.jsonl is missing" in refused.stderr


def test_modes_are_choices_checked_before_anything_runs(tmp_path: Path) -> None:
    """Both benches take --mode as a typer choice: a wrong one is refused with the choices named."""
    retrieval = _bench(_dataset(tmp_path / "beir"), "--mode", "semantic")
    assert retrieval.returncode == 2 and "'semantic' is not one of 'vector', 'keyword', 'hybrid'" in _said(retrieval)
    answers = subprocess.run(
        [sys.executable, "-m", "app", "bench", "answers", "--mode", "creative", "--limit", "1"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert answers.returncode == 2
    assert "'creative' is not one of 'generative', 'extractive', 'auto'" in _said(answers)


def _said(run: subprocess.CompletedProcess[str]) -> str:
    """The error as one line, without the box and line breaks rich draws around it."""
    return " ".join(run.stderr.replace("│", " ").split())
