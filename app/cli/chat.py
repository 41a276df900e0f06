"""`ragchat ask`: ask from the command line; the answer streams, then its sources."""

from __future__ import annotations

import asyncio
import sys

import typer
from rich.console import Console

from app.cli.settings import settings_or_exit
from app.container import Container
from app.db.models import Citation
from app.errors import RagchatError
from app.rag.answer.mode import AnswerMode
from app.rag.search.stages import Stage
from app.services import batches, leases, projects, sessions
from app.services.chat import trace_model
from app.services.chat.events import DoneEvent, ErrorEvent, RetrievalEvent, TokenEvent
from app.services.sessions import SessionChanges

commands = typer.Typer()
console = Console(stderr=True)


async def _ask(container: Container, session_id: int, question: str) -> int:
    service = container.chat
    turn = await service.start(session_id, question)
    code = 0
    async for event in service.run(turn):
        if isinstance(event, RetrievalEvent):
            if event.no_context:
                console.print("[yellow]no relevant context: nothing passed the session's threshold[/]")
            for degradation in event.degraded:
                console.print(f"[yellow]degraded:[/] {degradation.message}")
        elif isinstance(event, TokenEvent):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, ErrorEvent):
            console.print(f"\n[red]failed ({event.code}):[/] {event.message}")
            code = 1
        elif isinstance(event, DoneEvent):
            sys.stdout.write("\n")
            message = sessions.message(container.store, event.message_id)
            trace = trace_model.parse(message.trace)
            _explain(trace, message.content)
            for cite in sorted(_citations(container, event.message_id), key=lambda c: (c.marker, c.id)):
                loc = cite.location
                where = f"page {loc['page']}" if loc.get("page") else f"lines {loc['line_start']}-{loc['line_end']}"
                sys.stdout.write(f"[{cite.marker}] {cite.document_name} {where} ({_score(cite.score)}, {cite.kind})\n")
            timings = trace.timings_ms if trace is not None else {}
            if Stage.FIRST_TOKEN in timings:
                console.print(f"[dim]first token {timings[Stage.FIRST_TOKEN]:.0f} ms[/]")
    return code


def _explain(trace: trace_model.RetrievalTrace | None, stored: str) -> None:
    """Say how the answer was written; when the guard replaced what streamed, print what was kept."""
    answer = trace.answer if trace is not None else None
    if answer is None:
        return
    guard = answer.guard
    if guard is not None and guard.original is not None:
        reasons = "; ".join(guard.reasons)
        console.print(f"[yellow]the answer guard changed the model's answer ({reasons}); stored answer:[/]")
        sys.stdout.write(stored + "\n")
    verdict = f", guard: {guard.decision}" if guard is not None else ""
    console.print(f"[dim]answer mode: {answer.mode}{verdict} ({answer.reason})[/]")


def _score(score: float | None) -> str:
    return f"score {score:.3f}" if score is not None else "no score"


def _citations(container: Container, message_id: int) -> list[Citation]:
    return batches.citations_by_message(container.store, [message_id])[0]


@commands.command()
def ask(
    question: str = typer.Argument(..., help="The question."),
    chat: int | None = typer.Option(None, "--session", "-s", help="Ask in this chat session."),
    project: str | None = typer.Option(None, "--project", "-p", help="Ask a knowledge base (new session)."),
    top_k: int | None = typer.Option(None, help="top_k for a new session."),
    threshold: float | None = typer.Option(None, help="threshold for a new session."),
    mode: AnswerMode | None = typer.Option(
        None,
        "--mode",
        case_sensitive=False,
        help="How answers are written: generative, extractive or auto (with --session, saved to it).",
    ),
) -> None:
    """Ask a question; prints the streamed answer and its sources."""
    if (chat is None) == (project is None):
        raise typer.BadParameter("give exactly one of --session or --project")
    container = Container.build(settings_or_exit())
    try:
        # The answer is this command's while it streams: a server leaves it alone, and fails it
        # as interrupted if the command is killed (app/services/leases.py). Taken first: it
        # refuses a database at another migration before anything is written.
        with leases.command_lease(container.store):
            if chat is None:
                found = projects.find(container.store, project or "")
                if found is None:
                    raise typer.BadParameter(f"no knowledge base named {project!r}")
                changes = SessionChanges(title=question[:80], top_k=top_k, threshold=threshold, answer_mode=mode)
                settings = container.settings
                chat = sessions.create(container.store, settings, container.chat_models, found.id, changes).id
            elif mode is not None:
                sessions.update(container.store, container.chat_models, chat, SessionChanges(answer_mode=mode))
            code = asyncio.run(_ask(container, chat, question))
    except RagchatError as exc:
        console.print(f"[red]{exc.message}[/]")
        code = 2
    finally:
        container.close()
    raise typer.Exit(code)
