"""`ragchat bench answers --dataset <folder>`: the docs-qa format — corpora of real documentation with
questions written by someone outside the team — asked through the same path a chat uses.

A dataset folder holds one folder per corpus, each with ``docs/`` (the documents), ``questions.txt``
(``question|facts ';'-separated|documents '/'-separated, or NONE``) and ``conversations.txt``
(``first question|follow-up|facts|documents``); ``#`` lines and blank lines are ignored. Each corpus
is ingested once, through the real ingestion path, into a scratch SQLite database; every single
question is asked in a new chat with the server's default session settings, and every conversation
is two turns of one chat. Judged as the dataset says:

- **fact**: an accepted fact is a substring of the answer once both are lower-cased, ``*`` removed
  and typographic apostrophes made plain;
- **document**: an expected document among those the answer cites (``any``), or the first it cites
  (``first``: the citation whose marker comes first in the text);
- **declined**: a question no document answers is declined in the product's own refusal wording
  (the extractive reply, or the generative no-context prompt's "do not cover");
- **follow-up fact**: the fact of a conversation's second answer (only the follow-up is scored);
- **topic changes**: each answerable question asked again as the second turn of a chat whose first
  question is the nearest one before it in the file about other documents — a standalone question
  on a new topic. Scored by its fact and by whether the first source the turn kept is one of its own
  documents (``retrieved first``): the earlier turn must not pull its document ahead.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from app.bench.answers import scratch_settings
from app.container import Container
from app.db import migrate
from app.db.models import ChatMessage, Citation
from app.errors import ValidationError
from app.rag.answer.extractive import NO_ANSWER
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.candidates import CandidateFate
from app.services import projects, sessions
from app.services.chat import trace_model
from app.services.chat.events import DoneEvent, ErrorEvent
from app.services.sessions import SessionChanges
from app.settings import Settings

# The product's refusals: the extractive reply, and what the no-context prompt tells a model to say.
REFUSALS = (NO_ANSWER.lower(), "do not cover", "don't cover", "does not cover")
_MARKER = re.compile(r"\[(\d{1,3})\]")


@dataclass(frozen=True)
class Item:
    """One scored question: a single question, or a conversation's follow-up (``earlier`` set)."""

    corpus: str
    question: str
    facts: tuple[str, ...]  # empty: the documents do not answer it
    documents: tuple[str, ...]  # document names without ".md"; empty for NONE
    earlier: str | None = None  # the conversation's first question
    topic_change: bool = False  # ``earlier`` is about other documents; this question stands alone

    @property
    def answerable(self) -> bool:
        return bool(self.documents)


@dataclass
class Scored:
    item: Item
    answer: str
    cited: list[str]  # document names without ".md", in order of first citation in the text
    fact: bool
    cited_any: bool
    cited_first: bool
    declined: bool
    no_context: bool
    answer_ms: float
    words: int
    retrieved_first: bool = False  # the first source the turn kept is an expected document


def _fields(path: Path) -> list[tuple[int, list[str]]]:
    if not path.exists():
        return []
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            out.append((number, [f.strip() for f in line.split("|")]))
    return out


def _names(raw: str) -> tuple[str, ...]:
    return () if raw.strip().upper() == "NONE" else tuple(d.strip() for d in raw.split("/") if d.strip())


def load_corpus(folder: Path) -> tuple[list[Item], list[Item]]:
    """The single questions and the follow-ups of one corpus folder; a malformed line is an error
    that names its file and line."""
    corpus = folder.name
    questions: list[Item] = []
    for number, parts in _fields(folder / "questions.txt"):
        if len(parts) != 3:
            raise ValidationError("dataset", f"{folder / 'questions.txt'}:{number}: expected 3 fields")
        facts = tuple(f.strip() for f in parts[1].split(";") if f.strip())
        documents = _names(parts[2])
        if bool(facts) != bool(documents):
            raise ValidationError("dataset", f"{folder / 'questions.txt'}:{number}: facts and documents disagree")
        questions.append(Item(corpus, parts[0], facts, documents))
    follow_ups: list[Item] = []
    for number, parts in _fields(folder / "conversations.txt"):
        if len(parts) != 4 or not parts[2] or not _names(parts[3]):
            raise ValidationError("dataset", f"{folder / 'conversations.txt'}:{number}: expected 4 fields")
        facts = tuple(f.strip() for f in parts[2].split(";") if f.strip())
        follow_ups.append(Item(corpus, parts[1], facts, _names(parts[3]), earlier=parts[0]))
    return questions, follow_ups


def topic_changes(questions: Sequence[Item]) -> list[Item]:
    """Each answerable question after the nearest question before it (cyclically) that names none of
    its documents: a chat that changes topic. Built from the file's order, so nothing is chosen."""
    answerable = [q for q in questions if q.answerable]
    found = []
    for i, item in enumerate(answerable):
        before = (answerable[(i - j) % len(answerable)] for j in range(1, len(answerable)))
        other = next((q for q in before if not set(q.documents) & set(item.documents)), None)
        if other is not None:
            found.append(replace(item, earlier=other.question, topic_change=True))
    return found


