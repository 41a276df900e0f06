"""Read a BEIR-format dataset folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from app.errors import ValidationError


@dataclass(frozen=True)
class BeirDataset:
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # query id -> text (only queries that have judgments)
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance


def load(folder: Path, split: str, *, max_docs: int | None = None, max_queries: int | None = None) -> BeirDataset:
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / name).is_file():
            raise ValidationError("dataset", f"{folder / name} is missing (expected a BEIR folder)")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    corpus: dict[str, tuple[str, str]] = {}
    with (folder / "corpus.jsonl").open() as fh:
        for line in fh:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open() as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    if max_queries is not None:
        queries = dict(list(queries.items())[:max_queries])
    if max_docs is not None:
        # Keep every judged document of the kept queries, then fill up with others.
        judged = {d for q in queries for d in qrels.get(q, {})}
        keep = [d for d in corpus if d in judged] + [d for d in corpus if d not in judged]
        corpus = {d: corpus[d] for d in keep[: max(max_docs, len(judged))]}
    qrels = {q: {d: r for d, r in docs.items() if d in corpus} for q, docs in qrels.items() if q in queries}
    return BeirDataset(corpus, queries, qrels)


def document_text(title: str, text: str) -> str:
    """Index title + text, as BEIR's baselines do."""
    return f"{title}\n\n{text}" if title else text
