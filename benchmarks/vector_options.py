"""1b. The design options for vector search, measured side by side at one N, each against numpy
brute force in the same rounds (one BLAS thread), with recall@10 against exact search.

- ``ragchat``: what ragchat ships, ``vector_store.knn`` (in-memory float32 index, see
  app/rag/index/vector_index.py), in a read transaction;
- ``vec0 float``: sqlite-vec's float KNN, ``MATCH ? AND k = ?`` (what ragchat used before), and the
  same with ``k`` inside a materialised CTE;
- ``vec0 int8 / bit + rescore``: a quantised vec0 table with the float vector as an auxiliary column,
  KNN with oversampling, then exact float rescoring of the candidates;
- ``numpy bits + rescore``: sign bits in memory (popcount of XOR), then exact rescoring;
- ``memmap``: brute force over a memory-mapped float32 file (page cache warm).

Usage: python -m benchmarks.vector_options [--quick]
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from app.db.database import Database
from app.db.engine import make_engine
from app.rag.index import vector_store
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.vector_search import K, brute_force, exact_top

NAME = "vector_options"
log = logging.getLogger("benchmarks")
Search = Callable[[np.ndarray], list[int]]


def _scratch(cfg: Config, kb: data.KnowledgeBase) -> Path:
    """The quantised vec0 tables, built once per knowledge base (they are not ragchat's)."""
    key = hashlib.sha256(kb.path.name.encode()).hexdigest()[:12]
    path = cfg.cache_dir / f"options-{len(kb.vectors)}-{key}.db"
    if path.is_file():
        return path
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{partial}")
    dims = kb.vectors.shape[1]
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE VIRTUAL TABLE vf USING vec0(embedding float[{dims}])")
        conn.exec_driver_sql(f"CREATE VIRTUAL TABLE vi USING vec0(embedding int8[{dims}], +full blob)")
        conn.exec_driver_sql(f"CREATE VIRTUAL TABLE vb USING vec0(embedding bit[{dims}], +full blob)")
        for start in range(0, len(kb.vectors), 20_000):
            rows = [
                (int(kb.ids[i]), kb.vectors[i].tobytes()) for i in range(start, min(len(kb.vectors), start + 20_000))
            ]
            conn.exec_driver_sql("INSERT INTO vf(rowid, embedding) VALUES (?, ?)", rows)
        for table, quantize in (
            ("vi", "vec_quantize_int8(embedding, 'unit')"),
            ("vb", "vec_quantize_binary(embedding)"),
        ):
            sql = f"INSERT INTO {table}(rowid, embedding, full) SELECT rowid, {quantize}, embedding FROM vf"
            conn.exec_driver_sql(sql)
    engine.dispose()
    partial.rename(path)
    return path


def _options(cfg: Config, kb: data.KnowledgeBase, store: Database, scratch: Any, tmp: Path) -> dict[str, Search]:
    matrix, ids = kb.vectors, kb.ids
    bits = np.packbits(matrix > 0, axis=1)
    mapped_path = tmp / "vectors.npy"
    np.save(mapped_path, matrix)
    mapped = np.load(mapped_path, mmap_mode="r")

    def ragchat(q: np.ndarray) -> list[int]:
        with store.read() as db:
            return [cid for cid, _ in vector_store.knn(db, kb.table, q, K)]

    def sql(query: str, over: int = 1) -> Search:
        def search(q: np.ndarray) -> list[int]:
            rows = scratch.exec_driver_sql(query, (q.tobytes(), K * over)).all()
            if over == 1:
                return [int(r[0]) for r in rows]
            full = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            order = np.argsort(-(full @ q))[:K]
            return [int(rows[i][0]) for i in order]

        return search

    def numpy_bits(over: int) -> Search:
        def search(q: np.ndarray) -> list[int]:
            distance = np.bitwise_count(bits ^ np.packbits(q > 0)).sum(axis=1, dtype=np.int32)
            m = min(K * over, len(distance) - 1)
            pool = np.argpartition(distance, m)[:m]
            order = np.argsort(-(matrix[pool] @ q))[:K]
            return [int(ids[pool[i]]) for i in order]

        return search

    knn = "SELECT rowid, distance FROM vf WHERE embedding MATCH ? AND k = ? ORDER BY distance"
    cte = "WITH m AS MATERIALIZED (SELECT rowid, distance FROM vf WHERE embedding MATCH ? AND k = ?) SELECT * FROM m"
    int8 = "SELECT rowid, full FROM vi WHERE embedding MATCH vec_quantize_int8(?, 'unit') AND k = ?"
    bit = "SELECT rowid, full FROM vb WHERE embedding MATCH vec_quantize_binary(?) AND k = ?"
    options: dict[str, Search] = {
        "numpy brute force": lambda q: [int(ids[i]) for i in brute_force(matrix, q, K)],
        "ragchat (in-memory index)": ragchat,
        "vec0 float": sql(knn),
        "vec0 float, k in CTE": sql(cte),
        "vec0 int8 x4 + rescore": sql(int8, 4),
        "vec0 bit x2 + rescore": sql(bit, 2),
        "vec0 bit x8 + rescore": sql(bit, 8),
        "numpy bits x4 + rescore": numpy_bits(4),
        "numpy bits x10 + rescore": numpy_bits(10),
        "memmap file brute force": lambda q: [int(ids[i]) for i in brute_force(mapped, q, K)],
    }
    if cfg.quick or cfg.tiny:
        for slow in ("vec0 float, k in CTE", "vec0 bit x2 + rescore", "numpy bits x4 + rescore"):
            del options[slow]
    return options


def run(cfg: Config) -> dict[str, Any]:
    import tempfile

    n = cfg.pick(100_000, 20_000, 500)
    count = cfg.pick(15, 8, 2)
    _, vectors = data.query_vectors(cfg, cfg.pick(50, 20, 4))
    kb = data.knowledge_base(cfg, n)
    log.info("vector search options at N=%d", n)
    store = Database.from_url(kb.url)
    engine = make_engine(f"sqlite:///{_scratch(cfg, kb)}")
    try:
        with engine.connect() as scratch, tempfile.TemporaryDirectory() as tmp:
            options = _options(cfg, kb, store, scratch, Path(tmp))
            for search in options.values():
                search(vectors[0])  # warm: the index loads, pages come into the cache
            measures = {
                name: (lambda s: lambda r: common.timed(lambda: s(vectors[r % len(vectors)]))[0])(search)
                for name, search in options.items()
            }
            with common.one_blas_thread():
                times = common.rounds(count, measures)
            truth = [exact_top(kb.vectors, kb.ids, q, 10) for q in vectors]
            recall = {
                name: float(
                    np.mean([len(set(search(q)[:10]) & set(t)) / 10 for q, t in zip(vectors, truth, strict=True)])
                )
                for name, search in options.items()
            }
    finally:
        store.dispose()
        engine.dispose()
    base = times["numpy brute force"]
    results = [
        {
            "option": name,
            "times_ms": common.summary(values),
            "ratio_to_numpy": common.ratio(values, base),
            "recall_at_10": recall[name],
        }
        for name, values in times.items()
    ]
    text = common.table(
        f"Vector search options at N={n} (k={K}, one BLAS thread; medians of {count} paired rounds)",
        ["option", "median ms", "p95 ms", "÷ numpy (median)", "÷ numpy (p95)", "recall@10"],
        [_row(r) for r in results],
    )
    return common.write(cfg, NAME, {"n": n, "k": K, "rounds": count, "options": results, "table": text}, _plot(results))


def _row(r: dict[str, Any]) -> list[object]:
    ratio = r["ratio_to_numpy"]
    return [
        r["option"],
        r["times_ms"]["median"],
        r["times_ms"]["p95"],
        ratio["median"],
        ratio["p95"],
        r["recall_at_10"],
    ]


def _plot(results: list[dict[str, Any]]) -> Any:
    fig, (ax,) = common.figure(1, width=8, height=4.5)
    names = [r["option"] for r in results]
    ax.barh(names, [r["ratio_to_numpy"]["median"] for r in results], color="tab:blue")
    for y, r in enumerate(results):
        ax.annotate(f" recall {r['recall_at_10']:.2f}", (r["ratio_to_numpy"]["median"], y), va="center", fontsize=8)
    ax.axvline(1.3, color="grey", linestyle="--", label="goal 1.3x numpy")
    ax.set(xscale="log", xlabel="time ÷ numpy brute force (median of paired rounds)")
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    fig.suptitle("Vector search design options")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