def corpora(dataset: Path, only: Sequence[str] = ()) -> list[Path]:
    found = sorted(p for p in dataset.iterdir() if p.is_dir() and (p / "docs").is_dir())
    if only:
        missing = set(only) - {p.name for p in found}
        if missing:
            raise ValidationError("corpus", f"no corpus {', '.join(sorted(missing))} in {dataset}")
        found = [p for p in found if p.name in only]
    if not found:
        raise ValidationError("dataset", f"{dataset} has no <corpus>/docs/ folder")
    return found


# -- judging ---------------------------------------------------------------------------------------
def plain(text: str) -> str:
    return text.lower().replace("*", "").replace("\u2019", "'").replace("\u2018", "'")


def has_fact(answer: str, facts: Sequence[str]) -> bool:
    text = plain(answer)
    return any(plain(f) in text for f in facts)


def declined(answer: str) -> bool:
    text = plain(answer)
    return any(r in text for r in REFUSALS)


def cited_in_order(answer: str, markers: dict[int, str]) -> list[str]:
    """Cited document names in the order the answer first cites them; citations whose marker the
    text never shows follow, by marker."""
    seen = [markers[int(m)] for m in _MARKER.findall(answer) if int(m) in markers]
    seen += [markers[m] for m in sorted(markers)]
    return list(dict.fromkeys(seen))


def judge(item: Item, answer: str, cited: list[str], no_context: bool, answer_ms: float) -> Scored:
    refused = declined(answer)
    return Scored(
        item,
        answer,
        cited,
        fact=item.answerable and has_fact(answer, item.facts),
        cited_any=item.answerable and bool(set(cited) & set(item.documents)),
        cited_first=item.answerable and bool(cited) and cited[0] in item.documents,
        declined=refused,
        no_context=no_context,
        answer_ms=answer_ms,
        words=0 if refused else len(_MARKER.sub("", answer).split()),
    )


# -- summary -----------------------------------------------------------------------------------------
def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarise(
    singles: Sequence[Scored], follow_ups: Sequence[Scored], topics: Sequence[Scored] = ()
) -> dict[str, object]:
    answerable = [s for s in singles if s.item.answerable]
    none = [s for s in singles if not s.item.answerable]
    times = [s.answer_ms for s in (*singles, *follow_ups)]
    lengths = [s.words for s in (*answerable, *follow_ups) if not s.declined]
    declined_answerable = sum(s.declined for s in answerable)
    declined_none = sum(s.declined for s in none)
    return {
        "answerable": len(answerable),
        "fact": sum(s.fact for s in answerable),
        "cited_any": sum(s.cited_any for s in answerable),
        "cited_first": sum(s.cited_first for s in answerable),
        "fact_and_cited": sum(s.fact and s.cited_any for s in answerable),
        "none_questions": len(none),
        "none_declined": declined_none,
        # The no-answer decision as a classifier of the unanswerable questions.
        "decline_precision": declined_none / (declined_none + declined_answerable)
        if declined_none + declined_answerable
        else None,
        "decline_recall": declined_none / len(none) if none else None,
        "answerable_declined": declined_answerable,
        "follow_ups": len(follow_ups),
        "follow_up_fact": sum(s.fact for s in follow_ups),
        "follow_up_cited": sum(s.cited_any for s in follow_ups),
        "topic_changes": len(topics),
        "topic_retrieved_first": sum(s.retrieved_first for s in topics),
        "topic_fact": sum(s.fact for s in topics),
        "median_ms": statistics.median(times) if times else None,
        "p95_ms": _percentile(times, 0.95),
        "median_words": statistics.median(lengths) if lengths else None,
        "p90_words": _percentile(lengths, 0.90),
    }


@dataclass
class CorpusRun:
    corpus: str
    documents: int
    chunks: int
    singles: list[Scored] = field(default_factory=list)
    follow_ups: list[Scored] = field(default_factory=list)
    topics: list[Scored] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return summarise(self.singles, self.follow_ups, self.topics)


@dataclass
class DatasetReport:
    dataset: str
    settings: dict[str, object]
    runs: list[CorpusRun] = field(default_factory=list)

    def total(self) -> dict[str, object]:
        return summarise(
            [s for r in self.runs for s in r.singles],
            [s for r in self.runs for s in r.follow_ups],
            [s for r in self.runs for s in r.topics],
        )

    def as_json(self) -> dict[str, object]:
        def row(s: Scored) -> dict[str, object]:
            out = asdict(s)
            out.update(out.pop("item"))
            return out

        return {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "dataset": self.dataset,
            "settings": self.settings,
            "total": self.total(),
            "corpora": {
                r.corpus: {
                    "documents": r.documents,
                    "chunks": r.chunks,
                    **r.summary(),
                    "questions": [row(s) for s in r.singles],
                    "conversations": [row(s) for s in r.follow_ups],
                    "topic_changes": [row(s) for s in r.topics],
                }
                for r in self.runs
            },
        }


