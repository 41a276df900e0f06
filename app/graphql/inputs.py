"""Mutation inputs: one to create a thing and one to change it. A create input's omitted fields take
the defaults; an update input is a patch: an omitted (or null) field stays as it is."""

from __future__ import annotations

import strawberry

from app.graphql.rag_settings import RagSettingsInput
from app.services.projects import DESCRIPTION_MAX, NAME_MAX
from app.services.sessions import SYSTEM_PROMPT_MAX, TITLE_MAX, SessionChanges

_NAME = f"The knowledge base's name: 1-{NAME_MAX} characters once runs of spaces are collapsed, unique ignoring case."
_DESCRIPTION = f"What the knowledge base holds, for people choosing one (at most {DESCRIPTION_MAX} characters)."


@strawberry.input(description="A new knowledge base.")
class CreateProjectInput:
    name: str = strawberry.field(description=_NAME)
    description: str = strawberry.field(default="", description=_DESCRIPTION)


@strawberry.input(description="Changes to a knowledge base; an omitted (or null) field stays as it is.")
class UpdateProjectInput:
    name: str | None = strawberry.field(default=None, description=_NAME)
    description: str | None = strawberry.field(default=None, description=_DESCRIPTION)


@strawberry.input
class _ChatSessionInputHead:
    """The chat session inputs' fields that come before the RAG settings' in the schema."""

    title: str | None = strawberry.field(
        default=None,
        description=f"Shown in the chat list, 1-{TITLE_MAX} characters. Omitted on create: "
        '"New chat", until its first question names it.',
    )
    system_prompt: str | None = strawberry.field(
        default=None,
        description=f"Extra instructions for the chat model, at most {SYSTEM_PROMPT_MAX} characters "
        "(generative answers only). Omitted on create: none.",
    )
    provider: str | None = strawberry.field(
        default=None, description="The chat model's provider, one of `providers`. Omitted on create: the server's."
    )
    model: str | None = strawberry.field(
        default=None,
        description="The chat model, one the provider offers (any name when it is open-ended). Omitted on "
        "create: the server's default model, which the provider must then offer.",
    )

    def changes(self) -> SessionChanges:
        values = dict(vars(self))  # the input's fields are SessionChanges', by name
        if values.get("document_filter") is not None:
            values["document_filter"] = values["document_filter"].to_filter()
        return SessionChanges(**values)


@strawberry.input(description="A new chat session; what you omit takes the server's defaults (sessionDefaults).")
class CreateChatSessionInput(_ChatSessionInputHead, RagSettingsInput):
    pass


@strawberry.input(
    description="Changes to a chat session, effective from its next message; an omitted (or null) field stays as it is."
)
class UpdateChatSessionInput(_ChatSessionInputHead, RagSettingsInput):
    pass
