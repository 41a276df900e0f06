"""How a chat session's answers are written, and how ``AUTO`` decides.

- ``GENERATIVE``: the chat model writes the answer from the sources (then the answer guard checks it).
- ``EXTRACTIVE``: no model: the sentences of the sources that answer the question, each cited to its
  exact span (:mod:`app.rag.answer.extractive`). It can only say what the documents say.
- ``AUTO`` (the default): generative when the session's chat model declares that it writes grounded
  answers reliably, extractive otherwise. Providers declare it (:class:`app.llm.base.ModelCapabilities`); the core
  never special-cases a vendor or a model name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.llm.base import ModelCapabilities


class AnswerMode(StrEnum):
    GENERATIVE = "generative"
    EXTRACTIVE = "extractive"
    AUTO = "auto"


@dataclass(frozen=True)
class ModeChoice:
    requested: AnswerMode
    used: AnswerMode  # GENERATIVE or EXTRACTIVE, never AUTO
    reason: str


def choose(requested: AnswerMode, capabilities: ModelCapabilities, model_label: str, *, rag: bool = True) -> ModeChoice:
    """The mode a turn runs in, and why (the trace shows both). ``rag``: the session retrieves."""
    if requested is AnswerMode.GENERATIVE:
        return ModeChoice(requested, AnswerMode.GENERATIVE, "the session asks for generated answers")
    if requested is AnswerMode.EXTRACTIVE:
        return ModeChoice(requested, AnswerMode.EXTRACTIVE, "the session asks for extractive answers")
    if not rag:
        return ModeChoice(
            requested, AnswerMode.GENERATIVE, "AUTO: retrieval is off for this session, so there is nothing to quote"
        )
    if capabilities.grounded_writing:
        return ModeChoice(
            requested, AnswerMode.GENERATIVE, f"AUTO: {model_label} writes grounded answers, so it writes this one"
        )
    return ModeChoice(
        requested,
        AnswerMode.EXTRACTIVE,
        f"AUTO: {model_label} is not a reliable writer (declared by its provider), so the answer is "
        "quoted from the sources",
    )
