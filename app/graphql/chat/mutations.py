"""Chat changes: sessions, and questions answered in one call."""

from __future__ import annotations

from typing import Annotated

import strawberry

from app.errors import RagchatError
from app.graphql import types
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id, to_graphql
from app.graphql.inputs import CreateChatSessionInput, UpdateChatSessionInput
from app.graphql.results import (
    ChatSessionDeleted,
    ChatSessionResult,
    DeleteChatSessionResult,
    MessageResult,
    call,
)
from app.graphql.subscriptions import CLIENT_MESSAGE_ID, QUESTION
from app.services import sessions
from app.services.chat import turns as chat_turns


async def _answer(info: Info, finished: chat_turns.Finished) -> MessageResult:
    """The answer a turn ended with: as its own transaction read it back when it stored it, else read now."""
    if finished.stored is not None:
        return types.ChatMessage.stored(info, finished.stored)
    store = info.context.container.store
    return await call(lambda: types.ChatMessage.of(sessions.message(store, finished.answer_id)))


_SESSION_ID = strawberry.argument(description="The chat session.")


@strawberry.type
class ChatMutation:
    @strawberry.mutation(description="Start a chat session; RAG settings you omit take the server's defaults.")
    async def create_chat_session(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, strawberry.argument(description="The knowledge base it searches.")],
        input: Annotated[
            CreateChatSessionInput | None,
            strawberry.argument(description="Its title, model and settings; omitted: all the defaults."),
        ] = None,
    ) -> ChatSessionResult:
        c, caller = info.context.container, caller_of(info)
        changes = (input or CreateChatSessionInput()).changes()
        return await call(
            lambda: types.ChatSession.of(
                sessions.create(
                    c.store, c.settings, c.chat_models, parse_id(project_id, "projectId"), changes, caller=caller
                )
            )
        )

    @strawberry.mutation(
        description="Change a session's title, prompt, model or RAG settings; effective from the next message."
    )
    async def update_chat_session(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _SESSION_ID],
        input: Annotated[UpdateChatSessionInput, strawberry.argument(description="The fields to change.")],
    ) -> ChatSessionResult:
        c, caller = info.context.container, caller_of(info)
        return await call(
            lambda: types.ChatSession.of(
                sessions.update(c.store, c.chat_models, parse_id(id, "id"), input.changes(), caller=caller)
            )
        )

    @strawberry.mutation(
        description="Share a chat session read-only with its knowledge base's members, or stop sharing it (its "
        "owner only)."
    )
    async def share_chat_session(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _SESSION_ID],
        shared: Annotated[bool, strawberry.argument(description="True: its knowledge base's members may read it.")],
    ) -> ChatSessionResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: types.ChatSession.of(sessions.share(store, parse_id(id, "id"), shared, caller=caller))
        )

    @strawberry.mutation(description="Delete a chat session with its messages.")
    async def delete_chat_session(
        self, info: Info, id: Annotated[strawberry.ID, _SESSION_ID]
    ) -> DeleteChatSessionResult:
        store, caller = info.context.container.store, caller_of(info)

        def run() -> ChatSessionDeleted:
            row = sessions.delete(store, parse_id(id, "id"), caller=caller)
            return ChatSessionDeleted(id=strawberry.ID(str(row.id)), project_id=strawberry.ID(str(row.project_id)))

        return await call(run)

    @strawberry.mutation(
        description="Ask a question and wait for the whole answer (use the `chat` subscription to stream it). "
        "A model failure is not an error here: the answer comes back with status FAILED and its error."
    )
    async def send_message(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, _SESSION_ID],
        content: Annotated[str, QUESTION],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            sid = parse_id(session_id, "sessionId")
            finished = await chat_turns.complete(
                container.live, sid, content, client_message_id, caller=caller_of(info)
            )
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _answer(info, finished)

    @strawberry.mutation(
        description="Write an answer again, in place, and wait for it (after a failure, or to try anew)."
    )
    async def regenerate_message(
        self,
        info: Info,
        message_id: Annotated[strawberry.ID, strawberry.argument(description="The answer (an assistant message).")],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            mid = parse_id(message_id, "messageId")
            finished = await chat_turns.complete_regenerate(
                container.live, mid, client_message_id, caller=caller_of(info)
            )
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _answer(info, finished)
