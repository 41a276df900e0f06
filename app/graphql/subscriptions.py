"""Subscription root: stream an answer over graphql-transport-ws (Apollo's GraphQLWsLink).

Events, in order: ChatRetrieval (the sources, before any token), ChatToken deltas, then ChatDone
(the stored message with citations and trace) or ChatError. When the client goes away the
generator is closed, which cancels generation; the answer is stored as failed ("cancelled").
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Annotated

import anyio.to_thread
import strawberry

from app.errors import NotFoundError, RagchatError
from app.graphql import types
from app.graphql.context import Info
from app.graphql.errors import parse_id
from app.services import sessions
from app.services.chat_events import ChatEvent, DoneEvent, ErrorEvent, RetrievalEvent, TokenEvent
from app.services.chat_store import Turn

log = logging.getLogger(__name__)


@strawberry.type(description="A source the answer will be written from.")
class ChatSource:
    number: int
    chunk_id: strawberry.ID
    document_id: strawberry.ID
    document_name: str
    location: types.Location
    score: float | None
    rank: int
    text: str


@strawberry.type(description="Retrieval is done: these are the sources, sent before any token.")
class ChatRetrieval:
    message_id: strawberry.ID
    user_message_id: strawberry.ID
    sources: list[ChatSource]
    no_context: bool = strawberry.field(description="RAG was on and nothing passed the threshold.")
    degraded: list[str]


@strawberry.type
class ChatToken:
    message_id: strawberry.ID
    text: str


@strawberry.type(description="The answer is stored; `answer` has its citations and trace.")
class ChatDone:
    answer: types.ChatMessage


@strawberry.type(
    description="The turn could not start, or failed; `failedMessageId` is set when an answer was stored as failed."
)
class ChatError:
    failed_message_id: strawberry.ID | None
    code: str
    message: str
    partial: str


ChatEventType = Annotated[ChatRetrieval | ChatToken | ChatDone | ChatError, strawberry.union("ChatEvent")]


async def _events(info: Info, start: object) -> AsyncGenerator[ChatEventType, None]:
    service = info.context.container.chat
    try:
        turn: Turn = await start()  # type: ignore[operator]
    except RagchatError as exc:
        yield ChatError(failed_message_id=None, code=exc.code, message=exc.message, partial="")
        return
    except Exception:
        # The schema's error masking does not reach errors raised inside a stream: mask them here.
        request_id = info.context.request_id
        log.exception("request %s: the chat turn could not start", request_id)
        masked = f"Unexpected error (request {request_id}); it has been logged."
        yield ChatError(failed_message_id=None, code="internal", message=masked, partial="")
        return
    stream = service.run(turn)
    try:
        async for event in stream:
            yield await _convert(info, event)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]


async def _convert(info: Info, event: ChatEvent) -> ChatEventType:
    if isinstance(event, TokenEvent):
        return ChatToken(message_id=strawberry.ID(str(event.message_id)), text=event.text)
    if isinstance(event, RetrievalEvent):
        return ChatRetrieval(
            message_id=strawberry.ID(str(event.message_id)),
            user_message_id=strawberry.ID(str(event.user_message_id)),
            sources=[
                ChatSource(
                    number=s.number,
                    chunk_id=strawberry.ID(str(s.chunk_id)),
                    document_id=strawberry.ID(str(s.document_id)),
                    document_name=s.document_name,
                    location=types.Location.of(s.location),
                    score=s.score,
                    rank=s.rank,
                    text=s.text,
                )
                for s in event.sources
            ],
            no_context=event.no_context,
            degraded=event.degraded,
        )
    if isinstance(event, DoneEvent):
        store = info.context.container.db
        try:
            row = await anyio.to_thread.run_sync(sessions.message, store, event.message_id)
        except NotFoundError:  # stored, then deleted with its session before it could be sent
            gone = "the chat session was deleted right after this answer was stored"
            return ChatError(failed_message_id=None, code=NotFoundError.code, message=gone, partial="")
        return ChatDone(answer=types.ChatMessage.of(row))
    assert isinstance(event, ErrorEvent)
    return ChatError(
        failed_message_id=strawberry.ID(str(event.message_id)) if event.stored else None,
        code=event.code,
        message=event.message,
        partial=event.partial,
    )


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Ask a question and stream the answer.")
    async def chat(self, info: Info, session_id: strawberry.ID, content: str) -> AsyncGenerator[ChatEventType, None]:
        service = info.context.container.chat

        async def start() -> Turn:
            return await service.start(parse_id(session_id, "sessionId"), content)

        async for event in _events(info, start):
            yield event

    @strawberry.subscription(description="Generate an assistant message again and stream it.")
    async def regenerate(self, info: Info, message_id: strawberry.ID) -> AsyncGenerator[ChatEventType, None]:
        service = info.context.container.chat

        async def start() -> Turn:
            return await service.start_regenerate(parse_id(message_id, "messageId"))

        async for event in _events(info, start):
            yield event
