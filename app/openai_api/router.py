"""``GET /v1/models`` and ``POST /v1/chat/completions``: the OpenAI chat-completions protocol over
the same chat turns as GraphQL — the same services, settings, guard, citations, traces and access
rules, no second pipeline.

A model names a knowledge base the caller sees (``ragchat/<name as a slug>``, or
``ragchat/<id>``). The request's last message is the question; the messages before it are the
conversation it continues (stored as the new chat's earlier turns, so history-aware retrieval reads
them as it reads any chat's). Each request is a chat session of the caller's in that knowledge base:
kept when ``ragchat.store`` is true (its id and the answer's id come back, so the trace can be read
through GraphQL), deleted once answered otherwise; ``ragchat.session_id`` asks in an existing chat
instead. The answer's citations come back in the ``ragchat`` extension field (``[n]`` markers stay
in the text). Auth is the perimeter's, as for GraphQL: bearer keys (server or personal), the session
cookie.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from app.errors import BusyError, RagchatError
from app.openai_api import wire
from app.services import projects, sessions
from app.services.chat.events import DoneEvent, ErrorEvent, RetrievalEvent, TokenEvent
from app.services.chat.live import Listener
from app.services.chat.store import title_of
from app.services.people.access import Caller, CallerKind
from app.services.sessions import SessionChanges

log = logging.getLogger("ragchat.openai")

MODELS_PATH = "/v1/models"
COMPLETIONS_PATH = "/v1/chat/completions"
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-") or "kb"


def _model_ids(rows: list[Any]) -> dict[str, int]:
    """Model id -> knowledge base id: by slug where the slug is unique among them, always by id."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[slug(row.name)] = counts.get(slug(row.name), 0) + 1
    named = {f"{wire.MODEL_PREFIX}{slug(r.name)}": r.id for r in rows if counts[slug(r.name)] == 1}
    return named | {f"{wire.MODEL_PREFIX}{r.id}": r.id for r in rows}


def _caller(request: Request) -> Caller:
    caller = request.scope.get("state", {}).get("caller")
    if not isinstance(caller, Caller) or caller.kind == CallerKind.ANONYMOUS:
        raise _Refused(
            401,
            wire.error_body(
                "sign in or send 'Authorization: Bearer <key>'", "invalid_request_error", "invalid_api_key"
            ),
        )
    return caller


class _Refused(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body["error"]["message"])
        self.status, self.body = status, body


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status, headers=headers)


def _of(error: Exception) -> JSONResponse:
    if isinstance(error, _Refused):
        return _json(error.status, error.body, {"WWW-Authenticate": "Bearer"} if error.status == 401 else None)
    if isinstance(error, wire.BadRequest):
        return _json(400, wire.error_body(error.message, "invalid_request_error", "invalid_request", error.param))
    if isinstance(error, RagchatError):
        status, body = wire.of_error(error)
        headers = {"Retry-After": str(error.retry_after)} if isinstance(error, BusyError) else None
        return _json(status, body, headers)
    raise error


