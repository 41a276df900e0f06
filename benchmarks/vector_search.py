"""1. Vector retrieval vs N: ragchat's retrieval call against numpy brute force and the
memory-bandwidth floor, with recall@10 against exact search.

Per round, one query, measured back to back (order rotating), all with BLAS limited to one thread
(threadpoolctl) so no side gets more cores than the other:

- ``retrieve``: ``retrieve(mode="vector")``, the call the chat engine makes (query vector given):
  KNN, exact scores, the chunks' rows from SQLite, ranking;
- ``knn``: the vector seam alone, ``vector_store.knn`` in a fresh read transaction;
- ``numpy``: brute force over the same float32 matrix, ``X @ q`` then ``argpartition``;
- ``floor``: one pass over the same bytes (``X.sum()``), what any exact scan costs at least;
- ``vec0``: sqlite-vec's float KNN over the same table, which ragchat used before (for reference).

Usage: python -m benchmarks.vector_search [--quick]
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from app.db.database import Database
from app.rag.index import spaces, vector_index, vector_store
from app.rag.search.retrieval import RetrievalParams, retrieve
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import QueryVectorsOnly

NAME = "vector_search"
K = 50  # candidates per search (RetrievalParams' default)
GOAL = 1.3
log = logging.getLogger("benchmarks")


def brute_force(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
    return top[np.argsort(-scores[top])]


def exact_top(matrix: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """The true top ``k`` (float64 scores over a float32 prefilter of 4k: ties beyond that cannot matter)."""
    pool = brute_force(matrix, query, min(len(matrix), 4 * k))
    exact = matrix[pool].astype(np.float64) @ query.astype(np.float64)
    return [int(i) for i in ids[pool[np.lexsort((ids[pool], -exact))][:k]]]


def measure(cfg: Config, n: int, queries: list[str], vectors: np.ndarray, count: int) -> dict[str, Any]:
    kb = data.knowledge_base(cfg, n)
    store = Database.from_url(kb.url)
    try:
        return _measure(kb, store, queries, vectors, count)
    finally:
        store.dispose()


def _measure(
    kb: data.KnowledgeBase, store: Database, queries: list[str], vectors: np.ndarray, count: int
) -> dict[str, Any]:
    embedder = QueryVectorsOnly(data.LOCAL_SPACE)
    params = RetrievalParams(mode="vector", top_k=10, threshold=-1.0, candidates=K)
    matrix = kb.vectors

    def search(r: int) -> Any:
        return retrieve(
            store, embedder, kb.project_id, queries[r % len(queries)], params, query_vector=vectors[r % len(vectors)]
        )

    load_seconds, _ = common.timed(lambda: search(0))  # the first search loads the index
    with store.read() as db:
        index_bytes = vector_index.view_for(db, kb.table, spaces.space_row_id(kb.table))[0].matrix.nbytes

    def knn(r: int) -> Any:
        with store.read() as db:
            return vector_store.knn(db, kb.table, vectors[r % len(vectors)], K)

    def vec0(r: int) -> Any:
        blob = vectors[r % len(vectors)].tobytes()
        with store.read() as db:
            sql = f"SELECT rowid, distance FROM {kb.table} WHERE embedding MATCH ? AND k = ? ORDER BY distance"
            return db.connection().exec_driver_sql(sql, (blob, K)).all()

    def clocked(fn: Callable[[int], Any]) -> Callable[[int], float]:
        return lambda r: common.timed(lambda: fn(r))[0]

    measures = {
        "retrieve": clocked(search),
        "knn": clocked(knn),
        "numpy": clocked(lambda r: brute_force(matrix, vectors[r % len(vectors)], K)),
        "floor": clocked(lambda r: matrix.sum()),
        "vec0": clocked(vec0),
    }
    with common.one_blas_thread():
        times = common.rounds(count, measures)
    recall = []
    for r in range(len(vectors)):
        found = [c.chunk_id for c in search(r).candidates[:10]]
        recall.append(len(set(found) & set(exact_top(matrix, kb.ids, vectors[r], 10))) / 10)
    return {
        "n": len(matrix),
        "times_ms": {name: common.summary(values) for name, values in times.items()},
        "ratios": {
            "retrieve/numpy": common.ratio(times["retrieve"], times["numpy"]),
            "knn/numpy": common.ratio(times["knn"], times["numpy"]),
            "numpy/floor": common.ratio(times["numpy"], times["floor"]),
            "retrieve/floor": common.ratio(times["retrieve"], times["floor"]),
            "vec0/numpy": common.ratio(times["vec0"], times["numpy"]),
        },
        "recall_at_10": float(np.mean(recall)),
        "index_load_s": load_seconds,
        "index_mib": index_bytes / 2**20,
        "db_mib": kb.path.stat().st_size / 2**20,
    }


def run(cfg: Config) -> dict[str, Any]:
    sizes = cfg.pick([10_000, 100_000, 500_000], [10_000, 50_000], [300, 600])
    queries, vectors = data.query_vectors(cfg, cfg.pick(50, 20, 4))
    count = cfg.pick(30, 12, 3)
    results = []
    for n in sizes:
        log.info("vector search at N=%d", n)
        results.append(measure(cfg, n, queries, vectors, count))
    rows = [
        [
            r["n"],
            r["times_ms"]["retrieve"]["median"],
            r["times_ms"]["knn"]["median"],
            r["times_ms"]["numpy"]["median"],
            r["times_ms"]["floor"]["median"],
            r["times_ms"]["vec0"]["median"],
            r["ratios"]["retrieve/numpy"]["median"],
            r["ratios"]["retrieve/numpy"]["p95"],
            r["ratios"]["knn/numpy"]["median"],
            r["ratios"]["numpy/floor"]["median"],
            r["ratios"]["vec0/numpy"]["median"],
            r["recall_at_10"],
            common.goal(r["ratios"]["retrieve/numpy"]["median"] <= GOAL and r["recall_at_10"] >= 0.99),
        ]
        for r in results
    ]
    header = [
        "N",
        "retrieve ms",
        "knn ms",
        "numpy ms",
        "floor ms",
        "vec0 ms",
        "retrieve/numpy",
        "p95",
        "knn/numpy",
        "numpy/floor",
        "vec0/numpy",
        "recall@10",
        f"goal <={GOAL}x, >=0.99",
    ]
    text = common.table(
        f"Vector retrieval vs N (one BLAS thread; medians of {count} paired rounds)", header, rows
    ) + common.table(
        "Index (first search after start)",
        ["N", "index load s", "index MiB", "database MiB"],
        [[r["n"], r["index_load_s"], r["index_mib"], r["db_mib"]] for r in results],
    )
    return common.write(cfg, NAME, {"k": K, "rounds": count, "sizes": results, "table": text}, _plot(results))


def _plot(results: list[dict[str, Any]]) -> Any:
    fig, (left, right) = common.figure(2)
    ns = [r["n"] for r in results]
    for key, label in (
        ("retrieve", "ragchat retrieve()"),
        ("numpy", "numpy brute force"),
        ("floor", "bandwidth floor (X.sum)"),
        ("vec0", "sqlite-vec vec0 KNN"),
    ):
        left.plot(ns, [r["times_ms"][key]["median"] for r in results], marker="o", label=label)
    left.set(xscale="log", yscale="log", xlabel="chunks (384-d)", ylabel="ms per search (median)")
    left.legend(fontsize=8)
    for key in ("retrieve/numpy", "knn/numpy", "vec0/numpy"):
        right.plot(ns, [r["ratios"][key]["median"] for r in results], marker="o", label=key)
    right.axhline(GOAL, color="grey", linestyle="--", label=f"goal {GOAL}x")
    right.set(xscale="log", yscale="log", xlabel="chunks", ylabel="time ratio (median of paired rounds)")
    right.legend(fontsize=8)
    fig.suptitle("Vector retrieval vs N")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
