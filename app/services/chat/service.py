"""The chat engine: one user message in, a grounded, cited answer streamed out, with a trace.

Stages (each timed into the trace): sanitize -> a generation slot of the session's provider
(app/services/chat/slots.py; none for an extractive answer) -> persist the question -> retrieve (embed,
search, threshold, top_k) -> token budget -> prompt -> generate (streamed, idle and total timeouts)
-> citations -> persist the answer. The question is stored before any model runs; the answer is
stored complete or failed (with whatever text had streamed), never lost. A question that waited
for a slot in vain (BusyError), or whose caller left while it waited, is not stored at all: nothing
was written, so sending it again is safe. Retrieval finishes before streaming starts, so no
database connection is held while tokens flow.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import anyio
import anyio.to_thread

from app.db.database import Database
from app.db.enums import CitationKind
from app.errors import (
    ErrorCode,
    ProviderError,
    ProviderTimeoutError,
    RagchatError,
    StorageError,
    UnusableAnswerError,
)
from app.llm.base import (
    ChatModel,
    ChatModels,
    Embedder,
    GenerationOptions,
    Reranker,
    TextDelta,
    Usage,
)
from app.rag import prompting
from app.rag.answer import budget, citations, extractive, guard
from app.rag.answer import mode as answer_mode
from app.rag.answer.mode import AnswerMode, ModeChoice
from app.rag.sanitize import clean_message
from app.rag.search import conversation
from app.rag.search.candidates import Candidate
from app.rag.search.degradation import DegradationReason
from app.rag.search.retrieval import RetrievalResult
from app.rag.search.stages import Stage
from app.services.chat import answer as chat_answer
from app.services.chat import gate as chat_gate
from app.services.chat import shared_slots, turn_search
from app.services.chat import store as chat_store
from app.services.chat import tools as chat_tools
from app.services.chat.events import (
    ChatEvent,
    DoneEvent,
    ErrorEvent,
    RetrievalEvent,
    SearchProgressEvent,
    SourceRef,
    StoredAnswer,
    TokenEvent,
    ToolEvent,
)
from app.services.chat.log import TurnLog
from app.services.chat.slots import Queued, Slot, SlotPools
from app.services.chat.step_deadline import StepDeadline
from app.services.chat.store import SessionSnapshot, Turn
from app.services.chat.trace import TraceBuilder
from app.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
Settled = tuple[str, list[tuple[SourceRef, CitationKind]]]  # an answer's final text and its citations
CANCELLED = "cancelled: the client disconnected before the answer finished"


class ChatService:
    def __init__(
        self,
        store: Database,
        settings: Settings,
        embedder: Callable[[], Embedder],
        models: ChatModels,
        *,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.reranker = reranker  # the operator's rerank endpoint (RAGCHAT_RERANK__URL), if any
        self.settings = settings
        # Embedding waits outside the turn's gate (app/services/chat/gate.py).
        self.embedder = chat_gate.ungated(embedder)
        self.models = models
        # The caps on answers generated at once, per provider. A slot is taken before the turn (and
        # its message id) exists and given back by whichever of _begin, abandon and run ends the
        # turn, often in another task: held here by answer id meanwhile. Event loop only.
        self.slots = SlotPools(settings.chat, models, shared=shared_slots.shared_folder())
        self._held: dict[int, Slot] = {}

    # -- admission ---------------------------------------------------------------------------
    @property
    def generations_in_flight(self) -> int:
        """How many turns hold a generation slot now (started and not yet ended), all providers."""
        return self.slots.in_use

    async def _slot(self, chat: SessionSnapshot, queued: Queued | None) -> Slot | None:
        """The slot a turn of ``chat`` needs: none for an extractive answer (no model runs), nor for
        one that cannot run (its model is no longer valid: run() stores that failure)."""
        try:
            if self._choose(chat).used is AnswerMode.EXTRACTIVE:
                return None
        except RagchatError:
            return None
        return await self.slots.acquire(chat.provider, chat.model, queued)

    def _release(self, turn: Turn) -> None:
        slot = self._held.pop(turn.message_id, None)
        if slot is not None:
            slot.release()

    def question(self, content: str) -> str:
        """The message as it will be stored and sent; raises ValidationError."""
        return clean_message(content, self.settings.chat.max_message_chars)

    async def start(
        self,
        session_id: int,
        content: str,
        client_key: str | None = None,
        queued: Queued | None = None,
        chat: SessionSnapshot | None = None,
    ) -> Turn:
        """Validate, take a generation slot (waiting in line up to chat.queue_timeout, ``queued``
        told the place) and store the question. Raises before anything is written when the input
        is bad or no slot came free (BusyError). ``chat``: the session's settings as the caller
        just read them, to choose the slot without reading them again."""
        turns = self.settings.chat.history_turns
        question = self.question(content)
        return await self._begin(
            chat or partial(chat_store.settings_of, self.store, session_id),
            partial(chat_store.begin, self.store, session_id, question, turns, client_key),
            queued,
        )

    async def start_regenerate(
        self, message_id: int, client_key: str | None = None, queued: Queued | None = None
    ) -> Turn:
        turns = self.settings.chat.history_turns
        return await self._begin(
            partial(chat_store.settings_for_answer, self.store, message_id),
            partial(chat_store.begin_regenerate, self.store, message_id, turns, client_key),
            queued,
        )

    async def _begin(
        self,
        settings_of: SessionSnapshot | Callable[[], SessionSnapshot],
        begin: Callable[[], Turn],
        queued: Queued | None,
    ) -> Turn:
        """Take a slot for the session's provider, then store the turn's first rows. Whoever stores a
        placeholder answer finishes it: when the caller is cancelled while the rows are being
        written, they are written anyway, then the answer is stored as cancelled and the slot freed.
        (A session whose provider is changed while its question waits runs with the new one, on
        the slot it waited for.)"""
        if not isinstance(settings_of, SessionSnapshot):  # not read yet
            settings_of = await chat_gate.run(settings_of)
        slot = await self._slot(settings_of, queued)
        job = asyncio.ensure_future(chat_gate.run(begin))
        try:
            turn = await asyncio.shield(job)
        except asyncio.CancelledError:
            started = await _outcome(job)
            if started is None:
                _free(slot)
            else:
                self._keep(started, slot)
                await self.abandon(started)
            raise
        except BaseException:
            _free(slot)
            raise
        self._keep(turn, slot)
        return turn

    def _keep(self, turn: Turn, slot: Slot | None) -> None:
        if slot is not None:
            self._held[turn.message_id] = slot

    async def abandon(self, turn: Turn) -> None:
        """End a started turn that will not run: its answer is stored as cancelled, its slot freed."""
        try:
            await self._fail(turn, [], CANCELLED, TraceBuilder(turn, self.settings))
        finally:
            self._release(turn)

    # -- the turn ----------------------------------------------------------------------------
    async def run(self, turn: Turn) -> AsyncIterator[ChatEvent]:
        """Run a started turn to its end. Always releases the slot; always leaves the answer
        stored as complete or failed, also when the client goes away mid-stream."""
        trace = TraceBuilder(turn, self.settings)
        parts: list[str] = []
        stored = False  # once the answer is stored, closing the stream changes nothing
        ended = TurnLog(turn, trace)  # the turn's log line, whichever way it ends
        try:
            choice = self._choose(turn.chat)
            searched: list[_Searched] = []
            async for progress in self._retrieve(turn, trace, searched):
                yield progress
            retrieval = searched[0] if searched else None
            candidates = retrieval.result.kept if retrieval else []
            continues = retrieval.continues if retrieval else None
            if choice.used is AnswerMode.EXTRACTIVE:
                with trace.stage(Stage.EXTRACT):
                    written = await self._extractive(turn, candidates, choice, trace, continues)
                yield RetrievalEvent(
                    turn.message_id, turn.user_message_id, written.sources, written.no_context, trace.degraded
                )
                for piece in extractive.pieces(written.answer.content):
                    parts.append(piece)
                    yield TokenEvent(turn.message_id, piece)
                settle = partial(_given, written.answer.content, written.answer.cited)
            else:
                model = trace.traced(self.models.get(turn.chat.provider, turn.chat.model))
                with trace.stage(Stage.BUDGET):  # tokenizing is CPU work (and may load a local model): off the loop
                    budgeted = partial(self._prompt, turn, model, candidates, trace)
                    prompt = await chat_gate.run(budgeted)
                sources = [_ref(source, candidates[source.number - 1]) for source in prompt.sources]
                no_context = turn.chat.rag.enable_rag and not sources
                trace.set_sources(sources, no_context)
                yield RetrievalEvent(turn.message_id, turn.user_message_id, sources, no_context, trace.degraded)
                answer_guard = guard.AnswerGuard(turn.question, prompt.sources, session_prompt=turn.chat.system_prompt)
                tokens = await self._tokens(turn, model, prompt, sources, answer_guard, trace)
                try:
                    async for item in tokens:
                        if not isinstance(item, str):  # a tool call's event, between tokens
                            yield item
                            continue
                        parts.append(item)
                        yield TokenEvent(turn.message_id, item)
                        if answer_guard.feed(item).stop:
                            break  # a loop: stop the model now rather than at its token limit
                finally:
                    await tokens.aclose()  # type: ignore[attr-defined]
                trace.set_sources(sources, no_context)  # with the passages tools read, if any
                settle = partial(self._checked, turn, answer_guard, sources, choice, trace)
            content, answer = await chat_gate.run(partial(self._finish, turn, settle, trace))
            stored = True
            ended.stored(answer is not None)
            if answer is not None:
                yield DoneEvent(turn.message_id, answer)
            else:
                gone = "the chat session was deleted while this answer was being written; it was not kept"
                yield ErrorEvent(turn.message_id, ErrorCode.NOT_FOUND, gone, content, stored=False)
        except RagchatError as exc:
            log.warning("chat turn %s failed: %s", turn.message_id, exc.message)
            ended.failed(exc.code)
            kept = await self._fail(turn, parts, exc.message, trace)
            stored = True
            yield ErrorEvent(turn.message_id, exc.code, exc.message, "".join(parts), stored=kept)
        except (asyncio.CancelledError, GeneratorExit):
            if not stored:
                await self._fail(turn, parts, CANCELLED, trace)
            raise
        except Exception:
            log.exception("chat turn %s failed unexpectedly", turn.message_id)
            ended.failed(ErrorCode.INTERNAL)
            kept = await self._fail(turn, parts, "internal error: the answer could not be generated", trace)
            stored = True
            yield ErrorEvent(turn.message_id, ErrorCode.INTERNAL, "internal error", "".join(parts), stored=kept)
        finally:
            self._release(turn)
            ended.end()

    def _choose(self, chat: SessionSnapshot) -> ModeChoice:
        capabilities = self.models.capabilities(chat.provider, chat.model)
        label = f"{chat.provider}/{chat.model}"
        return answer_mode.choose(chat.rag.answer_mode, capabilities, label, rag=chat.rag.enable_rag)

    async def _extractive(
        self,
        turn: Turn,
        candidates: list[Candidate],
        choice: ModeChoice,
        trace: TraceBuilder,
        continues: bool | None = None,
    ) -> _Extracted:
        """Quote the kept sources: no model, no token budget (nothing is sent anywhere).
        ``continues``: whether retrieval read the question with the earlier turns (None: it did not
        decide), so the answer step reads it the same way."""
        if not turn.chat.rag.enable_rag:
            trace.set_sources([], False)
            trace.set_answer(chat_answer.trace_entry(choice, sentences=0))
            return _Extracted([], False, chat_answer.Written(chat_answer.RAG_OFF, []))
        sources = [
            _ref(prompting.Source(i, c.document_name, _where(c), c.text), c) for i, c in enumerate(candidates, 1)
        ]
        earlier = conversation.user_turns(turn.history)
        extract = partial(chat_answer.extract, continues=continues)
        answer = await anyio.to_thread.run_sync(extract, turn.question, sources, self.embedder, earlier)
        written = chat_answer.quoted(answer, sources, turn.chat.rag.include_citations)
        no_context = not sources  # nothing passed the threshold: not the same as no sentence answering
        trace.set_sources(sources, no_context)
        trace.set_answer(chat_answer.trace_entry(choice, extracted=answer))
        if turn.chat.rag.include_citations:
            trace.set_citations(len(answer.used), 0, attributed=False)
        return _Extracted(sources, no_context, written)

    def _finish(
        self, turn: Turn, settle: Callable[[], Settled], trace: TraceBuilder
    ) -> tuple[str, StoredAnswer | None]:
        """In one worker thread: the answer's final text and citations (``settle``), then the answer
        stored with its trace and read back (None: its session was deleted meanwhile)."""
        content, cited = settle()
        return content, chat_store.finish(self.store, turn, content, trace.build(), cited)

    def _checked(
        self,
        turn: Turn,
        answer_guard: guard.AnswerGuard,
        sources: list[SourceRef],
        choice: ModeChoice,
        trace: TraceBuilder,
    ) -> Settled:
        """The guard's verdict on a generated answer decides what is stored (module docstring of
        app.services.chat.answer): the cleaned text, the extractive answer instead, or a failure.
        Runs in a worker thread (``_finish``)."""
        with trace.stage(Stage.GUARD):
            verdict = chat_answer.review(answer_guard, self.embedder)
        if verdict.decision is not guard.Decision.FALLBACK:
            original = answer_guard.text if verdict.text != answer_guard.text else None
            trace.set_answer(chat_answer.trace_entry(choice, verdict=verdict, original=original))
            return self._cite(turn, verdict.text, sources, trace)
        reasons = "; ".join(r.message for r in verdict.reasons)
        if not sources:
            trace.set_answer(
                chat_answer.trace_entry(
                    choice, verdict=verdict, decision=guard.Decision.REJECTED, original=answer_guard.text
                )
            )
            raise UnusableAnswerError(
                f"the model's answer was unusable ({reasons}) and there were no sources to quote instead; "
                "regenerate it, or use a more capable model",
                provider=turn.chat.provider,
                retryable=True,
            )
        log.info("answer %s: the guard replaced the model's answer (%s)", turn.message_id, reasons)
        with trace.stage(Stage.EXTRACT):
            answer = chat_answer.extract(turn.question, sources, self.embedder, conversation.user_turns(turn.history))
        written = chat_answer.quoted(answer, sources, turn.chat.rag.include_citations)
        trace.set_answer(
            chat_answer.trace_entry(choice, verdict=verdict, original=answer_guard.text, sentences=len(answer.evidence))
        )
        trace.set_citations(len(answer.used), 0, attributed=False)
        return written.content, written.cited

    async def _fail(self, turn: Turn, parts: list[str], error: str, trace: TraceBuilder) -> bool:
        """Store the failure; False when the answer's row is gone (or no longer this turn's)."""
        # Shielded: this must reach the database even while the turn is being cancelled.
        job = asyncio.ensure_future(
            chat_gate.run(partial(self._store_failure, turn, "".join(parts), error, trace.build()))
        )
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            return await job

    def _store_failure(self, turn: Turn, partial: str, error: str, trace: dict[str, object]) -> bool:
        """Store the failure; on a full disk, without the text and trace (a smaller write), and failing
        that, leave the answer 'streaming' for the next start to mark it interrupted."""
        message_id = turn.message_id
        try:
            return chat_store.fail(self.store, turn, partial, error, trace)
        except StorageError as exc:
            log.error("answer %s: the failure could not be stored (%s); retrying without its text", message_id, exc)
            try:
                return chat_store.fail(self.store, turn, "", error, None)
            except StorageError:
                log.error("answer %s stays 'streaming' until the next start marks it interrupted", message_id)
                return False

    async def _retrieve(
        self, turn: Turn, trace: TraceBuilder, out: list[_Searched]
    ) -> AsyncIterator[SearchProgressEvent]:
        """The turn's retrieval (app/services/chat/turn_search.py), streaming a progress event per
        pass; the result answered with is appended to ``out``. A failed search is a degradation."""
        chat = turn.chat
        if not chat.rag.enable_rag:
            return
        asker = turn_search.Asker(chat.project_id, chat.provider, chat.model, chat.rag)
        earlier = conversation.user_turns(turn.history)
        steps = turn_search.retrieval(
            self.store, self.embedder, self.settings, self.models, self.reranker, asker, turn.question, earlier
        )
        async for step in steps:
            if isinstance(step, turn_search.Pass):
                yield _progress(turn, step)
                continue
            if (exc := step.error) is not None:
                reason = exc.message if isinstance(exc, RagchatError) else f"search failed: {exc.orig}"
                log.warning("retrieval failed for message %s, answering without context: %s", turn.message_id, reason)
                trace.degrade(DegradationReason.RETRIEVAL_FAILED, f"no context: {reason}")
                return
            found = step.found
            assert found is not None  # a search that did not fail
            trace.set_search(turn_search.trace_entry(found, chat.rag))
            if found.rewrite.ms:
                trace.timing(Stage.REWRITE, found.rewrite.ms)
            if step.result is not None:
                trace.timing(Stage.RETRIEVAL_EMBED, found.embed_ms)  # the query's, before the passes' stages
                trace.set_retrieval(step.result)
                if step.stages.on:
                    trace.set_ranking(step.stages.ranking)
                out.append(_Searched(step.result, _continues(found)))

    def _prompt(self, turn: Turn, model: ChatModel, kept: list[Candidate], trace: TraceBuilder) -> budget.Prompt:
        sources = [prompting.Source(i, c.document_name, _where(c), c.text) for i, c in enumerate(kept, start=1)]
        prompt = budget.build(
            model,
            session_prompt=turn.chat.system_prompt,
            history=turn.history,
            question=turn.question,
            sources=sources,
            rag=turn.chat.rag.enable_rag,
            cite=turn.chat.rag.include_citations,
            answer_reserve=min(self.settings.llm.max_answer_tokens, model.context_window // 2),
        )
        trace.set_budget(prompt.report)  # which sources it cut: the trace shows them as over budget
        return prompt

    async def _tokens(
        self,
        turn: Turn,
        model: ChatModel,
        prompt: budget.Prompt,
        sources: list[SourceRef],
        answer_guard: guard.AnswerGuard,
        trace: TraceBuilder,
    ) -> AsyncIterator[str | ToolEvent]:
        """The answer's pieces: the tool loop's (app/services/chat/tools.py) when the session offers
        tools, which adds passages tools read to ``sources`` and the guard's; else the model's."""
        offered = await chat_tools.prepare(turn, self.store, self.embedder, self.settings, self.models, model, trace)
        if offered is None:
            return self._generate(model, prompt, trace)
        book = chat_tools.Sources(sources, answer_guard.sources)
        return chat_tools.run(offered, turn, prompt, book, self.store, self.embedder, self.settings, trace)

    async def _generate(self, model: ChatModel, prompt: budget.Prompt, trace: TraceBuilder) -> AsyncIterator[str]:
        limits = self.settings.chat
        options = GenerationOptions(max_tokens=prompt.report.answer_reserve, temperature=self.settings.llm.temperature)
        stream = model.stream(prompt.messages, options)
        started = time.perf_counter()
        steps = StepDeadline()  # one timer for the stream, not one per token
        deadline = steps.time() + limits.total_timeout
        first = True
        try:
            while True:
                now = steps.time()
                remaining = deadline - now
                # The first token waits for the prompt to be read; later ones only for the next token.
                wait = limits.first_token_timeout if first else limits.idle_timeout
                idle_bound = wait <= remaining
                try:
                    # Not asyncio.wait_for: on 3.11 it swallows a cancellation that arrives as the token
                    # does, and a turn whose client left would then run on (and stay 'streaming').
                    event = await steps.step(anext(stream), now + max(min(wait, remaining), 0.001))
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    what = (
                        f"no {'first ' if first else ''}token within {wait:g} s"
                        if idle_bound
                        else (f"the answer did not finish within {limits.total_timeout:g} s")
                    )
                    raise ProviderTimeoutError(
                        f"{model.provider}/{model.model}: {what}", provider=model.provider
                    ) from exc
                if isinstance(event, TextDelta) and event.text:
                    if first:
                        trace.timing(Stage.FIRST_TOKEN, (time.perf_counter() - started) * 1000)
                        first = False
                    yield event.text
                elif isinstance(event, Usage):
                    trace.set_usage(event)
        finally:
            steps.close()
            await stream.aclose()  # type: ignore[attr-defined]
            trace.timing(Stage.GENERATE, (time.perf_counter() - started) * 1000)

    def _cite(self, turn: Turn, answer: str, sources: list[SourceRef], trace: TraceBuilder) -> Settled:
        if not turn.chat.rag.include_citations or not sources:
            trace.set_citations(0, 0, attributed=False)
            return answer, []
        with trace.stage(Stage.CITATIONS):
            parsed = citations.parse(answer, len(sources))
            kind = CitationKind.MODEL
            if not parsed.used:
                parsed = self._attribute(parsed.text, [s.text for s in sources])
                kind = CitationKind.ATTRIBUTED
        trace.set_citations(len(parsed.used), parsed.invalid, attributed=kind is CitationKind.ATTRIBUTED)
        return parsed.text, [(sources[n - 1], kind) for n in parsed.used]

    def _attribute(self, answer: str, sources: list[str]) -> citations.Parsed:
        """Attribution by embeddings and words; by words alone when the embedder is unavailable."""
        try:
            embedder = self.embedder()
            return citations.attribute(answer, sources, chat_answer.cached_embed(embedder))
        except ProviderError as exc:
            log.warning("attribution without embeddings: %s", exc.message)
            return citations.attribute(answer, sources, None)


def _given(content: str, cited: list[tuple[SourceRef, CitationKind]]) -> Settled:
    return content, cited


def _progress(turn: Turn, step: turn_search.Pass) -> SearchProgressEvent:
    return SearchProgressEvent(
        turn.message_id,
        step.number,
        step.budget,
        step.queries[0],
        step.rewritten,
        step.kept,
        step.best_score,
        step.decision,
    )


def _free(slot: Slot | None) -> None:
    if slot is not None:
        slot.release()


async def _outcome(job: asyncio.Future[T]) -> T | None:
    """Wait for ``job`` to finish, whatever cancellations arrive meanwhile; its result, or None."""
    while not job.done():
        with suppress(Exception, asyncio.CancelledError):
            await asyncio.shield(job)
    return None if job.cancelled() or job.exception() is not None else job.result()


@dataclass(frozen=True)
class _Searched:
    result: RetrievalResult  # the pass answered with
    continues: bool | None  # retrieval read the message with the earlier turns (None: cues decide)


def _continues(found: turn_search.TurnSearch) -> bool | None:
    """Whether the answer step should read the message with the earlier turns, as retrieval did.
    Decided only when retrieval probed the message alone (it had no cue either way): a message that
    finds no passage by itself ("how long does the money take to arrive?") is a follow-up to be read
    in the conversation, one that does is a new topic. Otherwise (no earlier turns, a cue such as
    "and ..." or a pronoun, or the model's standalone rewrite) the answer step's own cues decide."""
    if found.rewrite.query is not None or found.standalone_score is None:
        return None
    return bool(found.query.earlier)


@dataclass(frozen=True)
class _Extracted:
    sources: list[SourceRef]
    no_context: bool  # RAG was on and no source was kept
    answer: chat_answer.Written


def _where(candidate: Candidate) -> str:
    loc = candidate.location
    where = f"page {loc.page}" if loc.page else f"lines {loc.line_start}-{loc.line_end}"
    return f"{where}, {loc.heading_path}" if loc.heading_path else where


def _ref(source: prompting.Source, candidate: Candidate) -> SourceRef:
    return SourceRef(
        source.number,
        candidate.chunk_id,
        candidate.document_id,
        candidate.document_name,
        candidate.location,
        candidate.score,
        candidate.fused_rank,
        candidate.text,
    )
