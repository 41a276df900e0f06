"""`ragchat bench retrieval`: nDCG@10 and Recall@100 on a BEIR dataset, through the real
ingestion path into a scratch database, scored with ir-measures (trec_eval semantics)."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ir_measures
from ir_measures import R, nDCG

from app.bench.beir import BeirDataset, document_text
from app.container import Container
from app.db import migrate
from app.llm.base import Embedder, Vectors
from app.rag.ingest import FileResult, Ingestor, Source
from app.rag.retrieval import RetrievalParams, embed_query, retrieve
from app.rag.retrieval_mode import RetrievalMode
from app.services import projects
from app.settings import Settings

CANDIDATES = 300  # chunks per ranking: enough distinct documents for Recall@100


@dataclass
class BenchResult:
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> measure -> value
    timings: dict[str, float] = field(default_factory=dict)
    calibration: dict[str, float] = field(default_factory=dict)
    docs: int = 0
    chunks: int = 0
    queries: int = 0

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "docs": self.docs,
            "chunks": self.chunks,
            "queries": self.queries,
            "timings_s": self.timings,
            "calibration": self.calibration,
            "modes": self.metrics,
        }
        if len(self.metrics) == 1:  # a single mode: its figures at the top level too
            out.update(next(iter(self.metrics.values())))
        return out


def run(
    dataset: BeirDataset,
    embedder: Embedder,
    settings: Settings,
    modes: list[RetrievalMode],
    *,
    progress: Callable[[FileResult], None] | None = None,
) -> BenchResult:
    result = BenchResult(docs=len(dataset.corpus), queries=len(dataset.queries))
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        scratch = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
        migrate.upgrade(scratch.database_url)
        container = Container.build(scratch)
        try:
            pid = projects.create(container.store, "bench").id
            sources = [
                Source.from_bytes(f"{doc_id}.txt", document_text(*body).encode())
                for doc_id, body in dataset.corpus.items()
            ]
            started = time.perf_counter()
            summary = Ingestor(container.store, embedder, scratch.ingest).ingest(pid, sources, progress)
            result.timings["ingest"] = time.perf_counter() - started
            result.chunks = sum(f.chunks for f in summary.files)
            started = time.perf_counter()
            vectors = {qid: embed_query(embedder, text) for qid, text in dataset.queries.items()}
            result.timings["embed_queries"] = time.perf_counter() - started
            for mode in modes:
                started = time.perf_counter()
                run_, best_scores = _search(container, embedder, pid, dataset, vectors, mode)
                result.timings[f"search_{mode}"] = time.perf_counter() - started
                result.metrics[mode] = _measure(dataset, run_)
                if mode == RetrievalMode.VECTOR:
                    result.calibration = _calibrate(dataset, best_scores)
        finally:
            container.close()
    return result


def _search(
    container: Container,
    embedder: Embedder,
    pid: int,
    dataset: BeirDataset,
    vectors: dict[str, Vectors],
    mode: RetrievalMode,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    params = RetrievalParams(mode=mode, top_k=CANDIDATES * 2, threshold=-1.0, candidates=CANDIDATES)
    run_: dict[str, dict[str, float]] = {}
    best: dict[str, dict[str, float]] = {}
    for qid, text in dataset.queries.items():
        found = retrieve(container.store, embedder, pid, text, params, query_vector=vectors[qid])
        docs: dict[str, float] = {}
        scores: dict[str, float] = {}
        for position, cand in enumerate(found.candidates):
            doc_id = cand.document_name.removesuffix(".txt")
            docs.setdefault(doc_id, -float(position))  # max-pool: a document ranks where its best chunk does
            if cand.score is not None:
                scores[doc_id] = max(scores.get(doc_id, -1.0), cand.score)
        run_[qid] = dict(list(docs.items())[:100])
        best[qid] = scores
    return run_, best


def _measure(dataset: BeirDataset, run_: dict[str, dict[str, float]]) -> dict[str, float]:
    values = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], dataset.qrels, run_)
    return {"ndcg@10": float(values[nDCG @ 10]), "recall@100": float(values[R @ 100])}


def _calibrate(dataset: BeirDataset, best: dict[str, dict[str, float]]) -> dict[str, float]:
    """Score of each relevant document (its best chunk) vs. the scores of all other candidates:
    the threshold that keeps 95% of relevant documents, and what it removes of the rest."""
    relevant = [best[q][d] for q, docs in dataset.qrels.items() for d in docs if d in best.get(q, {})]
    others = [s for q, docs in best.items() for d, s in docs.items() if d not in dataset.qrels.get(q, {})]
    if len(relevant) < 2 or not others:
        return {}
    keep95 = statistics.quantiles(relevant, n=20)[0]
    return {
        "relevant_median": statistics.median(relevant),
        "others_median": statistics.median(others),
        "threshold_keep_95pct_relevant": keep95,
        "others_removed_at_that_threshold": sum(1 for s in others if s < keep95) / len(others),
    }
