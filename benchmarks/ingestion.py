"""3. Ingestion: chunks per second end to end (``Ingestor`` with the local embedder: read, parse,
chunk, embed, write) ÷ the raw embedder's throughput on the very same chunk texts, back to back in
rounds; and the database size per 100k chunks.

Size: measured on the benchmark knowledge bases (SciFact chunk texts, vectors, FTS5 index and the
vector journal, all through the real tables) at the sizes available, scaled to 100k chunks.

Usage: python -m benchmarks.ingestion [--quick]
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from app.db import migrate
from app.db.database import Database
from app.rag.ingest.pipeline import Ingestor, Source
from app.services import projects
from app.settings import IngestSettings
from benchmarks import common, data
from benchmarks.common import Config

NAME = "ingestion"
GOAL = 0.9
log = logging.getLogger("benchmarks")


def _fresh(folder: Path, name: str) -> tuple[Database, int]:
    url = f"sqlite:///{folder / name}"
    migrate.upgrade(url)
    store = Database.from_url(url)
    return store, projects.create(store, "bench").id


def run(cfg: Config) -> dict[str, Any]:
    from app.llm.embedders.local import LocalEmbedder

    files = data.documents(cfg.pick(24, 10, 2))
    sources = [Source.from_bytes(name, text.encode()) for name, text in files]
    count = cfg.pick(3, 2, 1)
    embedder = LocalEmbedder()
    settings = IngestSettings()
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        folder = Path(tmp)
        store, pid = _fresh(folder, "warm.db")
        Ingestor(store, embedder, settings).ingest(pid, sources)  # loads the model; gives the chunk texts
        with store.read() as db:
            texts = [row[0] for row in db.connection().exec_driver_sql("SELECT text FROM chunks ORDER BY id")]
        store.dispose()
        log.info("ingestion: %d files, %d chunks, %d rounds", len(files), len(texts), count)

        def raw(r: int) -> float:
            return common.timed(lambda: embedder.embed(texts))[0]

        def ingest(r: int) -> float:
            target, project = _fresh(folder, f"round{r}.db")
            try:
                seconds, summary = common.timed(lambda: Ingestor(target, embedder, settings).ingest(project, sources))
            finally:
                target.dispose()
            assert sum(f.chunks for f in summary.files) == len(texts), "every round ingests the same chunks"
            return seconds

        times = common.rounds(count, {"raw_embed": raw, "ingest": ingest})
    chunks = len(texts)
    throughput = {name: [chunks / s for s in values] for name, values in times.items()}
    ratio = common.ratio(times["raw_embed"], times["ingest"])  # = ingest chunks/s ÷ raw chunks/s
    sizes = _sizes(cfg)
    result: dict[str, Any] = {
        "files": len(files),
        "chunks": chunks,
        "rounds": count,
        "chunks_per_s": {name: common.summary(values, scale=1.0) for name, values in throughput.items()},
        "ratio_ingest_to_raw": ratio,
        "database_sizes": sizes,
    }
    text = common.table(
        f"Ingestion throughput ({len(files)} SciFact abstracts, {chunks} chunks; medians of {count} paired rounds)",
        ["raw embedder chunks/s", "ingest chunks/s", "ingest ÷ raw (median)", "p95 (worst)", f"goal >={GOAL}"],
        [
            [
                result["chunks_per_s"]["raw_embed"]["median"],
                result["chunks_per_s"]["ingest"]["median"],
                ratio["median"],
                min(a / b for a, b in zip(times["raw_embed"], times["ingest"], strict=True)),
                common.goal(ratio["median"] >= GOAL),
            ]
        ],
    ) + common.table(
        "Database size (real tables: chunks + FTS5 + vec0 + journal; SciFact chunk texts)",
        ["chunks", "database MiB", "MiB per 100k chunks", "bytes per chunk"],
        [[s["chunks"], s["mib"], s["mib_per_100k"], s["bytes_per_chunk"]] for s in sizes],
    )
    return common.write(cfg, NAME, {**result, "table": text}, _plot(result))


def _sizes(cfg: Config) -> list[dict[str, Any]]:
    out = []
    for n in cfg.pick([10_000, 100_000, 500_000], [10_000, 50_000], [300]):
        kb = data.knowledge_base(cfg, n)
        size = kb.path.stat().st_size
        out.append(
            {"chunks": n, "mib": size / 2**20, "mib_per_100k": size / 2**20 * 100_000 / n, "bytes_per_chunk": size / n}
        )
    return out


def _plot(result: dict[str, Any]) -> Any:
    fig, (left, right) = common.figure(2, width=5)
    speeds = result["chunks_per_s"]
    left.bar(["raw embedder", "ingest end to end"], [speeds["raw_embed"]["median"], speeds["ingest"]["median"]])
    left.set(ylabel="chunks per second (median)", title=f"ingest ÷ raw = {result['ratio_ingest_to_raw']['median']:.2f}")
    sizes = result["database_sizes"]
    right.plot([s["chunks"] for s in sizes], [s["mib"] for s in sizes], marker="o")
    right.set(xscale="log", yscale="log", xlabel="chunks", ylabel="database MiB", title="database size")
    fig.suptitle("Ingestion")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
