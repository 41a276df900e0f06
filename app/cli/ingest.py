"""`ragchat ingest`, `ragchat reindex` and `ragchat demo`: the knowledge-base commands."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.cli.settings import settings_or_exit
from app.container import Container
from app.errors import ConflictError, RagchatError
from app.rag.ingest.folders import collect
from app.rag.ingest.intake import Skipped, SkipReason
from app.rag.ingest.pipeline import FileResult, FileStatus, IngestSummary
from app.rag.sanitize import clean_name
from app.rag.search.document_filter import tags_problems
from app.resources import DEMO as DEMO_DIR  # ragchat's own documentation
from app.services import documents, leases, projects
from app.services.ingestion import jobs, url_documents
from app.services.ingestion.worker import ItemRunner
from app.services.records import IngestionItem, JobOrigin

commands = typer.Typer()
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
    tags: list[str] | None = None,
) -> IngestSummary:
    """Files and folders through an ingestion job run in the foreground (what the server's worker
    does for uploads, file by file), then each URL fetched and ingested. Each file's document then
    gets its mtime as its modification date, and ``tags`` (when given) as its tags."""
    if tags:
        problems = tags_problems(tags, "--tag")
        if problems:
            raise typer.BadParameter("; ".join(message for _, message in problems))
    project_row, created = projects.get_or_create(container.store, project)
    if created:
        console.print(f"created knowledge base [bold]{project_row.name}[/]")
    found = collect(paths, include or [], exclude or [], defaults=defaults)
    urls = urls or []
    intakes = [jobs.Intake(clean_name(name), path.stat().st_size, path) for name, path in found.files]
    paths_by_name = {intake.name: path for intake, (_, path) in zip(intakes, found.files, strict=True)}
    job = jobs.create(container.store, container.settings.jobs, project_row.id, JobOrigin.CLI, intakes)
    summary = IngestSummary()
    started = time.perf_counter()
    items = jobs.items_of(container.store, [job.id])[0]
    runner = ItemRunner(container.store, container.embedder, container.settings.ingest, lambda row: None)
    with Progress(
        TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        task = bar.add_task("files", total=len(items) + len(urls))
        try:
            for queued in items:
                row = jobs.start(container.store, queued.id)
                ended = runner.run(row, owned=False) if row is not None else jobs.item(container.store, queued.id)
                result = _result(ended or queued)
                summary.files.append(result)
                if result.document_id is not None and result.status != FileStatus.FAILED:
                    _file_metadata(container, result.document_id, paths_by_name.get(result.name), tags)
                bar.advance(task)
                if result.status == FileStatus.FAILED:
                    bar.console.print(f"[red]failed[/] {result.name}: {result.error}")
        finally:
            runner.close()
            with suppress(ConflictError):  # interrupted (Ctrl+C): what did not end is cancelled, retryable
                jobs.cancel(container.store, job.id)

        def advance(result: FileResult) -> None:
            bar.advance(task)
            if result.status == FileStatus.FAILED:
                bar.console.print(f"[red]failed[/] {result.name}: {result.error}")

        for url in urls:
            summary.files.extend(_ingest_url(container, project_row.id, url, advance).files)
    summary.seconds = time.perf_counter() - started
    print_summary(summary, found.skipped)
    return summary


def _file_metadata(container: Container, document_id: int, path: Path | None, tags: list[str] | None) -> None:
    """The file's mtime (when the file system knows it) and the command's tags, onto its document."""
    modified = None
    if path is not None:
        with suppress(OSError):
            modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    documents.set_metadata(container.store, document_id, tags=tags or None, modified_at=modified)


def _ingest_url(
    container: Container, project_id: int, url: str, advance: Callable[[FileResult], None]
) -> IngestSummary:
    try:
        fetched = url_documents.add_from_url(
            container.store, container.embedder, container.settings.ingest, project_id, url
        )
    except RagchatError as exc:  # refused, fetch failed, too large...: this URL fails, the others go on
        fetched = IngestSummary(files=[FileResult(url, FileStatus.FAILED, error=exc.message)])
    for result in fetched.files:
        advance(result)
    return fetched


def _result(row: IngestionItem) -> FileResult:
    """A job item's end as the summary counts it (a file that did not end counts as failed)."""
    status = FileStatus(row.outcome) if row.outcome else FileStatus.FAILED
    reason, error = None, row.error
    if status is FileStatus.SKIPPED and error:  # stored as "<reason>: <detail>" (jobs.finish_in)
        name, _, detail = error.partition(": ")
        if name in {r.value for r in SkipReason}:
            reason, error = SkipReason(name), detail
    return FileResult(
        row.name, status, row.document_id, row.chunks_total, row.chunks_done, error=error, skip_reason=reason
    )


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


@commands.command()
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
    tag: list[str] = typer.Option(
        None, "--tag", help="A tag for every file ingested (repeatable); replaces the documents' tags."
    ),
) -> None:
    """Add or update documents in a knowledge base. In folders, a .ragchatignore (gitignore syntax)
    leaves files out; every file left out is listed with its reason."""
    if not paths and not url:
        raise typer.BadParameter("give files, folders or --url")
    container = Container.build(settings_or_exit())
    try:
        with leases.command_lease(container.store):  # its files are its own (app/services/leases.py)
            summary = ingest_paths(
                container,
                project,
                paths or [],
                url or [],
                include=include or [],
                exclude=exclude or [],
                defaults=not no_default_excludes,
                tags=tag or None,
            )
    finally:
        container.close()
    raise typer.Exit(1 if summary.count(FileStatus.FAILED) else 0)


@commands.command()
def reindex(
    project: str = typer.Option(..., "--project", "-p", help="Knowledge base name."),
) -> None:
    """Re-embed a knowledge base with the configured embedder; searches use the old vectors
    until the new ones are complete."""
    from app.rag.ingest.reindex import reindex as run_reindex

    container = Container.build(settings_or_exit())
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


@commands.command()
def demo() -> None:
    """Load the demo knowledge base (ragchat's own documentation) if it is not there yet."""
    container = Container.build(settings_or_exit())
    try:
        with leases.command_lease(container.store):
            summary = ingest_paths(container, DEMO_PROJECT, [DEMO_DIR])
    finally:
        container.close()
    raise typer.Exit(1 if summary.count(FileStatus.FAILED) else 0)
