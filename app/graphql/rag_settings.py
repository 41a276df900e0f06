"""A chat session's RAG settings in the API, declared once for the types that show them and once for
the inputs that set them, after :class:`app.rag.session_settings.RagSettings`: its fields, in its
order, with its bounds in the descriptions. tests/graphql/test_domain_types.py keeps them equal.

A type that shows them extends :class:`RagSettingsFields` and is built with
``**RagSettings.of(source).model_dump()``; Create/UpdateChatSessionInput extend :class:`RagSettingsInput`.
"""

from __future__ import annotations

from typing import Any

import strawberry

from app.graphql.enums import AnswerMode, ExpansionMode, Quality, RerankMode, RewriteMode
from app.graphql.search.document_filter import DocumentFilterInput, DocumentFilterView
from app.rag.session_settings import THRESHOLD_RANGE, TOP_K_RANGE, RagSettings

_TOP_K = "How many sources an answer is written from at most, {}-{}.".format(*TOP_K_RANGE)
_THRESHOLD = (
    "The cosine similarity to the question a chunk needs to be a source, {:g}-{:g} (higher keeps fewer)."
).format(*THRESHOLD_RANGE)
_RERANK = "Whether and how the first candidates are reranked (the trace shows each one's rerank score)."
_EXPANSION = "Whether alternative phrasings of the question are searched too (the trace lists them)."
_QUALITY = "How many retrieval passes evaluate-and-widen may take (QUICK 1, BALANCED 2, THOROUGH 4)."
_REWRITE = "Whether follow-ups are rewritten into standalone queries by the chat model."
_FILTER = "Which documents the session's searches read (the trace shows it); null: every document."
_UNSET = " Omitted or null: the server's default (sessionDefaults) when creating, unchanged when updating."


@strawberry.type
class RagSettingsFields:
    enable_rag: bool = strawberry.field(
        description="Retrieve sources from the knowledge base for each question; false: the model answers alone."
    )
    top_k: int = strawberry.field(description=_TOP_K)
    threshold: float = strawberry.field(description=_THRESHOLD)
    include_citations: bool = strawberry.field(description="Ask the model to cite its sources with [n] markers.")
    answer_mode: AnswerMode = strawberry.field(description="How answers are written.")
    rerank: RerankMode = strawberry.field(description=_RERANK)
    expansion: ExpansionMode = strawberry.field(description=_EXPANSION)
    quality: Quality = strawberry.field(description=_QUALITY)
    rewrite: RewriteMode = strawberry.field(description=_REWRITE)
    document_filter: DocumentFilterView | None = strawberry.field(description=_FILTER)


@strawberry.input
class RagSettingsInput:
    enable_rag: bool | None = strawberry.field(
        default=None, description="Retrieve sources for each question; false: the model answers alone." + _UNSET
    )
    top_k: int | None = strawberry.field(default=None, description=_TOP_K + _UNSET)
    threshold: float | None = strawberry.field(default=None, description=_THRESHOLD + _UNSET)
    include_citations: bool | None = strawberry.field(
        default=None, description="Ask the model to cite its sources with [n] markers." + _UNSET
    )
    answer_mode: AnswerMode | None = strawberry.field(default=None, description="How answers are written." + _UNSET)
    rerank: RerankMode | None = strawberry.field(default=None, description=_RERANK + _UNSET)
    expansion: ExpansionMode | None = strawberry.field(default=None, description=_EXPANSION + _UNSET)
    quality: Quality | None = strawberry.field(default=None, description=_QUALITY + _UNSET)
    rewrite: RewriteMode | None = strawberry.field(default=None, description=_REWRITE + _UNSET)
    document_filter: DocumentFilterInput | None = strawberry.field(
        default=None, description=_FILTER + " An empty filter: every document." + _UNSET
    )


def shown(rag: RagSettings) -> dict[str, Any]:
    """RagSettingsFields' values for ``rag``."""
    return rag.model_dump(exclude={"document_filter"}) | {"document_filter": DocumentFilterView.of(rag.document_filter)}
