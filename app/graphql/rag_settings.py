"""A chat session's RAG settings in the API, declared once for the types that show them and once for
the input that changes them, after :class:`app.rag.session_settings.RagSettings`: its fields, in its
order; the input's descriptions give its bounds. tests/graphql/test_domain_types.py keeps them equal.

A type that shows them extends :class:`RagSettingsFields` and is built with
``**RagSettings.of(source).model_dump()``; ChatSessionInput extends :class:`RagSettingsInput`.
"""

from __future__ import annotations

import strawberry

from app.graphql.enums import AnswerMode
from app.rag.session_settings import THRESHOLD_RANGE, TOP_K_RANGE


@strawberry.type
class RagSettingsFields:
    enable_rag: bool
    top_k: int
    threshold: float
    include_citations: bool
    answer_mode: AnswerMode


@strawberry.input
class RagSettingsInput:
    enable_rag: bool | None = None
    top_k: int | None = strawberry.field(default=None, description="{}-{}".format(*TOP_K_RANGE))
    threshold: float | None = strawberry.field(
        default=None, description="Minimum cosine similarity, {:g}-{:g}".format(*THRESHOLD_RANGE)
    )
    include_citations: bool | None = None
    answer_mode: AnswerMode | None = strawberry.field(default=None, description="How answers are written.")
