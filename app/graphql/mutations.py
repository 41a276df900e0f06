"""Mutation root: each feature's changes, composed; expected failures come back as union members."""

from __future__ import annotations

import strawberry

from app.graphql.chat.mutations import ChatMutation
from app.graphql.knowledge.mutations import KnowledgeMutation
from app.graphql.people.mutations import PeopleMutation
from app.graphql.tools.resolvers import ToolMutation


@strawberry.type(
    description="Changes: people, knowledge bases, documents, chat sessions, tools, and questions answered in one call."
)
class Mutation(PeopleMutation, ToolMutation, KnowledgeMutation, ChatMutation):
    """Each feature's changes, in the order the schema lists them."""
