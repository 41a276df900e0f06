"""The values a retrieval hands on: a candidate chunk, what became of it, and where it sits in its
document. Their own small module so that what reads them (hygiene, reranking, the answer, the trace,
the API) does not import the algorithm that makes them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class CandidateFate(StrEnum):
    """What became of a candidate (in the order the stages decide it)."""

    KEPT = "kept"
    BELOW_THRESHOLD = "below_threshold"
    BEYOND_TOP_K = "beyond_top_k"
    OVER_BUDGET = "over_budget"  # kept by retrieval, cut to fit the model's context window
    NEAR_DUPLICATE = "near_duplicate"  # nearly the same text as a better-ranked candidate (hygiene)
    OVER_DOCUMENT_CAP = "over_document_cap"  # its document already gave per_document sources
    MERGED = "merged"  # kept, and merged into the adjacent chunk of its document ranked above it


@dataclass(frozen=True)
class Location:
    """Where a chunk (or a sentence quoted from it) sits in its document: the one definition, which
    search results, chat sources, citations (stored as its fields) and the trace carry, and which
    GraphQL exposes as its ``Location`` type."""

    char_start: int
    char_end: int
    line_start: int  # 1-based, inclusive
    line_end: int
    page: int | None = None  # for paged formats (PDF)
    heading_path: str = ""  # "Install > From source"; empty when the chunk has no heading

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Location:
        """A location stored as JSON (a citation's): its fields by name."""
        return cls(**data)


@dataclass(frozen=True)
class Candidate:
    """One chunk a retrieval found, with what became of it: a value (a stage that decides again —
    reranking, the threshold after it — makes new candidates), so a cached result can be handed out
    as it is."""

    chunk_id: int
    document_id: int
    document_name: str
    text: str
    location: Location
    score: float | None
    vector_rank: int | None
    keyword_rank: int | None
    fused_rank: int
    fused_score: float
    fate: CandidateFate = CandidateFate.KEPT
    rerank_score: float | None = None  # the reranker's, when one ranked this candidate (app/rag/search/rerank.py)
    ordinal: int | None = None  # its position in its document (None: unknown)
    ordinal_end: int | None = None  # the last chunk merged into it, when adjacent chunks were
    # Passes the threshold on its words (app/rag/search/retrieval.py, :func:`words_pass`): a short question
    # whose cosine says little, and this chunk holds every one of its words the knowledge base has.
    passed_on_words: bool = False

    @property
    def ordinal_span(self) -> tuple[int, int]:
        first = self.ordinal or 0
        return first, self.ordinal_end if self.ordinal_end is not None else first
