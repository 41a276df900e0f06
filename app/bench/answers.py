"""`ragchat bench answers`: ask a question set with known answers through the real chat pipeline and
score what comes back, per answer mode and provider/model.

The documents next to the questions file are ingested through the real ingestion path into a
scratch SQLite database (deleted afterwards); each question is asked in a fresh chat session, so no
answer sees another's history; the stored answer, its citations and its trace are read back from
the database and scored by :mod:`app.bench.answer_scores`.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from app.bench import answer_scores as scores
from app.bench.answer_results import Answer, Report, Run, Target
from app.container import Container
from app.db import migrate
from app.db.enums import MessageStatus
from app.db.models import ChatMessage, Chunk, Citation
from app.errors import ValidationError
from app.llm.base import Embedder
from app.rag import prompting
from app.rag.answer.mode import AnswerMode
from app.rag.ingest.pipeline import Ingestor, Source
from app.services import projects, sessions
from app.services.chat import trace_model
from app.services.chat.events import DoneEvent, ErrorEvent, TokenEvent
from app.services.sessions import SessionChanges
from app.settings import Settings

if TYPE_CHECKING:
    from app.llm.base import ChatModels

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "answers" / "questions.jsonl"
MODES = ("generative", "extractive", "auto")
IDLE_TIMEOUT = 180.0


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str | None  # None: the documents do not answer it, and the right reply says so
    accept: tuple[str, ...]
    document: str | None
    kind: str


def load_questions(path: Path) -> list[Question]:
    """Read a questions.jsonl file; every problem is reported with its line number."""
    found: list[Question] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            item = Question(
                str(raw["id"]),
                str(raw["question"]),
                raw["answer"],
                tuple(raw.get("accept", ())),
                raw["document"],
                str(raw.get("kind", "lookup")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValidationError("questions", f"{path}:{number}: not a question ({exc})") from exc
        if (item.answer is None) != (item.document is None):
            raise ValidationError("questions", f"{path}:{number}: answer and document must both be set or both null")
        found.append(item)
    return found


def runnable_modes(session_fields: set[str]) -> tuple[str, ...]:
    """The modes a chat session can be set to: all three once sessions have ``answer_mode``; until
    then only generation, which is what every session does."""
    return MODES if "answer_mode" in session_fields else ("generative",)


def check_mode(mode: str, session_fields: set[str]) -> None:
    if mode not in MODES:
        raise ValidationError("mode", f"unknown answer mode {mode!r}; choose from {', '.join(MODES)}")
    if mode not in runnable_modes(session_fields):
        raise ValidationError(
            "mode",
            f"answer mode {mode!r} cannot run: chat sessions have no answer_mode setting in this version, "
            "so every answer is generative (run --mode generative)",
        )


def scratch_settings(settings: Settings, folder: Path) -> Settings:
    """``settings`` for a bench's scratch SQLite database in ``folder``, patient with slow answers:
    this scores answers, not patience — on a busy shared machine a 1,000-token prompt can take the
    local model longer than the server's 30 s idle timeout to read."""
    return settings.model_copy(
        update={
            "database_url": f"sqlite:///{folder / 'bench.db'}",
            "chat": settings.chat.model_copy(update={"idle_timeout": max(settings.chat.idle_timeout, IDLE_TIMEOUT)}),
        }
    )


def run(
    settings: Settings,
    questions: Sequence[Question],
    documents: Path,
    targets: Sequence[Target],
    *,
    embedder: Embedder | None = None,
    chat_models: ChatModels | None = None,
    progress: Callable[[Target, Answer], None] | None = None,
) -> Report:
    """Ingest ``documents`` into a scratch database and ask every question once per target."""
    session_fields = {f.name for f in fields(SessionChanges)}
    for target in targets:
        check_mode(target.mode, session_fields)
    files = sorted(p for p in documents.iterdir() if p.is_file() and not p.name.startswith("."))
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-answers-") as tmp:
        scratch = scratch_settings(settings, Path(tmp))
        migrate.upgrade(scratch.database_url, default_threshold=scratch.rag.threshold)
        container = Container.build(scratch, embedder=embedder, chat_models=chat_models)
        try:
            for target in targets:
                container.chat_models.validate(target.provider, target.model)
            pid = projects.create(container.store, "bench answers").id
            ingested = Ingestor(container.store, container.embedder, scratch.ingest).ingest(
                pid, [Source.from_bytes(p.name, p.read_bytes()) for p in files]
            )
            if failed := [f"{f.name}: {f.error}" for f in ingested.files if f.status == "failed"]:
                raise ValidationError("documents", "could not ingest " + "; ".join(failed))
            report = Report(str(documents), len(files), sum(f.chunks for f in ingested.files), _settings_used(scratch))
            for target in targets:
                mode = {"answer_mode": AnswerMode(target.mode)} if "answer_mode" in session_fields else {}
                report.runs.append(asyncio.run(_ask_all(container, pid, target, mode, questions, progress)))
        finally:
            container.close()
    return report


