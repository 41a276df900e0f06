"""Subscription root: stream an answer over graphql-transport-ws (Apollo's GraphQLWsLink).

Events, in order: ChatQueued while the question waits for a generation slot (each time its place in
line changes), ChatSearchProgress for each retrieval pass (the query searched, rewritten or not, and
whether another pass follows), ChatRetrieval (the sources, before any token), ChatToken deltas (a client that fell
behind gets what piled up as one), then ChatDone (the
stored message with citations and trace) or ChatError. A client that stops while it waits leaves
the line; nothing was stored. With a ``clientMessageId``, subscribing
again (graphql-ws does after a reconnect) follows the same turn from its start, or gets its stored
outcome. A client that stops (``complete``) cancels generation at once; one whose connection is lost,
after the re-attach grace period. Either way the answer is stored as failed ("cancelled"); see
app/services/chat/live.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing, suppress
from typing import Annotated

import anyio.to_thread
import strawberry
from starlette.websockets import WebSocket, WebSocketState

from app.errors import BusyError, NotFoundError, RagchatError
from app.graphql import types
from app.graphql.chat.trace_types import SCORE, Degradation, Location
from app.graphql.context import Info, caller_of
from app.graphql.enums import ErrorCode, SearchDecision
from app.graphql.errors import Error, ValidationError, parse_id
from app.graphql.errors import ForbiddenError as ForbiddenErrorType
from app.graphql.errors import NotFoundError as NotFoundErrorType
from app.graphql.knowledge import jobs as job_resolvers
from app.graphql.knowledge.job_types import IngestionItem
from app.graphql.tools.call_types import ChatToolCall, ChatToolPreview, ChatToolResult
from app.services import sessions
from app.services.chat.events import (
    ChatEvent,
    DoneEvent,
    ErrorEvent,
    RetrievalEvent,
    SearchProgressEvent,
    TokenEvent,
    ToolCallEvent,
    ToolPreviewEvent,
    ToolResultEvent,
)
from app.services.chat.live import Listener
from app.services.chat.slots import Queued

log = logging.getLogger(__name__)


@strawberry.type(description="A source the answer will be written from.")
class ChatSource:
    number: int = strawberry.field(description="Its number: the answer cites it as [number].")
    chunk_id: strawberry.ID = strawberry.field(description="The chunk.")
    document_id: strawberry.ID = strawberry.field(description="Its document.")
    document_name: str = strawberry.field(description="Its document's name.")
    location: Location = strawberry.field(description="Where it sits in its document.")
    score: float | None = strawberry.field(description=SCORE)
    rank: int = strawberry.field(description="Its rank in retrieval (1 = best).")
    text: str = strawberry.field(description="The chunk's text.")


@strawberry.type(
    description="Every generation slot of the session's provider is taken: the question waits in line (nothing is "
    "stored yet). Sent when it starts waiting and each time its place changes; ChatRetrieval follows once it has a "
    "slot, or ChatError (BUSY) when it waited RAGCHAT_CHAT__QUEUE_TIMEOUT seconds in vain."
)
class ChatQueued:
    position: int = strawberry.field(description="Its place in line: 1 = the next to get a slot.")


@strawberry.type(
    description="A retrieval pass has ended (before any source or token): what it searched, what it kept, and "
    'whether another, wider pass follows (decision WIDEN: a client can show "searching again…"). The first '
    "one carries the query searched: the message in its conversation, or the chat model's standalone rewrite."
)
class ChatSearchProgress:
    message_id: strawberry.ID = strawberry.field(description="The answer's message, being written.")
    number: int = strawberry.field(description="Which pass, from 1.")
    budget: int = strawberry.field(description="The most passes the session's quality allows.")
    query: str = strawberry.field(description="The query searched.")
    rewritten: bool = strawberry.field(description="`query` is the chat model's standalone rewrite of the message.")
    kept: int = strawberry.field(description="Sources this pass kept.")
    best_score: float | None = strawberry.field(description="The best kept source's score; null when none was kept.")
    decision: SearchDecision = strawberry.field(description="What follows the pass.")


@strawberry.type(description="Retrieval is done: these are the sources, sent before any token.")
class ChatRetrieval:
    message_id: strawberry.ID = strawberry.field(description="The answer's message, being written.")
    user_message_id: strawberry.ID = strawberry.field(description="The question's message.")
    sources: list[ChatSource] = strawberry.field(description="The sources, by number (empty without retrieval).")
    no_context: bool = strawberry.field(description="RAG was on and nothing passed the threshold.")
    degraded: list[Degradation] = strawberry.field(
        description="What went wrong without stopping the answer (empty when all went well)."
    )


@strawberry.type(
    description="The next piece of the answer's text. Tokens the model writes within "
    "RAGCHAT_CHAT__STREAM_COALESCE_MS (40 ms) of the last piece sent come as one piece; the first never waits."
)
class ChatToken:
    message_id: strawberry.ID = strawberry.field(description="The answer's message.")
    text: str = strawberry.field(description="Text to append to what came before (one or more tokens).")


@strawberry.type(description="The answer is stored; `answer` has its citations and trace.")
class ChatDone:
    answer: types.ChatMessage = strawberry.field(
        description="The stored answer, final: its text may differ from the streamed tokens (citations checked, "
        "the guard's corrections)."
    )


@strawberry.type(
    description="The turn could not start, or failed; `failedMessageId` is set when an answer was stored as failed."
)
class ChatError(Error):
    failed_message_id: strawberry.ID | None = strawberry.field(
        description="The answer stored as failed (regenerate it with regenerate); null when nothing was stored."
    )
    code: ErrorCode = strawberry.field(description="Which failure, to switch on (`message` is for people).")
    partial: str = strawberry.field(description="The text that had streamed before the failure (may be empty).")
    retry_after_seconds: int | None = strawberry.field(
        default=None,
        description="With code BUSY: seconds after which a generation slot is likely free (BusyError's); else null.",
    )


ChatEventType = Annotated[
    ChatQueued
    | ChatSearchProgress
    | ChatRetrieval
    | ChatToken
    | ChatToolCall
    | ChatToolResult
    | ChatToolPreview
    | ChatDone
    | ChatError,
    strawberry.union("ChatEvent", description="One event of a streamed answer."),
]


IngestionEventType = Annotated[
    IngestionItem | NotFoundErrorType | ForbiddenErrorType | ValidationError,
    strawberry.union(
        "IngestionEvent", description="A file of an ingestion job as it is now, or why the subscription cannot run."
    ),
]


CLIENT_MESSAGE_ID = strawberry.argument(
    description="The client's id for this turn (1-100 printable characters, unique in the session). The same "
    "request sent again with it (graphql-ws subscribes again after a reconnect) follows the turn it started, or "
    "returns its stored outcome: never a second answer. The same id with another question is a conflict."
)


QUESTION = strawberry.argument(
    description="The question: not empty, at most the server's chat.max_message_chars characters (8000 by default); "
    "control characters and surrounding space are dropped."
)


def connection_lost(info: Info) -> Callable[[], bool]:
    """Whether the websocket is gone, asked when a listener leaves: a client that stops sends
    ``complete`` on an open socket; one whose connection dropped may come back with the same key."""
    socket = info.context.request

    def lost() -> bool:
        connected = WebSocketState.CONNECTED
        return not (isinstance(socket, WebSocket) and socket.client_state == socket.application_state == connected)

    return lost


Start = Callable[[Queued], Awaitable[Listener]]


async def _events(info: Info, start: Start) -> AsyncGenerator[ChatEventType, None]:
    places: asyncio.Queue[int] = asyncio.Queue()
    opening = asyncio.ensure_future(start(places.put_nowait))
    try:
        while not opening.done():  # waiting for a slot: tell the client its place in line
            place = asyncio.ensure_future(places.get())
            try:
                await asyncio.wait({opening, place}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                place.cancel()
            if place.done() and not place.cancelled() and not opening.done():
                yield ChatQueued(position=place.result())
        listener = opening.result()
    except RagchatError as exc:
        retry = exc.retry_after if isinstance(exc, BusyError) else None
        yield ChatError(
            failed_message_id=None, code=exc.code, message=exc.message, partial="", retry_after_seconds=retry
        )
        return
    except Exception:
        # The schema's error masking does not reach errors raised inside a stream: mask them here.
        request_id = info.context.request_id
        log.exception("request %s: the chat turn could not start", request_id)
        masked = f"Unexpected error (request {request_id}); it has been logged."
        yield ChatError(failed_message_id=None, code=ErrorCode.INTERNAL, message=masked, partial="")
        return
    finally:
        if not opening.done():  # the client left while waiting: leave the line (or end a turn begun meanwhile)
            await _abandon(opening)
    try:
        async for event in listener:  # tokens come batched (Listener: what piled up, and the window's)
            yield await _convert(info, event)
    finally:
        await listener.aclose()


async def _abandon(opening: asyncio.Future[Listener]) -> None:
    """Cancel a start still under way and wait for its end (it leaves the line, or stores a turn it
    had begun as cancelled); a listener it returned all the same leaves the turn at once."""
    opening.cancel()
    while not opening.done():
        with suppress(asyncio.CancelledError):  # we are on our way out already
            await asyncio.wait({opening})
    if not opening.cancelled() and opening.exception() is None:
        await opening.result().aclose()


async def _convert(info: Info, event: ChatEvent) -> ChatEventType:
    if isinstance(event, TokenEvent):
        return ChatToken(message_id=strawberry.ID(str(event.message_id)), text=event.text)
    if isinstance(event, SearchProgressEvent):
        return ChatSearchProgress(
            message_id=strawberry.ID(str(event.message_id)),
            number=event.number,
            budget=event.budget,
            query=event.query,
            rewritten=event.rewritten,
            kept=event.kept,
            best_score=event.best_score,
            decision=event.decision,
        )
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
                    location=s.location,
                    score=s.score,
                    rank=s.rank,
                    text=s.text,
                )
                for s in event.sources
            ],
            no_context=event.no_context,
            degraded=list(event.degraded),
        )
    if isinstance(event, ToolCallEvent | ToolResultEvent | ToolPreviewEvent):
        return _tool_event(event)
    if isinstance(event, DoneEvent):
        if event.answer is not None:  # as the turn stored it: no need to read it again
            return ChatDone(answer=types.ChatMessage.stored(info, event.answer))
        store = info.context.container.store
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


def _tool_event(event: ToolCallEvent | ToolResultEvent | ToolPreviewEvent) -> ChatEventType:
    message_id = strawberry.ID(str(event.message_id))
    if isinstance(event, ToolCallEvent):
        return ChatToolCall(message_id=message_id, call_id=event.call_id, name=event.name, arguments=event.arguments)
    stored = strawberry.ID(str(event.tool_call_id)) if event.tool_call_id is not None else None
    if isinstance(event, ToolPreviewEvent):
        return ChatToolPreview(
            message_id=message_id,
            call_id=event.call_id,
            tool_call_id=stored,
            name=event.name,
            arguments=event.arguments,
            preview=event.preview,
        )
    return ChatToolResult(
        message_id=message_id,
        call_id=event.call_id,
        tool_call_id=stored,
        name=event.name,
        ok=event.ok,
        error=event.error,
        summary=event.summary,
        size=event.size,
        truncated=event.truncated,
        ms=event.ms,
    )


@strawberry.type(description="Streams, over a websocket at /graphql (graphql-transport-ws).")
class Subscription:
    @strawberry.subscription(
        description="Ask a question and stream the answer: ChatRetrieval, then ChatToken pieces, then ChatDone or "
        "ChatError. In a session with tool groups, ChatToolCall / ChatToolResult (or ChatToolPreview) come between "
        "the tokens as the model calls tools. Over a websocket (graphql-transport-ws) at /graphql."
    )
    async def chat(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, strawberry.argument(description="The chat session to ask in.")],
        content: Annotated[str, QUESTION],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> AsyncGenerator[ChatEventType, None]:
        live = info.context.container.live

        async def start(queued: Queued) -> Listener:
            sid = parse_id(session_id, "sessionId")
            return await live.chat(
                sid, content, client_message_id, lost=connection_lost(info), queued=queued, caller=caller_of(info)
            )

        async with aclosing(_events(info, start)) as events:
            async for event in events:
                yield event

    @strawberry.subscription(
        description="Write an answer again, in place, and stream it like `chat` (after a failure, or to try anew)."
    )
    async def regenerate(
        self,
        info: Info,
        message_id: Annotated[strawberry.ID, strawberry.argument(description="The answer (an assistant message).")],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> AsyncGenerator[ChatEventType, None]:
        live = info.context.container.live

        async def start(queued: Queued) -> Listener:
            mid = parse_id(message_id, "messageId")
            return await live.regenerate(
                mid, client_message_id, lost=connection_lost(info), queued=queued, caller=caller_of(info)
            )

        async with aclosing(_events(info, start)) as events:
            async for event in events:
                yield event

    @strawberry.subscription(
        description="Follow ingestion: first each file as stored now (a client that reloads picks up where things "
        "are), then each file every time it changes state or embeds more chunks. With jobId: that job's files, "
        "ending once all have ended. With projectId: the files of the knowledge base's jobs that are unfinished "
        "now, and of every job queued later, until the client stops."
    )
    async def ingestion_progress(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID | None, strawberry.argument(description="A knowledge base.")] = None,
        job_id: Annotated[strawberry.ID | None, strawberry.argument(description="An ingestion job.")] = None,
    ) -> AsyncGenerator[IngestionEventType, None]:
        async with aclosing(job_resolvers.progress(info, project_id, job_id)) as events:
            async for event in events:
                yield event