# -- running -------------------------------------------------------------------------------------
def run(
    settings: Settings,
    dataset: Path,
    *,
    only: Sequence[str] = (),
    limit: int | None = None,
    progress: Callable[[Scored], None] | None = None,
) -> DatasetReport:
    """Every corpus of ``dataset`` (or ``only`` those), each ingested once into its own scratch
    database; ``limit`` asks only the first N single questions and N conversations of each."""
    report = DatasetReport(str(dataset), {"top_k": settings.rag.top_k, "threshold": settings.rag.threshold})
    for folder in corpora(dataset, only):
        questions, follow_ups = load_corpus(folder)
        asked = questions[:limit]
        conversations = [*follow_ups[:limit], *topic_changes(asked)]
        report.runs.append(_run_corpus(settings, folder, asked, conversations, progress))
    return report


def planned(dataset: Path, only: Sequence[str] = (), limit: int | None = None) -> int:
    total = 0
    for folder in corpora(dataset, only):
        questions, follow_ups = load_corpus(folder)
        total += len(questions[:limit]) + len(follow_ups[:limit]) + len(topic_changes(questions[:limit]))
    return total


def _run_corpus(
    settings: Settings,
    folder: Path,
    questions: Sequence[Item],
    follow_ups: Sequence[Item],
    progress: Callable[[Scored], None] | None,
) -> CorpusRun:
    files = sorted(p for p in (folder / "docs").iterdir() if p.is_file() and not p.name.startswith("."))
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-docs-qa-") as tmp:
        scratch = scratch_settings(settings, Path(tmp))
        migrate.upgrade(scratch.database_url, default_threshold=scratch.rag.threshold)
        container = Container.build(scratch)
        try:
            pid = projects.create(container.store, folder.name).id
            ingested = Ingestor(container.store, container.embedder, scratch.ingest).ingest(
                pid, [Source.from_bytes(p.name, p.read_bytes()) for p in files]
            )
            if failed := [f"{f.name}: {f.error}" for f in ingested.files if f.status == "failed"]:
                raise ValidationError("documents", "could not ingest " + "; ".join(failed))
            result = CorpusRun(folder.name, len(files), sum(f.chunks for f in ingested.files))
            asyncio.run(_ask(container, pid, questions, follow_ups, result, progress))
        finally:
            container.close()
    return result


async def _ask(
    container: Container,
    pid: int,
    questions: Sequence[Item],
    follow_ups: Sequence[Item],
    result: CorpusRun,
    progress: Callable[[Scored], None] | None,
) -> None:
    settings = container.settings
    model = container.chat_models.get(settings.llm.provider, settings.llm.model)
    load = getattr(model, "load", None)  # loading the local model is not part of the first answer's time
    if load is not None:
        await load()
    for n, item in enumerate([*questions, *follow_ups]):
        chat = sessions.create(
            container.store, settings, container.chat_models, pid, SessionChanges(title=f"{item.corpus} {n}")
        )
        if item.earlier is not None:
            await _turn(container, chat.id, item.earlier)
        message_id, elapsed = await _turn(container, chat.id, item.question)
        scored = _read(container, item, message_id, elapsed)
        if item.topic_change:
            result.topics.append(scored)
        else:
            (result.follow_ups if item.earlier is not None else result.singles).append(scored)
        if progress is not None:
            progress(scored)


async def _turn(container: Container, chat_id: int, question: str) -> tuple[int, float]:
    started = time.perf_counter()
    turn = await container.chat.start(chat_id, question)
    elapsed = 0.0
    async for event in container.chat.run(turn):  # read to its end: the stream frees its slot there
        if isinstance(event, DoneEvent | ErrorEvent):
            elapsed = (time.perf_counter() - started) * 1000
    return turn.message_id, elapsed


def _read(container: Container, item: Item, message_id: int, elapsed: float) -> Scored:
    with container.store.read() as db:
        message = db.get(ChatMessage, message_id)
        assert message is not None
        rows = db.scalars(select(Citation).where(Citation.message_id == message_id)).all()
        markers = {c.marker: re.sub(r"\.md$", "", c.document_name) for c in rows}
        trace = trace_model.parse(message.trace)
        content = message.content
    no_context = trace is not None and trace.no_context
    scored = judge(item, content, cited_in_order(content, markers), no_context, elapsed)
    kept = [c for c in trace.candidates if c.fate == CandidateFate.KEPT] if trace is not None else []
    scored.retrieved_first = bool(kept) and re.sub(r"\.md$", "", kept[0].document_name) in item.documents
    return scored
