"""`ragchat ingest`, `ragchat reindex` and `ragchat demo`: the knowledge-base commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.container import Container
from app.errors import RagchatError
from app.rag.folders import collect
from app.rag.ingest import FileResult, FileStatus, IngestSummary, Source
from app.rag.intake import Skipped, SkipReason
from app.resources import DEMO as DEMO_DIR  # ragchat's own documentation
from app.services import documents, projects, url_documents

console = Console(stderr=True)
DEMO_PROJECT = "ragchat docs"


def ingest_paths(
    container: Container,
    project: str,
    paths: list[Path],
    urls: list[str] | None = None,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    defaults: bool = True,
) -> IngestSummary:
    project_row, created = projects.get_or_create(container.store, project)
    if created:
        console.print(f"created knowledge base [bold]{project_row.name}[/]")
    found = collect(paths, include or [], exclude or [], defaults=defaults)
    sources = [Source(name, path.read_bytes) for name, path in found.files]
    urls = urls or []
    with Progress(
        TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        task = bar.add_task("files", total=len(sources) + len(urls))

        def advance(result: FileResult) -> None:
            bar.advance(task)
            if result.status == FileStatus.FAILED:
                bar.console.print(f"[red]failed[/] {result.name}: {result.error}")

        summary = documents.ingest(
            container.store, container.embedder, container.settings.ingest, project_row.id, sources, advance
        )
        for url in urls:
            summary.files.extend(_ingest_url(container, project_row.id, url, advance).files)
    print_summary(summary, found.skipped)
    return summary


def _ingest_url(
    container: Container, project_id: int, url: str, advance: Callable[[FileResult], None]
) -> IngestSummary:
    try:
        return url_documents.add_from_url(
            container.store, container.embedder, container.settings.ingest, project_id, url
        )
    except RagchatError as exc:  # refused, fetch failed, too large...: this URL fails, the others go on
        failed = FileResult(url, FileStatus.FAILED, error=exc.message)
        advance(failed)
        return IngestSummary(files=[failed])


def print_summary(summary: IngestSummary, by_name: list[Skipped] | None = None) -> None:
    """The counts, then every skipped file with its reason: those left out by name (patterns, hidden)
    and those ingestion skipped by content (binary, compressed, minified, generated)."""
    skipped = list(by_name or []) + [
        Skipped(f.name, f.skip_reason, f.error or "") for f in summary.files if f.skip_reason is not None
    ]
    table = Table(title="ingestion summary")
    for column in ("added", "unchanged", "updated", "skipped", "failed", "chunks embedded", "seconds"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.count(FileStatus.ADDED)),
        str(summary.count(FileStatus.UNCHANGED)),
        str(summary.count(FileStatus.UPDATED)),
        str(len(skipped)),
        str(summary.count(FileStatus.FAILED)),
        str(summary.chunks_embedded),
        f"{summary.seconds:.1f}",
    )
    console.print(table)
    for reason in SkipReason:
        these = [s for s in skipped if s.reason is reason]
        if these:
            console.print(f"[yellow]skipped ({reason.value})[/]: {len(these)}")
            for entry in these:
                console.print(f"  {entry.name}: {entry.detail}", highlight=False, markup=False)


def register(cli: typer.Typer, settings_or_exit: object) -> None:
    @cli.command()
    def ingest(
        paths: list[Path] = typer.Argument(None, exists=True, help="Files and folders (searched recursively)."),
        project: str = typer.Option(..., "--project", "-p", help="Knowledge base name (created if missing)."),
        url: list[str] = typer.Option(
            None, "--url", help="A document to fetch over http(s) (repeatable); private addresses are refused."
        ),
        include: list[str] = typer.Option(
            None, "--include", help='Only files matching one of these (gitignore syntax, e.g. "*.md"; repeatable).'
        ),
        exclude: list[str] = typer.Option(
            None, "--exclude", help='Leave out files matching (gitignore syntax, e.g. "drafts/"; repeatable).'
        ),
        no_default_excludes: bool = typer.Option(
            False,
            "--no-default-excludes",
            help="Also take lock files, source maps, minified bundles and search indexes.",
        ),
    ) -> None:
        """Add or update documents in a knowledge base. In folders, a .ragchatignore (gitignore syntax)
        leaves files out; every file left out is listed with its reason."""
        if not paths and not url:
            raise typer.BadParameter("give files, folders or --url")
        container = Container.build(settings_or_exit())  # type: ignore[operator]
        try:
            summary = ingest_paths(
                container,
                project,
                paths or [],
                url or [],
                include=include or [],
                exclude=exclude or [],
                defaults=not no_default_excludes,
            )
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
