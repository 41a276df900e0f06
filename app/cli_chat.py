"""`ragchat ask`: ask from the command line; the answer streams, then its sources."""

from __future__ import annotations

import asyncio
import sys

import typer
from rich.console import Console
from sqlalchemy import select

from app.container import Container
from app.db.models import Citation
from app.errors import RagchatError
from app.services import projects, sessions
from app.services.chat_events import DoneEvent, ErrorEvent, RetrievalEvent, TokenEvent
from app.services.sessions import SessionChanges

console = Console(stderr=True)


async def _ask(container: Container, session_id: int, question: str) -> int:
    service = container.chat
    turn = await service.start(session_id, question)
    code = 0
    async for event in service.run(turn):
        if isinstance(event, RetrievalEvent):
            if event.no_context:
                console.print("[yellow]no relevant context: nothing passed the session's threshold[/]")
            for reason in event.degraded:
                console.print(f"[yellow]degraded:[/] {reason}")
        elif isinstance(event, TokenEvent):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, ErrorEvent):
            console.print(f"\n[red]failed ({event.code}):[/] {event.message}")
            code = 1
        elif isinstance(event, DoneEvent):
            sys.stdout.write("\n")
            message = sessions.message(container.db, event.message_id)
            cites = {c.marker: c for c in _citations(container, event.message_id)}
            for marker, cite in sorted(cites.items()):
                loc = cite.location
                where = f"page {loc['page']}" if loc.get("page") else f"lines {loc['line_start']}-{loc['line_end']}"
                sys.stdout.write(f"[{marker}] {cite.document_name} {where} (score {cite.score:.3f}, {cite.kind})\n")
            timings = (message.trace or {}).get("timingsMs") or {}
            assert isinstance(timings, dict)
            console.print(f"[dim]{len(cites)} citations; first token {timings.get('first_token', 0):.0f} ms[/]")
    return code


def _citations(container: Container, message_id: int) -> list[Citation]:
    with container.db.read() as db:
        return list(db.scalars(select(Citation).where(Citation.message_id == message_id)))


def register(cli: typer.Typer, settings_or_exit: object) -> None:
    @cli.command()
    def ask(
        question: str = typer.Argument(..., help="The question."),
        session: int | None = typer.Option(None, "--session", "-s", help="Ask in this chat session."),
        project: str | None = typer.Option(None, "--project", "-p", help="Ask a knowledge base (new session)."),
        top_k: int | None = typer.Option(None, help="top_k for a new session."),
        threshold: float | None = typer.Option(None, help="threshold for a new session."),
    ) -> None:
        """Ask a question; prints the streamed answer and its sources."""
        if (session is None) == (project is None):
            raise typer.BadParameter("give exactly one of --session or --project")
        container = Container.build(settings_or_exit())  # type: ignore[operator]
        try:
            if session is None:
                with container.db.read() as db:
                    found = projects.by_name(db, project or "")
                if found is None:
                    raise typer.BadParameter(f"no knowledge base named {project!r}")
                changes = SessionChanges(title=question[:80], top_k=top_k, threshold=threshold)
                settings = container.settings
                session = sessions.create(container.db, settings, container.chat_models, found.id, changes).id
            code = asyncio.run(_ask(container, session, question))
        except RagchatError as exc:
            console.print(f"[red]{exc.message}[/]")
            code = 2
        finally:
            container.close()
        raise typer.Exit(code)
