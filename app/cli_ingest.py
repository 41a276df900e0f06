"""`ragchat ingest`, `ragchat reindex` and `ragchat demo`: the knowledge-base commands."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.container import Container
from app.errors import ConflictError
from app.rag.ingest import FileResult, FileStatus, IngestSummary
from app.rag.parsing import KINDS_BY_EXTENSION
from app.rag.sanitize import clean_name
from app.resources import DEMO as DEMO_DIR  # ragchat's own documentation
from app.services import jobs, projects
from app.services.job_worker import ItemRunner
from app.services.records import IngestionItem, JobOrigin

console = Console(stderr=True)
DEMO_PROJECT = "ragchat docs"


def collect(paths: list[Path]) -> Iterator[Path]:
    """Files named directly, and supported files found recursively in folders (hidden ones skipped)."""
    for path in paths:
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                relative = found.relative_to(path).parts
                hidden = any(p.startswith(".") for p in relative)
                if found.is_file() and not hidden and found.suffix.lower() in KINDS_BY_EXTENSION:
                    yield found
        else:
            yield path


def ingest_paths(container: Container, project: str, paths: list[Path]) -> IngestSummary:
    project_row, created = projects.get_or_create(container.store, project)
    if created:
        console.print(f"created knowledge base [bold]{project_row.name}[/]")
    files = list(collect(paths))
    roots = [p if p.is_dir() else p.parent for p in paths]

    def name_of(path: Path) -> str:
        for root in roots:
            if path.is_relative_to(root):
                return str(path.relative_to(root))
        return path.name

    intakes = [jobs.Intake(clean_name(name_of(f)), f.stat().st_size, f) for f in files]
    job = jobs.create(container.store, container.settings.jobs, project_row.id, JobOrigin.CLI, intakes)
    summary = IngestSummary()
    started = time.perf_counter()
    items = jobs.items_of(container.store, [job.id])[0]
    runner = ItemRunner(container.store, container.embedder, container.settings.ingest, lambda row: None)
    with Progress(
        TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        task = bar.add_task("files", total=len(items))
        try:
            for queued in items:
                row = jobs.start(container.store, queued.id)
                ended = runner.run(row, owned=False) if row is not None else jobs.item(container.store, queued.id)
                result = _result(ended or queued)
                summary.files.append(result)
                bar.advance(task)
                if result.status == FileStatus.FAILED:
                    bar.console.print(f"[red]failed[/] {result.name}: {result.error}")
        finally:
            runner.close()
            with suppress(ConflictError):  # interrupted (Ctrl+C): what did not end is cancelled, retryable
                jobs.cancel(container.store, job.id)
    summary.seconds = time.perf_counter() - started
    print_summary(summary)
    return summary


def _result(row: IngestionItem) -> FileResult:
    """A job item's end as the summary counts it (a file that did not end counts as failed)."""
    status = FileStatus(row.outcome) if row.outcome else FileStatus.FAILED
    return FileResult(row.name, status, row.document_id, row.chunks_total, row.chunks_done, error=row.error)


def print_summary(summary: IngestSummary) -> None:
    table = Table(title="ingestion summary")
    for column in ("added", "unchanged", "updated", "failed", "chunks embedded", "seconds"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.count(FileStatus.ADDED)),
        str(summary.count(FileStatus.UNCHANGED)),
        str(summary.count(FileStatus.UPDATED)),
        str(summary.count(FileStatus.FAILED)),
        str(summary.chunks_embedded),
        f"{summary.seconds:.1f}",
    )
    console.print(table)


def register(cli: typer.Typer, settings_or_exit: object) -> None:
    @cli.command()
    def ingest(
        paths: list[Path] = typer.Argument(..., exists=True, help="Files and folders (searched recursively)."),
        project: str = typer.Option(..., "--project", "-p", help="Knowledge base name (created if missing)."),
    ) -> None:
        """Add or update documents in a knowledge base."""
        container = Container.build(settings_or_exit())  # type: ignore[operator]
        try:
            summary = ingest_paths(container, project, paths)
        finally:
            container.close()
        raise typer.Exit(1 if summary.count(FileStatus.FAILED) else 0)

    @cli.command()
    def reindex(
        project: str = typer.Option(..., "--project", "-p", help="Knowledge base name."),
    ) -> None:
        """Re-embed a knowledge base with the configured embedder; searches use the old vectors
        until the new ones are complete."""
        from app.rag.reindex import reindex as run_reindex

        container = Container.build(settings_or_exit())  # type: ignore[operator]
        try:
            found = projects.find(container.store, project)
            if found is None:
                raise typer.BadParameter(f"no knowledge base named {project!r}")
            with Progress(TextColumn("[bold]re-embedding"), MofNCompleteColumn(), console=console) as bar:
                task = bar.add_task("chunks", total=projects.stats(container.store, [found.id])[found.id].chunks)
                label = run_reindex(container.store, found.id, container.embedder, lambda n: bar.advance(task, n))
            console.print(f"{found.name} now searches {label}")
        finally:
            container.close()

    @cli.command()
    def demo() -> None:
        """Load the demo knowledge base (ragchat's own documentation) if it is not there yet."""
        container = Container.build(settings_or_exit())  # type: ignore[operator]
        try:
            summary = ingest_paths(container, DEMO_PROJECT, [DEMO_DIR])
        finally:
            container.close()
        raise typer.Exit(1 if summary.count(FileStatus.FAILED) else 0)