def openai_routes() -> APIRouter:
    router = APIRouter()

    @router.get(MODELS_PATH)
    async def models(request: Request) -> JSONResponse:
        try:
            caller, store = _caller(request), request.app.state.container.store
            rows = await anyio.to_thread.run_sync(lambda: projects.visible(store, caller=caller))
        except (_Refused, RagchatError) as exc:
            return _of(exc)
        by_id = {r.id: r for r in rows}
        listed = [
            {"id": model, "object": "model", "created": int(by_id[kb].created_at.timestamp()), "owned_by": "ragchat",
             "ragchat": {"knowledge_base_id": str(kb), "name": by_id[kb].name}}
            for model, kb in _model_ids(rows).items()
        ]  # fmt: skip
        return _json(200, {"object": "list", "data": listed})

    @router.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Any:
        container = request.app.state.container
        try:
            caller = _caller(request)
            try:
                body = await request.json()
            except ValueError:
                raise wire.BadRequest("the body must be a JSON object") from None
            asked = wire.parse(body)
            said = wire.conversation(asked)
            chat_id, kept = await _chat_for(container, asked, said, caller)
            try:
                listener = await container.live.chat(chat_id, said.question, None, lost=lambda: True, caller=caller)
            except BaseException:
                if not kept:
                    await _forget(container, chat_id, caller)
                raise
        except (_Refused, wire.BadRequest, RagchatError) as exc:
            return _of(exc)
        completion_id = f"chatcmpl-{listener.answer_id}"
        if asked.stream:
            return StreamingResponse(
                _stream(container, listener, completion_id, asked.model, chat_id, kept, caller),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        try:
            return await _whole(listener, completion_id, asked.model, chat_id, kept)
        finally:
            if not kept:
                await _forget(container, chat_id, caller)

    return router


async def _chat_for(
    container: Any, asked: wire.ChatRequest, said: wire.Conversation, caller: Caller
) -> tuple[int, bool]:
    """The chat the question is asked in, and whether it is kept after the answer."""
    store, settings = container.store, container.settings
    rows = await anyio.to_thread.run_sync(lambda: projects.visible(store, caller=caller))
    project_id = _model_ids(rows).get(asked.model)
    if project_id is None:  # missing, or not the caller's to see: the same answer
        message = f"the model {asked.model!r} does not exist or is not yours: GET {MODELS_PATH} lists yours"
        raise _Refused(404, wire.error_body(message, "invalid_request_error", "model_not_found", "model"))
    if asked.ragchat.session_id is not None:
        chat_id = _session_id(asked.ragchat.session_id)
        chat = await anyio.to_thread.run_sync(lambda: sessions.require_writable(store, chat_id, caller=caller))
        if chat.project_id != project_id:
            raise wire.BadRequest(f"chat session {chat_id} is not in {asked.model}", "ragchat.session_id")
        return chat_id, True
    limit = settings.chat.max_message_chars
    if any(len(text) > limit for _, text in said.history):  # stored as the chat's turns: held to a question's limit
        raise wire.BadRequest(f"an earlier message is over {limit:,} characters", "messages")
    changes = SessionChanges(title=title_of(said.question), system_prompt=said.system_prompt)
    chat = await anyio.to_thread.run_sync(
        lambda: sessions.create(
            store, settings, container.chat_models, project_id, changes, caller=caller, history=said.history
        )
    )
    return chat.id, asked.ragchat.store


def _session_id(value: str) -> int:
    if not value.isdigit():
        raise wire.BadRequest(f"{value!r} is not a chat session id", "ragchat.session_id")
    return int(value)


async def _forget(container: Any, chat_id: int, caller: Caller) -> None:
    """Delete a chat the client did not ask to keep (its answer is on the wire already)."""
    try:
        await anyio.to_thread.run_sync(lambda: sessions.delete(container.store, chat_id, caller=caller))
    except RagchatError as exc:  # already gone, or the store failed: the chat stays, said in the log
        log.warning("could not delete the unkept chat %s: %s", chat_id, exc)


def _extension(
    sources: list[Any], done: DoneEvent | None, chat_id: int, kept: bool, no_context: bool
) -> dict[str, Any]:
    stored = done.answer if done is not None else None
    cited = {c.marker for c in stored.citations} if stored is not None else set()
    extension: dict[str, Any] = {
        "citations": wire.citations(sources, cited),
        "no_context": no_context,
        "stored": kept,
    }
    if kept and done is not None:
        extension |= {"session_id": str(chat_id), "message_id": str(done.message_id)}
    return extension


async def _whole(listener: Listener, completion_id: str, model: str, chat_id: int, kept: bool) -> JSONResponse:
    sources: list[Any] = []
    no_context, done, text = False, None, []
    try:
        async for event in listener:
            if isinstance(event, RetrievalEvent):
                sources, no_context = event.sources, event.no_context
            elif isinstance(event, TokenEvent):
                text.append(event.text)
            elif isinstance(event, DoneEvent):
                done = event
            elif isinstance(event, ErrorEvent):
                return _json(*_stream_error(event))
    finally:
        await listener.aclose()
    content = done.answer.message.content if done is not None and done.answer is not None else "".join(text)
    return _json(
        200, wire.completion(completion_id, model, content, _extension(sources, done, chat_id, kept, no_context))
    )


def _stream_error(event: ErrorEvent) -> tuple[int, dict[str, Any]]:
    status, kind = wire.STATUS.get(event.code, (502, "api_error"))
    return status, wire.error_body(event.message, kind, event.code.value)


async def _stream(
    container: Any, listener: Listener, completion_id: str, model: str, chat_id: int, kept: bool, caller: Caller
) -> AsyncIterator[bytes]:
    def sse(body: dict[str, Any] | str) -> bytes:
        return f"data: {body if isinstance(body, str) else json.dumps(body)}\n\n".encode()

    sources: list[Any] = []
    no_context = False
    forget = not kept  # the chat still to delete once the client has its answer
    try:
        yield sse(wire.chunk(completion_id, model, {"role": "assistant", "content": ""}))
        async for event in listener:
            if isinstance(event, RetrievalEvent):
                sources, no_context = event.sources, event.no_context
            elif isinstance(event, TokenEvent):
                # Tokens already published behind this one go out with it: one chunk, not one each.
                text = event.text + listener.more_text()
                yield sse(wire.chunk(completion_id, model, {"content": text}))
            elif isinstance(event, DoneEvent):
                extension = _extension(sources, event, chat_id, kept, no_context)
                if event.answer is not None:
                    extension["content"] = event.answer.message.content  # the stored answer, as it was kept
                yield sse(wire.chunk(completion_id, model, {}, "stop", extension))
            elif isinstance(event, ErrorEvent):
                yield sse(_stream_error(event)[1])
        # The turn is over: an unkept chat goes before [DONE], so a client that read to the end
        # never finds it.
        await listener.aclose()
        if forget:
            forget = False
            await _forget(container, chat_id, caller)
        yield sse("[DONE]")
    finally:  # the client left early: it is told nothing more, and the unkept chat goes all the same
        await listener.aclose()
        if forget:
            await _forget(container, chat_id, caller)


__all__ = ["COMPLETIONS_PATH", "MODELS_PATH", "openai_routes"]
