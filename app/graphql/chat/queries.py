"""Chat reads: sessions, messages, and the chat-model providers with their generation load."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
import strawberry

from app.graphql import types
from app.graphql.connections import After, Before, First, Last, paged
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id
from app.graphql.results import (
    ChatSessionConnectionResult,
    ChatSessionResult,
    MessageResult,
    call,
)
from app.services import records, sessions
from app.services.pages import Page, PageRequest


@strawberry.type(
    description="A pool of generation slots: how many answers a provider (or one of its models) writes at once, now."
)
class GenerationLoad:
    model: str | None = strawberry.field(
        description="The model with a pool of its own (RAGCHAT_CHAT__LIMITS names it); null: the pool the "
        "provider's other models share."
    )
    limit: int = strawberry.field(
        description="Answers it writes at once at most, server-wide: the worker processes of "
        "`ragchat serve --workers N` share it."
    )
    in_use: int = strawberry.field(description="Answers being written now, by every worker.")
    waiting: int = strawberry.field(description="Questions waiting in line for a slot now.")


@strawberry.type(description="A chat-model provider and the models it offers.")
class ProviderInfo:
    provider: str = strawberry.field(description='Its name, as ChatSession.provider takes it ("local", "openai").')
    available: bool = strawberry.field(description="The settings allow it (a key, an installed package).")
    reachable: bool = strawberry.field(
        description="It answered a quick check just now (cached for 30 s); false whenever not available."
    )
    reason: str | None = strawberry.field(description="Why it cannot be used or is not reachable, when so.")
    models: list[str] = strawberry.field(description="Known model names (suggestions when openEnded).")
    open_ended: bool = strawberry.field(description="Any model name the provider knows is accepted.")
    default_model: str | None = strawberry.field(
        description="The model to suggest for this provider (its default); null when it has none."
    )
    tool_calling: bool = strawberry.field(
        description="Its models can be offered tools: a chat allows tool groups only on such a model."
    )
    generations: list[GenerationLoad] = strawberry.field(
        description="Its generation slots, live: the shared pool first, then any model's own."
    )


@strawberry.type
class ChatQuery:
    @strawberry.field(
        description="Chat sessions, most recently active first (a session that changes moves to the front); "
        "the first 50 unless asked otherwise."
    )
    async def chat_sessions(
        self,
        info: Info,
        project_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(description="Only this knowledge base's sessions (none when it does not exist)."),
        ] = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> ChatSessionConnectionResult:
        store, caller = info.context.container.store, caller_of(info)

        async def load(request: PageRequest) -> Page[records.ChatSession]:
            pid = parse_id(project_id, "projectId") if project_id is not None else None
            return await anyio.to_thread.run_sync(lambda: sessions.list_page(store, pid, request, caller=caller))

        return await paged(
            info,
            types.ChatSessionConnection,
            types.SESSION_CURSOR,
            load,
            types.ChatSession.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="One chat session.")
    async def chat_session(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The chat session.")]
    ) -> ChatSessionResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: types.ChatSession.of(sessions.get(store, parse_id(id, "id"), caller=caller)))

    @strawberry.field(description="One message, with its citations and trace.")
    async def message(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The message.")]
    ) -> MessageResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: types.ChatMessage.of(sessions.message(store, parse_id(id, "id"), caller=caller)))


@strawberry.type
class ProviderQuery:
    @strawberry.field(description="Chat-model providers this server knows, whether each answers now, and their models.")
    async def providers(self, info: Info) -> list[ProviderInfo]:
        slots = info.context.container.chat.slots
        return [
            ProviderInfo(
                provider=p.provider,
                available=p.available,
                reachable=p.reachable,
                reason=p.reason,
                models=list(p.models),
                open_ended=p.open_ended,
                default_model=p.default_model,
                tool_calling=p.tool_calling,
                generations=[
                    GenerationLoad(model=g.model, limit=g.limit, in_use=g.in_use, waiting=g.waiting)
                    for g in slots.loads(p.provider, p.concurrency)
                ],
            )
            for p in await info.context.container.chat_models.list_models()
        ]