def _settings_used(settings: Settings) -> dict[str, object]:
    return {
        "max_answer_tokens": settings.llm.max_answer_tokens,
        "idle_timeout_s": settings.chat.idle_timeout,
        "temperature": settings.llm.temperature,
        "context_window": settings.llm.context_window,
        "top_k": settings.rag.top_k,
        "threshold": settings.rag.threshold,
        "retrieval_mode": settings.rag.mode,
        "chunk_tokens": settings.ingest.chunk_tokens,
        "embedder": f"{settings.embedder.provider}/{settings.embedder.model}",
    }


async def _ask_all(
    container: Container,
    pid: int,
    target: Target,
    mode: dict[str, Any],  # {"answer_mode": ...} once sessions have the setting
    questions: Sequence[Question],
    progress: Callable[[Target, Answer], None] | None,
) -> Run:
    model = container.chat_models.get(target.provider, target.model)
    load = getattr(model, "load", None)  # the local model loads in seconds: not in the first answer's time
    if load is not None:
        await load()
    detector = scores.EchoDetector.from_prompt_files(prompting.PROMPTS)
    result = Run(target)
    for item in questions:
        changes = replace(SessionChanges(title=item.id, provider=target.provider, model=target.model), **mode)
        chat = sessions.create(container.store, container.settings, container.chat_models, pid, changes)
        started = time.perf_counter()
        first: float | None = None
        turn = await container.chat.start(chat.id, item.question)
        elapsed = 0.0
        async for event in container.chat.run(turn):  # read to its end: the stream frees its slot there
            if isinstance(event, TokenEvent) and first is None:
                first = (time.perf_counter() - started) * 1000
            elif isinstance(event, DoneEvent | ErrorEvent):
                elapsed = (time.perf_counter() - started) * 1000
        answer = _score(container, item, turn.message_id, detector, first, elapsed)
        result.answers.append(answer)
        if progress is not None:
            progress(target, answer)
    return result


def _score(
    container: Container,
    item: Question,
    message_id: int,
    detector: scores.EchoDetector,
    first_token_ms: float | None,
    answer_ms: float,
) -> Answer:
    with container.store.read() as db:
        message = db.get(ChatMessage, message_id)
        assert message is not None
        cited = list(db.scalars(select(Citation).where(Citation.message_id == message_id)))
        trace = trace_model.parse(message.trace)
        given = trace.source_chunk_ids if trace is not None else None
        chunk_ids = [c.chunk_id for c in cited if c.chunk_id is not None] or list(given or [])
        texts = dict(db.execute(select(Chunk.id, Chunk.text).where(Chunk.id.in_(chunk_ids))).tuples().all())
    content = message.content
    written = _written(trace)
    documents = list(dict.fromkeys(c.document_name for c in cited))
    unsupported, origin = _unsupported(content, written.guard, [texts.get(i, "") for i in chunk_ids])
    model_text = written.model_text(content)
    return Answer(
        id=item.id,
        kind=item.kind,
        question=item.question,
        expected=item.answer,
        document=item.document,
        answer=content,
        status=message.status,
        error=message.error,
        cited_documents=documents,
        no_context=trace is not None and trace.no_context,
        contains_fact=message.status is MessageStatus.COMPLETE
        and scores.contains_fact(content, item.answer, item.accept),
        right_document=scores.is_no_answer(content) if item.answer is None else item.document in documents,
        degenerate=scores.degenerate(content),
        echoed=detector.echoed(content),
        unsupported=unsupported,
        unsupported_from=origin,
        first_token_ms=first_token_ms,
        answer_ms=answer_ms,
        mode_used=written.mode,
        guard=written.decision,
        model_text=model_text,
        model_contains_fact=None if model_text is None else scores.contains_fact(model_text, item.answer, item.accept),
        model_degenerate=None if model_text is None else scores.degenerate(model_text),
        model_echoed=None if model_text is None else detector.echoed(model_text),
    )


@dataclass(frozen=True)
class _Written:
    """How the trace says the answer was written (its ``answer`` entry; empty before answer modes)."""

    mode: str | None
    guard: trace_model.TraceGuard | None
    original: str | None

    @property
    def decision(self) -> str | None:
        return self.guard.decision if self.guard is not None else None

    def model_text(self, stored: str) -> str | None:
        """What the chat model wrote: the guard's copy when it changed the text, else the stored text;
        None for an extractive answer."""
        if self.mode == "extractive":
            return None
        return self.original if self.original is not None else stored


def _written(trace: trace_model.RetrievalTrace | None) -> _Written:
    entry = trace.answer if trace is not None else None
    if entry is None:
        return _Written(None, None, None)
    guard = entry.guard
    return _Written(entry.mode, guard, guard.original if guard is not None else None)


def _unsupported(content: str, guard: trace_model.TraceGuard | None, sources: list[str]) -> tuple[int, str]:
    """The answer guard's own count when it judged the stored text, else word overlap with the sources."""
    if guard is not None and guard.decision in ("pass", "flagged"):
        return guard.unsupported_sentences, "guard"
    return len(scores.unsupported_sentences(content, sources)), "overlap"
