"""Live chat turns: each runs in a task of its own and broadcasts what it streams to any number of
listeners, so a request repeated with the same client key (``clientMessageId``) re-attaches to the
turn it started instead of asking the model twice.

graphql-ws subscribes again after a reconnect, and a client may repeat a mutation whose answer it
lost. A repeat of a live turn gets everything streamed so far (the retrieval event and every token)
and then follows it; a repeat of a finished turn gets its stored outcome (a DoneEvent, or an
ErrorEvent for a failed answer). The same key with another question, or naming another message, is
a ConflictError. Keys are stored unique per session (``chat_messages.client_message_id``): a chat
key on the question, a regeneration's key on the answer it regenerates.

When a turn is cancelled (its answer stored as failed, "cancelled"): when its last listener leaves,
at once, unless the turn has a key and that listener's connection was lost (rather than the client
stopping with a graphql-ws ``complete`` on an open socket): then after ``chat.reattach_grace``
seconds in which nobody re-attached, so a client that reconnects and subscribes again finds it still
running. A turn without a key can never be re-attached to, so it never waits. A turn with a listener
runs on; regenerating an answer whose turn nobody listens to any more cancels that turn first.

With several server processes a client may re-attach to one that does not run its turn: that one
follows the turn through the database and sends its outcome, and a keyed turn is cancelled only
once nobody follows it from another process either (app/services/chat/follow.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol, cast

import anyio.to_thread

from app.db.database import Database
from app.db.enums import MessageStatus
from app.errors import BusyError, ConflictError, StorageError, ValidationError
from app.ops import draining
from app.services import sessions
from app.services.chat import follow as chat_follow
from app.services.chat import store as chat_store
from app.services.chat.events import ChatEvent, TokenEvent
from app.services.chat.slots import Queued
from app.services.chat.store import SessionSnapshot, Turn
from app.services.people.access import THE_SERVER, Caller
from app.settings import Settings

KEY_FIELD = "clientMessageId"
KEY_MAX = 100


def client_key(value: str | None) -> str | None:
    """A client's key for a turn, checked: 1 to 100 printable characters (None: no key)."""
    if value is not None and not (1 <= len(value) <= KEY_MAX and value.isprintable()):
        raise ValidationError(KEY_FIELD, f"must be 1 to {KEY_MAX} printable characters")
    return value


