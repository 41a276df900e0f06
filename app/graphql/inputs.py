"""Mutation inputs. Omitted RAG fields take the server's defaults (on create) or stay (on update)."""

from __future__ import annotations

import strawberry

from app.graphql.rag_settings import RagSettingsInput
from app.services.sessions import SessionChanges


@strawberry.input
class CreateProjectInput:
    name: str
    description: str = ""


@strawberry.input
class _ChatSessionInputHead:
    """ChatSessionInput's fields that come before the RAG settings' in the schema."""

    title: str | None = None
    system_prompt: str | None = None
    provider: str | None = None
    model: str | None = None


@strawberry.input
class ChatSessionInput(_ChatSessionInputHead, RagSettingsInput):
    def changes(self) -> SessionChanges:
        return SessionChanges(**vars(self))  # the input's fields are SessionChanges', by name
