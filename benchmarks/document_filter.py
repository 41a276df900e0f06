"""Document filters: a filtered ``retrieve()`` ÷ the same search unfiltered, same query, same N,
measured back to back (hybrid and vector-only, 50 candidates per ranking, SQLite's in-memory indexes).

The knowledge base's documents (CHUNKS_PER_DOCUMENT chunks each) are tagged: every tenth "narrow"
(10% of the chunks), every other one "half" (50%). A filtered search resolves the filter to chunk
ids (one indexed SQL statement) and scores only those rows, so it should cost no more than the
unfiltered search; the goal is a ratio of at most 1.0 (median of paired rounds). Both searches run
as a chat turn's do: with a result-cache key, new each round (a miss, as for a new question), so
both read the project's revision; the filtered one reads its documents' metadata revision in the same
statement. Query vectors are the corpus's centres with noise (no embedding model needed); the
questions are SciFact claims.

Usage: python -m benchmarks.document_filter [--quick]
"""

from __future__ import annotations

import itertools
import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from app.db.database import Database
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.retrieval import RetrievalParams, retrieve
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import QueryVectorsOnly

NAME = "document_filter"
GOAL = 1.0
K = 50
FILTERS = {"narrow (10%)": DocumentFilter(tags_any=("narrow",)), "half (50%)": DocumentFilter(tags_any=("half",))}
log = logging.getLogger("benchmarks")


def _tag(kb: data.KnowledgeBase) -> None:
    store = Database.from_url(kb.url)
    try:
        with store.write() as db:
            conn = db.connection()
            ids = [int(r[0]) for r in conn.exec_driver_sql("SELECT id FROM documents ORDER BY id").all()]
            rows = [(i, "narrow") for i in ids[::10]] + [(i, "half") for i in ids[::2]]
            conn.exec_driver_sql("INSERT INTO document_tags(document_id, tag) VALUES (?, ?)", rows)
    finally:
        store.dispose()


def _queries(cfg: Config, count: int) -> np.ndarray:
    centres = data.centres(cfg)
    rng = np.random.default_rng(11)
    picked = centres[rng.integers(0, len(centres), count)] + rng.normal(0, 0.02, (count, centres.shape[1]))
    return (picked / np.linalg.norm(picked, axis=1, keepdims=True)).astype(np.float32)


def measure(cfg: Config, n: int, count: int, folder: Path) -> dict[str, Any]:
    kb = data.knowledge_base(cfg, n).copy_to(folder)
    _tag(kb)
    store = Database.from_url(kb.url)
    embedder = QueryVectorsOnly(data.LOCAL_SPACE)
    questions = data.questions(cfg.pick(50, 20, 4))
    vectors = _queries(cfg, len(questions))

    def search(mode: str, only: DocumentFilter | None) -> Callable[[int], float]:
        params = RetrievalParams(mode=mode, top_k=10, threshold=-1.0, candidates=K, document_filter=only)  # type: ignore[arg-type]

        calls = itertools.count()

        def once(r: int) -> float:
            question, vector = questions[r % len(questions)], vectors[r % len(vectors)]
            key = ("document_filter bench", next(calls))  # a miss every time, as a new question's
            return common.timed(
                lambda: retrieve(store, embedder, kb.project_id, question, params, query_vector=vector, cache_key=key)
            )[0]

        return once

    measures = {f"{mode} unfiltered": search(mode, None) for mode in ("vector", "hybrid")}
    for label, only in FILTERS.items():
        for mode in ("vector", "hybrid"):
            measures[f"{mode} {label}"] = search(mode, only)
    try:
        for fn in measures.values():
            fn(0)  # warm: the indexes are in memory before the rounds
        with common.one_blas_thread():
            times = common.rounds(count, measures)
    finally:
        store.dispose()
    ratios = {
        f"{mode} {label}": common.ratio(times[f"{mode} {label}"], times[f"{mode} unfiltered"])
        for label in FILTERS
        for mode in ("vector", "hybrid")
    }
    return {"n": n, "times_ms": {k: common.summary(v) for k, v in times.items()}, "ratios": ratios}


def run(cfg: Config) -> dict[str, Any]:
    n = cfg.pick(100_000, 100_000, 300)
    count = cfg.pick(30, 10, 2)
    folder = Path(tempfile.mkdtemp(prefix="ragchat-filter-bench-"))
    try:
        r = measure(cfg, n, count, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = [
        [
            r["n"],
            name,
            r["times_ms"][name.split(" ")[0] + " unfiltered"]["median"],
            r["times_ms"][name]["median"],
            ratio["median"],
            ratio["p95"],
            common.goal(ratio["median"] <= GOAL),
        ]
        for name, ratio in r["ratios"].items()
    ]
    text = common.table(
        f"Filtered ÷ unfiltered retrieve() (medians of {count} paired rounds, {K} candidates per ranking)",
        ["N", "search (filter keeps)", "unfiltered ms", "filtered ms", "filtered/unfiltered", "p95", f"goal <={GOAL}x"],
        rows,
    )
    return common.write(cfg, NAME, {"k": K, "rounds": count, "result": r, "table": text}, None)


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