class LiveTurn:
    """A turn running in its own task: what it streamed so far, and how many listen."""

    def __init__(self, turn: Turn, *, keyed: bool) -> None:
        self.turn = turn
        self.keyed = keyed  # a client can re-attach to it
        self.events: list[ChatEvent] = []
        self.finished = False
        self.listeners = 0
        self.started = False
        self.cancel_requested = False
        self.task: asyncio.Task[None] | None = None
        self.orphaned: asyncio.TimerHandle | None = None  # the grace period's end, while nobody listens
        self.checking: asyncio.Task[None] | None = None  # whether another process follows it, before cancelling
        self._changed = asyncio.Event()

    def publish(self, event: ChatEvent) -> None:
        self.events.append(event)
        self._wake()

    def close(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    def cancel(self) -> None:
        # A task cancelled before its first step would never run the turn, and nothing would finish
        # its answer: such a task cancels itself once inside the turn (see LiveTurns._drive).
        if self.started and self.task is not None:
            self.task.cancel()
        else:
            self.cancel_requested = True


class Listener:
    """One client following a turn from its start: a live one, or a finished one's stored outcome.
    ``aclose`` leaves the turn; ``lost`` says, at that moment, whether the client's connection is gone."""

    def __init__(
        self,
        turns: LiveTurns,
        answer_id: int,
        live: LiveTurn | None,
        lost: Callable[[], bool],
        events: list[ChatEvent],
        *,
        window: float = 0.0,
    ) -> None:
        self.answer_id = answer_id
        self._turns, self._live, self._lost = turns, live, lost
        self._events = live.events if live is not None else events
        self._seen = 0
        self._closed = False
        self._window = window  # seconds: tokens within it of the last one sent go out together
        self._flushed: float | None = None  # when a token event was last returned
        if live is not None:
            turns.attached(live)

    def __aiter__(self) -> Listener:
        return self

    async def __anext__(self) -> ChatEvent:
        while not self._closed:
            if self._seen < len(self._events):
                self._seen += 1
                event = self._events[self._seen - 1]
                return await self._batch(event) if isinstance(event, TokenEvent) else event
            if self._live is None or self._live.finished:
                break
            await self._live.changed()
        raise StopAsyncIteration

    async def _batch(self, first: TokenEvent) -> TokenEvent:
        """``first`` with the tokens after it, as one event. Those already published always join (a
        client that fell behind catches up at once); with a window, a token that comes sooner than
        ``window`` after the last one sent waits for the window's end with those that follow it.
        The first token never waits, a token waits at most the window, and any other event (the
        answer's end, an error, a tool call) ends the batch at once, so a stop loses nothing."""
        parts = [first.text, self.more_text()]
        live, loop = self._live, asyncio.get_running_loop()
        if self._window > 0 and self._flushed is not None and live is not None:
            due = self._flushed + self._window
            # One timer per batch, not per token: the wait ends at the window's end or at the next event.
            while not self._closed and not live.finished and self._seen == len(self._events):
                remaining = due - loop.time()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        await live.changed()
                except TimeoutError:
                    break
                parts.append(self.more_text())
        self._flushed = loop.time()
        return TokenEvent(first.message_id, "".join(parts))

    def more_text(self) -> str:
        """The text of the token events already published after the one just returned, taken now:
        a client that fell behind gets them as one event (less work per token under load)."""
        parts = []
        while self._seen < len(self._events) and isinstance(self._events[self._seen], TokenEvent):
            parts.append(cast(TokenEvent, self._events[self._seen]).text)
            self._seen += 1
        return "".join(parts)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._live is not None:
                self._turns.left(self._live, lost=self._lost())


class Follower(Listener):
    """A client following a turn that another server process writes: its outcome, once stored."""

    def __init__(self, turns: LiveTurns, answer_id: int, lost: Callable[[], bool]) -> None:
        super().__init__(turns, answer_id, None, lost, [])
        self._store, self._settings = turns.engine.store, turns.engine.settings
        self._ended = False

    async def __anext__(self) -> ChatEvent:
        if self._ended or self._closed:
            raise StopAsyncIteration
        self._ended = True
        return await chat_follow.outcome(self._store, self._settings, self.answer_id)


class Engine(Protocol):
    """What the registry needs of the chat engine (``ChatService``): it starts the turns and runs
    them; the registry only keeps track of who follows them. The container joins the two, so the
    engine need not know the registry."""

    store: Database
    settings: Settings

    def question(self, content: str) -> str: ...

    async def start(
        self,
        session_id: int,
        content: str,
        client_key: str | None = None,
        queued: Queued | None = None,
        chat: SessionSnapshot | None = None,
    ) -> Turn: ...

    async def start_regenerate(
        self, message_id: int, client_key: str | None = None, queued: Queued | None = None
    ) -> Turn: ...

    def run(self, turn: Turn) -> AsyncIterator[ChatEvent]: ...


class LiveTurns:
    """The turns running in this process, by answer id (one registry per engine, built by the container)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._live: dict[int, LiveTurn] = {}
        self._opening: dict[tuple[object, ...], tuple[asyncio.Lock, list[int]]] = {}

    def _window(self) -> float:
        """The batching window of a stream starting now (a changed setting applies to the next one)."""
        return self.engine.settings.chat.stream_coalesce_ms / 1000

    @property
    def running(self) -> int:
        """The turns running in this process (a stopping server waits for them, app/ops/draining.py)."""
        return len(self._live)

    @staticmethod
    def _open() -> None:
        if draining.stopping():
            raise BusyError("this server is stopping and takes no new chat turns: retry in a moment", retry_after=1)

    async def chat(
        self,
        session_id: int,
        content: str,
        key: str | None,
        *,
        lost: Callable[[], bool],
        queued: Queued | None = None,
        caller: Caller = THE_SERVER,
    ) -> Listener:
        """Ask ``content`` in the session, or follow the turn ``key`` already names there. Raises
        (RagchatError) before anything streams: bad input, busy (or the server stopping), not found (or
        not the caller's to ask in), a key's conflict. ``queued`` is told the place in line while the
        turn waits for a generation slot."""
        self._open()
        # The access check's read is also the settings that choose the turn's generation slot.
        chat = await anyio.to_thread.run_sync(
            lambda: chat_store.snapshot(sessions.require_writable(self.engine.store, session_id, caller=caller))
        )
        key = client_key(key)
        if key is None:
            return self._listen(await self.engine.start(session_id, content, None, queued, chat), lost, keyed=False)
        question = self.engine.question(content)
        async with self._exclusive("chat", session_id, key):
            found = await anyio.to_thread.run_sync(chat_store.keyed, self.engine.store, session_id, key)
            if found is None:
                started = await self.engine.start(session_id, question, key, queued, chat)
                return self._listen(started, lost, keyed=True)
        if found.question != question:
            what = "another question" if found.question is not None else "a regeneration"
            raise ConflictError(f"clientMessageId {key!r} was already sent with {what} in this session")
        return await self._attach(found.answer_id, lost)

    async def regenerate(
        self,
        message_id: int,
        key: str | None,
        *,
        lost: Callable[[], bool],
        queued: Queued | None = None,
        caller: Caller = THE_SERVER,
    ) -> Listener:
        """Generate answer ``message_id`` again, or follow the regeneration ``key`` already names
        (the chat's owner only)."""
        self._open()
        await anyio.to_thread.run_sync(
            lambda: sessions.message(self.engine.store, message_id, caller=caller, change=True)
        )
        key = client_key(key)
        if key is None:
            return self._listen(await self._start_regenerate(message_id, None, queued), lost, keyed=False)
        async with self._exclusive("regenerate", message_id, key):
            found = await anyio.to_thread.run_sync(chat_store.keyed_for_message, self.engine.store, message_id, key)
            if found is None:
                return self._listen(await self._start_regenerate(message_id, key, queued), lost, keyed=True)
        if found.question is not None or found.answer_id != message_id:
            raise ConflictError(f"clientMessageId {key!r} was already sent for another message in this session")
        return await self._attach(message_id, lost)

    async def _start_regenerate(self, message_id: int, key: str | None, queued: Queued | None) -> Turn:
        orphan = self._live.get(message_id)
        if orphan is not None and orphan.listeners == 0:  # its client left: a regeneration replaces it
            orphan.cancel()
            while not orphan.finished:
                await orphan.changed()
        return await self.engine.start_regenerate(message_id, key, queued)

    async def _attach(self, answer_id: int, lost: Callable[[], bool]) -> Listener:
        live = self._live.get(answer_id)
        if live is not None:
            return Listener(self, answer_id, live, lost, [], window=self._window())
        # Not running here: finished (a live turn leaves the registry only once its answer is stored).
        answer = await anyio.to_thread.run_sync(sessions.message, self.engine.store, answer_id)
        if answer.status is MessageStatus.STREAMING:  # another process writes it: follow it there
            return Follower(self, answer_id, lost)
        return Listener(self, answer_id, None, lost, [chat_follow.stored_outcome(answer)])

    def _listen(self, turn: Turn, lost: Callable[[], bool], *, keyed: bool) -> Listener:
        # No await from the turn's start to its task: the task always runs the turn (and so finishes it).
        live = LiveTurn(turn, keyed=keyed)
        self._live[turn.message_id] = live
        live.task = asyncio.create_task(self._drive(live), name=f"chat turn {turn.message_id}")
        return Listener(self, turn.message_id, live, lost, [], window=self._window())

    async def _drive(self, live: LiveTurn) -> None:
        live.started = True
        if live.cancel_requested and live.task is not None:
            live.task.cancel()  # delivered at the turn's first await, where run() stores it as cancelled
        events = self.engine.run(live.turn)
        try:
            async for event in events:
                live.publish(event)
        finally:
            await events.aclose()  # type: ignore[attr-defined]
            self._live.pop(live.turn.message_id, None)
            live.close()

    def attached(self, live: LiveTurn) -> None:
        live.listeners += 1
        if live.orphaned is not None:
            live.orphaned.cancel()
            live.orphaned = None

    def left(self, live: LiveTurn, *, lost: bool) -> None:
        live.listeners -= 1
        if live.listeners or live.finished:
            return
        grace = self.engine.settings.chat.reattach_grace if lost and live.keyed else 0.0
        if grace > 0:
            live.orphaned = asyncio.get_running_loop().call_later(grace, self._orphan_expired, live)
        elif live.keyed:  # a client in another process may follow it (app/services/chat/follow.py)
            self._orphan_expired(live)
        else:
            live.cancel()

    def _orphan_expired(self, live: LiveTurn) -> None:
        live.orphaned = None
        if not live.listeners and not live.finished and live.checking is None:
            live.checking = asyncio.create_task(self._cancel_unless_followed(live), name="followed elsewhere?")

    async def _cancel_unless_followed(self, live: LiveTurn) -> None:
        """Cancel the orphaned turn, unless a client follows it from another process: then look again
        when that client's hold runs out."""
        try:
            ahead = await anyio.to_thread.run_sync(chat_follow.followed_for, self.engine.store, live.turn.message_id)
        except StorageError:
            ahead = 0.0  # nobody can follow it through a database that cannot be read
        finally:
            live.checking = None
        if live.listeners or live.finished:
            return
        if ahead > 0:
            live.orphaned = asyncio.get_running_loop().call_later(ahead + chat_follow.POLL, self._orphan_expired, live)
        else:
            live.cancel()

    @asynccontextmanager
    async def _exclusive(self, *scope: object) -> AsyncIterator[None]:
        """One opener at a time per key, so two copies of a request never both start a turn."""
        lock, users = self._opening.setdefault(scope, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._opening[scope]
