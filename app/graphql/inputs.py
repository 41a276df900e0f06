"""Mutation inputs. Omitted RAG fields take the server's defaults (on create) or stay (on update)."""

from __future__ import annotations

import strawberry

from app.graphql.enums import AnswerMode
from app.services.sessions import SessionChanges


@strawberry.input
class CreateProjectInput:
    name: str
    description: str = ""


@strawberry.input
class ChatSessionInput:
    title: str | None = None
    system_prompt: str | None = None
    provider: str | None = None
    model: str | None = None
    enable_rag: bool | None = None
    top_k: int | None = strawberry.field(default=None, description="1-50")
    threshold: float | None = strawberry.field(default=None, description="Minimum cosine similarity, 0-1")
    include_citations: bool | None = None
    answer_mode: AnswerMode | None = strawberry.field(default=None, description="How answers are written.")

    def changes(self) -> SessionChanges:
        return SessionChanges(
            title=self.title,
            system_prompt=self.system_prompt,
            provider=self.provider,
            model=self.model,
            enable_rag=self.enable_rag,
            top_k=self.top_k,
            threshold=self.threshold,
            include_citations=self.include_citations,
            answer_mode=self.answer_mode,
        )
