"""2. Hybrid overhead: ``retrieve(mode="hybrid")`` time ÷ ``retrieve(mode="vector")`` time, same
query, same N, measured back to back (SciFact claims as questions, query vectors given).

In the same rounds: hybrid with both rankings in one thread, one after the other (what a busy or
one-core machine gets; retrieval uses two threads where there are two cores); the keyword index's
search alone ÷ a numpy brute-force vector search (one matrix-vector product and argpartition over
the same vectors, one BLAS thread); keyword-only ``retrieve()`` ÷ vector-only; and FTS5's query
(``keyword_fts.search``, what retrieval ran before the in-memory index) for reference. Per N also the
keyword index's load time after a restart (a fresh engine: nothing in memory) and its size, beside
the vector index's; and at the smallest N how often the index's top 50 equals FTS5's for 300
SciFact questions (one project, so the statistics agree).

Usage: python -m benchmarks.hybrid [--quick]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np

from app.db.database import Database
from app.rag.index import keyword_fts, keyword_index, vector_index
from app.rag.search import retrieval
from app.rag.search.retrieval import RetrievalParams, retrieve
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import QueryVectorsOnly

NAME = "hybrid"
GOAL = 1.3
K = 50
AGREEMENT_QUESTIONS = 300
log = logging.getLogger("benchmarks")


def loads(kb: data.KnowledgeBase) -> dict[str, float]:
    """Both indexes loaded from the file by a fresh engine, as after a restart: seconds and bytes."""
    store = Database.from_url(kb.url)
    try:
        with store.read() as db:
            start = time.perf_counter()
            view = keyword_index.view_for(db, kb.project_id)
            keyword_s = time.perf_counter() - start
        with store.read() as db:
            start = time.perf_counter()
            vectors, _ = vector_index.view_for(db, kb.table, int(kb.table.rsplit("_", 1)[1]))
            vector_s = time.perf_counter() - start
        postings = sum(s.postings for s in view.segments)
        return {
            "keyword_load_s": keyword_s,
            "keyword_bytes": view.nbytes,
            "keyword_postings": postings,
            "keyword_mib_per_100k": view.nbytes / max(view.size, 1) * 100_000 / 2**20,
            "vector_load_s": vector_s,
            "vector_mib_per_100k": vectors.matrix.nbytes / max(vectors.size, 1) * 100_000 / 2**20,
        }
    finally:
        store.dispose()


def agreement(kb: data.KnowledgeBase, questions: list[str]) -> dict[str, Any]:
    """The index's top K against FTS5's for each question: identical lists, or the same but for the
    order of equal scores (FTS5 orders ties arbitrarily, the index by chunk id)."""
    store = Database.from_url(kb.url)
    identical = same = 0
    worst = 0.0
    try:
        for question in questions:
            with store.read() as db:
                ours = keyword_index.search(db, kb.project_id, question, K)
                fts5 = keyword_fts.search(db, kb.project_id, question, K)
            identical += ours == fts5 or [c for c, _ in ours] == [c for c, _ in fts5]
            same += _same_up_to_ties(ours, fts5)
            if len(ours) == len(fts5):
                worst = max([worst, *(abs(a - b) for (_, a), (_, b) in zip(ours, fts5, strict=True))])
    finally:
        store.dispose()
    return {"questions": len(questions), "identical": identical, "same_up_to_ties": same, "max_score_diff": worst}


def _same_up_to_ties(ours: list[tuple[int, float]], fts5: list[tuple[int, float]]) -> bool:
    if len(ours) != len(fts5) or any(abs(a - b) > 1e-9 for (_, a), (_, b) in zip(ours, fts5, strict=True)):
        return False
    if not fts5:
        return True
    cut = fts5[-1][1]  # the last group of equal scores may be cut at K differently
    return {c for c, s in ours if abs(s - cut) > 1e-9} == {c for c, s in fts5 if abs(s - cut) > 1e-9}


def measure(cfg: Config, n: int, questions: list[str], vectors: Any, count: int) -> dict[str, Any]:
    kb = data.knowledge_base(cfg, n)
    loaded = loads(kb)
    store = Database.from_url(kb.url)
    embedder = QueryVectorsOnly(data.LOCAL_SPACE)
    matrix = np.ascontiguousarray(kb.vectors, dtype=np.float32)

    def search(mode: str, parallel: bool = True) -> Callable[[int], float]:
        params = RetrievalParams(mode=mode, top_k=10, threshold=-1.0, candidates=K)  # type: ignore[arg-type]

        def once(r: int) -> float:
            question, vector = questions[r % len(questions)], vectors[r % len(vectors)]
            with mock.patch.object(retrieval, "PARALLEL_RANKINGS", parallel):
                return common.timed(
                    lambda: retrieve(store, embedder, kb.project_id, question, params, query_vector=vector)
                )[0]

        return once

    def bare_keyword(r: int) -> float:
        with store.read() as db:
            return common.timed(lambda: keyword_index.search(db, kb.project_id, questions[r % len(questions)], K))[0]

    def fts5(r: int) -> float:
        with store.read() as db:
            return common.timed(lambda: keyword_fts.search(db, kb.project_id, questions[r % len(questions)], K))[0]

    def numpy_vector(r: int) -> float:
        query = np.asarray(vectors[r % len(vectors)], dtype=np.float32)

        def brute() -> np.ndarray:
            scores = matrix @ query
            top = np.argpartition(scores, len(scores) - K)[len(scores) - K :]
            return top[np.argsort(-scores[top])]

        return common.timed(brute)[0]

    try:
        for mode in ("vector", "keyword", "hybrid"):
            search(mode)(0)  # warm: both indexes are in memory before the rounds
        with common.one_blas_thread():
            times = common.rounds(
                count,
                {
                    "vector": search("vector"),
                    "hybrid": search("hybrid"),
                    "hybrid_one_thread": search("hybrid", parallel=False),
                    "keyword": search("keyword"),
                    "keyword_index": bare_keyword,
                    "numpy_vector": numpy_vector,
                    "fts5": fts5,
                },
            )
    finally:
        store.dispose()
    return {
        "n": n,
        **loaded,
        "times_ms": {name: common.summary(values) for name, values in times.items()},
        "ratios": {
            "hybrid/vector": common.ratio(times["hybrid"], times["vector"]),
            "hybrid_one_thread/vector": common.ratio(times["hybrid_one_thread"], times["vector"]),
            "keyword/vector": common.ratio(times["keyword"], times["vector"]),
            "keyword_index/numpy_vector": common.ratio(times["keyword_index"], times["numpy_vector"]),
            "fts5/keyword_index": common.ratio(times["fts5"], times["keyword_index"]),
        },
    }


def run(cfg: Config) -> dict[str, Any]:
    sizes = cfg.pick([10_000, 100_000, 500_000], [10_000, 50_000], [300])
    count = cfg.pick(30, 10, 2)
    questions, vectors = data.query_vectors(cfg, cfg.pick(50, 20, 4))
    agreed = agreement(data.knowledge_base(cfg, sizes[0]), data.questions(cfg.pick(AGREEMENT_QUESTIONS, 100, 4)))
    results = []
    for n in sizes:
        log.info("hybrid vs vector at N=%d", n)
        results.append(measure(cfg, n, questions, vectors, count))
    rows = [
        [
            r["n"],
            r["times_ms"]["vector"]["median"],
            r["times_ms"]["hybrid"]["median"],
            r["ratios"]["hybrid/vector"]["median"],
            r["ratios"]["hybrid/vector"]["p95"],
            r["ratios"]["hybrid_one_thread/vector"]["median"],
            r["times_ms"]["keyword"]["median"],
            r["ratios"]["keyword/vector"]["median"],
            common.goal(r["ratios"]["hybrid/vector"]["median"] <= GOAL),
        ]
        for r in results
    ]
    text = common.table(
        f"Hybrid ÷ vector-only retrieve() (medians of {count} paired rounds, {K} candidates per ranking)",
        [
            "N",
            "vector ms",
            "hybrid ms",
            "hybrid/vector",
            "p95",
            "one thread/vector",
            "keyword ms",
            "keyword/vector",
            f"goal <={GOAL}x",
        ],
        rows,
    )
    text += "\n" + common.table(
        "Keyword index alone ÷ numpy brute-force vector search, and FTS5's query (same rounds)",
        ["N", "keyword index ms", "numpy vector ms", "index/numpy", "FTS5 ms", "FTS5/index"],
        [
            [
                r["n"],
                r["times_ms"]["keyword_index"]["median"],
                r["times_ms"]["numpy_vector"]["median"],
                r["ratios"]["keyword_index/numpy_vector"]["median"],
                r["times_ms"]["fts5"]["median"],
                r["ratios"]["fts5/keyword_index"]["median"],
            ]
            for r in results
        ],
    )
    text += "\n" + common.table(
        "In-memory indexes after a restart (a fresh engine loads them on first use)",
        ["N", "keyword load s", "keyword MiB/100k chunks", "postings", "vector load s", "vector MiB/100k chunks"],
        [
            [
                r["n"],
                r["keyword_load_s"],
                r["keyword_mib_per_100k"],
                r["keyword_postings"],
                r["vector_load_s"],
                r["vector_mib_per_100k"],
            ]
            for r in results
        ],
    )
    text += (
        f"\nKeyword index vs FTS5 at N={sizes[0]:,} ({agreed['questions']} SciFact questions, top {K}): "
        f"{agreed['identical']} identical, {agreed['same_up_to_ties']} the same up to the order of equal scores, "
        f"largest score difference {agreed['max_score_diff']:.1e}.\n"
    )
    payload = {"k": K, "rounds": count, "agreement": agreed, "sizes": results}
    return common.write(cfg, NAME, {**payload, "table": text}, _plot(results))


def _plot(results: list[dict[str, Any]]) -> Any:
    fig, (ax,) = common.figure(1)
    ns = [r["n"] for r in results]
    ax.plot(ns, [r["ratios"]["hybrid/vector"]["median"] for r in results], marker="o", label="hybrid ÷ vector")
    ax.plot(
        ns,
        [r["ratios"]["keyword_index/numpy_vector"]["median"] for r in results],
        marker="o",
        label="keyword index ÷ numpy vector search",
    )
    ax.axhline(GOAL, color="grey", linestyle="--", label=f"goal {GOAL}x")
    ax.set(xscale="log", xlabel="chunks", ylabel="time ratio (median of paired rounds)")
    ax.legend(fontsize=8)
    fig.suptitle("Hybrid retrieval overhead")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
