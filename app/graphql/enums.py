"""The domain's enums as GraphQL enums, each registered as it is (``strawberry.enum`` keeps the
Python type), so a resolver passes a service's value through unchanged. GraphQL's names are the
members' names, in their order; descriptions are the API's own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

import strawberry
from strawberry.types.enum import has_enum_definition

from app.rag.answer_mode import AnswerMode
from app.rag.guard import Decision as GuardDecision
from app.rag.retrieval import CandidateFate
from app.rag.retrieval_mode import RetrievalMode
from app.services.records import CitationKind, DocumentStatus, MessageStatus, Role


def expose(
    enum: type[Enum],
    description: str | None = None,
    values: Mapping[Enum, str] | None = None,
    *,
    name: str | None = None,
) -> None:
    """Register ``enum`` with GraphQL under its own name (or ``name``), with a description for each of
    ``values``."""
    strawberry.enum(enum, name=name, description=description)
    described = {member.name: text for member, text in (values or {}).items()}
    if described and has_enum_definition(enum):
        for value in enum.__strawberry_definition__.values:
            value.description = described.get(value.name)


expose(AnswerMode, "How a session's answers are written.")
expose(RetrievalMode)
expose(CandidateFate)
expose(
    GuardDecision,
    "What the answer guard decided about a generated answer.",
    {
        GuardDecision.PASS: "The answer passed every check.",
        GuardDecision.FLAGGED: "Kept, with a minor problem (an unsupported sentence, echoed text removed).",
        GuardDecision.FALLBACK: "The generated answer failed; the stored answer is the extractive one.",
        GuardDecision.REJECTED: "The generated answer failed and no extractive answer was possible: stored as failed.",
    },
    name="GuardDecision",
)
expose(DocumentStatus)
expose(Role)
expose(MessageStatus)
expose(
    CitationKind,
    values={
        CitationKind.MODEL: "The model wrote the [n] marker.",
        CitationKind.ATTRIBUTED: "ragchat matched the sentence to the source.",
        CitationKind.EXTRACTED: "The sentence was quoted from the source (an extractive answer); "
        "`location` is its span.",
    },
)

__all__ = [
    "AnswerMode",
    "CandidateFate",
    "CitationKind",
    "DocumentStatus",
    "GuardDecision",
    "MessageStatus",
    "RetrievalMode",
    "Role",
]
