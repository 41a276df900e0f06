"""What `ragchat bench answers` records: each answer with its scores, and their summary per
(mode, provider/model). Plain dataclasses, written out as JSON by ``Report.as_json``."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime


@dataclass(frozen=True)
class Target:
    mode: str
    provider: str
    model: str


@dataclass
class Answer:
    """One question's stored answer and its scores. When the chat model wrote it, ``model_text`` is
    the model's own text (before the answer guard cleaned or replaced it) and ``model_*`` score that
    text: the guard's work shows as the difference."""

    id: str
    kind: str
    question: str
    expected: str | None
    document: str | None
    answer: str
    status: str
    error: str | None
    cited_documents: list[str]
    no_context: bool
    contains_fact: bool
    right_document: bool
    degenerate: str | None
    echoed: str | None
    unsupported: int
    unsupported_from: str  # "guard" (the answer guard's own count, from the trace) or "overlap"
    first_token_ms: float | None
    answer_ms: float
    mode_used: str | None = None  # generative or extractive, as the trace says (AUTO resolves to one)
    guard: str | None = None  # the guard's decision: pass, flagged, fallback, rejected
    model_text: str | None = None
    model_contains_fact: bool | None = None
    model_degenerate: str | None = None
    model_echoed: str | None = None


@dataclass(frozen=True)
class Summary:
    """One (mode, provider/model)'s scores over the questions asked."""

    mode: str
    provider: str
    model: str
    questions: int
    contains_fact: int
    contains_fact_rate: float
    right_document: int
    right_document_rate: float
    degenerate: int
    echoed: int
    unsupported_sentences: int
    answers_with_unsupported: int
    unsupported_from: str  # "guard", "overlap" or both
    failed: int
    no_answer_correct: int
    no_answer_questions: int
    median_first_token_ms: float | None
    median_answer_ms: float | None
    modes_used: dict[str, int]
    guard_decisions: dict[str, int]
    generated: int  # answers the chat model wrote (the model_* counts are over these)
    model_contains_fact: int
    model_degenerate: int
    model_echoed: int


@dataclass
class Run:
    target: Target
    answers: list[Answer] = field(default_factory=list)

    def summary(self) -> Summary:
        answers = self.answers
        n = len(answers) or 1
        first = [a.first_token_ms for a in answers if a.first_token_ms is not None]
        facts = sum(a.contains_fact for a in answers)
        documents = sum(a.right_document for a in answers)
        generated = [a for a in answers if a.model_text is not None]
        return Summary(
            mode=self.target.mode,
            provider=self.target.provider,
            model=self.target.model,
            questions=len(answers),
            contains_fact=facts,
            contains_fact_rate=facts / n,
            right_document=documents,
            right_document_rate=documents / n,
            degenerate=sum(a.degenerate is not None for a in answers),
            echoed=sum(a.echoed is not None for a in answers),
            unsupported_sentences=sum(a.unsupported for a in answers),
            answers_with_unsupported=sum(a.unsupported > 0 for a in answers),
            unsupported_from="+".join(sorted({a.unsupported_from for a in answers})),
            failed=sum(a.status != "complete" for a in answers),
            no_answer_correct=sum(a.contains_fact for a in answers if a.expected is None),
            no_answer_questions=sum(a.expected is None for a in answers),
            median_first_token_ms=statistics.median(first) if first else None,
            median_answer_ms=statistics.median(a.answer_ms for a in answers) if answers else None,
            modes_used=dict(Counter(a.mode_used or "unknown" for a in answers)),
            guard_decisions=dict(Counter(a.guard for a in answers if a.guard is not None)),
            generated=len(generated),
            model_contains_fact=sum(bool(a.model_contains_fact) for a in generated),
            model_degenerate=sum(a.model_degenerate is not None for a in generated),
            model_echoed=sum(a.model_echoed is not None for a in generated),
        )


@dataclass
class Report:
    documents_folder: str
    documents: int
    chunks: int
    settings: dict[str, object]
    runs: list[Run] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "documents_folder": self.documents_folder,
            "documents": self.documents,
            "chunks": self.chunks,
            "settings": self.settings,
            "runs": [{**asdict(run.summary()), "answers": [asdict(a) for a in run.answers]} for run in self.runs],
        }
