"""The bundled SmolLM2-135M as a scorer of extractive candidates, not a writer: does ranking the
composer's best sentences by the model's log-likelihood of the question given each sentence
("unsupervised passage reranking", Sachan et al. 2022, at the sentence level) put an answering
sentence first more often than the composer's own score, and at what cost against retrieval?

For each answerable single question of a docs-qa dataset (default: ../shared/datasets/docs-qa),
its corpus ingested once into a scratch database: the turn's retrieval (the session's default
parameters) timed, the kept sources composed (app/rag/answer/extractive.py), and the composer's
``--top`` best candidates scored by mean log P(question | sentence) on llama.cpp (``logits_all``).
Counted: questions with an answering sentence among them, and how often the composer's first,
the model's first, or the best of their standardised sum holds a fact. Cost: scoring time ÷
retrieval time, per question, in the same run. Results: docs/BENCHMARKS.md ("The small model as a
scorer").

Usage: python -m benchmarks.lm_scorer [--dataset DIR] [--corpus NAME] [--top 6] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.bench import docs_qa
from app.bench.answers import scratch_settings
from app.container import Container
from app.db import migrate
from app.llm.chat.local import SMOLLM2, shipped_models
from app.rag.answer import extractive
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import projects
from app.services.chat.answer import cached_embed
from app.settings import load_settings

DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "docs-qa"


class Scorer:
    """Mean log-likelihood of a text's tokens after a context, on the shipped GGUF model."""

    def __init__(self, threads: int) -> None:
        from llama_cpp import Llama

        path = shipped_models()[SMOLLM2]
        self.llm = Llama(
            str(path), n_ctx=1024, n_threads=threads, n_threads_batch=threads, logits_all=True, verbose=False
        )

    def mean_logprob(self, context: str, text: str) -> float:
        before = self.llm.tokenize(context.encode(), add_bos=True)
        tokens = self.llm.tokenize(text.encode(), add_bos=False)
        self.llm.reset()
        self.llm.eval(before + tokens)
        logits = np.asarray(self.llm.scores[: len(before) + len(tokens)], dtype=np.float64)
        rows = logits[len(before) - 1 : -1]
        top = rows.max(axis=1, keepdims=True)
        logprobs = rows - top - np.log(np.exp(rows - top).sum(axis=1, keepdims=True))
        return float(logprobs[np.arange(len(tokens)), tokens].mean())


def _standard(values: list[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    a = np.asarray(values, dtype=np.float64)
    return (a - a.mean()) / (a.std() or 1.0)


def run(dataset: Path, only: list[str], top: int, threads: int) -> dict[str, float]:
    settings = load_settings()
    scorer = Scorer(threads)
    counts = {"questions": 0, "answerable_among_top": 0, "composer_first": 0, "model_first": 0, "sum_first": 0}
    retrieval_s: list[float] = []
    scoring_s: list[float] = []
    for folder in docs_qa.corpora(dataset, only):
        questions, _ = docs_qa.load_corpus(folder)
        with tempfile.TemporaryDirectory(prefix="ragchat-lm-scorer-") as tmp:
            scratch = scratch_settings(settings, Path(tmp))
            migrate.upgrade(scratch.database_url, default_threshold=scratch.rag.threshold)
            container = Container.build(scratch)
            try:
                pid = projects.create(container.store, folder.name).id
                files = sorted(p for p in (folder / "docs").iterdir() if p.is_file())
                Ingestor(container.store, container.embedder, scratch.ingest).ingest(
                    pid, [Source.from_bytes(p.name, p.read_bytes()) for p in files]
                )
                params = RetrievalParams.for_session(
                    scratch.rag, top_k=scratch.rag.top_k, threshold=scratch.rag.threshold
                )
                embed = cached_embed(container.embedder)
                for item in (q for q in questions if q.answerable):
                    counts["questions"] += 1
                    started = time.perf_counter()
                    kept = retrieve(container.store, container.embedder, pid, item.question, params).kept
                    retrieval_s.append(time.perf_counter() - started)
                    sources = [_Passage(n, c) for n, c in enumerate(kept, 1)]
                    ranked = [c for c in extractive.compose(item.question, sources, embed).considered][:top]
                    hits = [docs_qa.has_fact(c.text, item.facts) for c in ranked]
                    if not any(hits):
                        continue
                    counts["answerable_among_top"] += 1
                    started = time.perf_counter()
                    model = [scorer.mean_logprob(f"{c.text}\nQuestion:", f" {item.question}") for c in ranked]
                    scoring_s.append(time.perf_counter() - started)
                    both = _standard(model) + _standard([c.score for c in ranked])
                    counts["composer_first"] += hits[0]
                    counts["model_first"] += hits[int(np.argmax(model))]
                    counts["sum_first"] += hits[int(np.argmax(both))]
            finally:
                container.close()
    ratio = statistics.median(s / r for s, r in zip(scoring_s, retrieval_s, strict=False))
    return {
        **counts,
        "median_retrieval_ms": statistics.median(retrieval_s) * 1000,
        "median_scoring_ms": statistics.median(scoring_s) * 1000,
        "scoring_over_retrieval": ratio,
    }


class _Passage:
    """A kept candidate as the composer reads a source."""

    def __init__(self, number: int, candidate: Any) -> None:
        self.number, self.rank = number, number
        self.text, self.document_id, self.document_name = candidate.text, candidate.document_id, candidate.document_name
        self.location, self.score = candidate.location, candidate.score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--corpus", action="append", default=[])
    parser.add_argument("--top", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for name, value in run(args.dataset, args.corpus, args.top, args.threads).items():
        print(f"{name}: {value:.1f}" if isinstance(value, float) else f"{name}: {value}")


if __name__ == "__main__":
    main()
