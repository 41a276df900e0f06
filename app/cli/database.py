"""`ragchat copy-database`: move every knowledge base to another database (SQLite → PostgreSQL), ids and
vectors kept, nothing re-embedded (app/services/database_copy.py); `export-project` and `import-project`:
one knowledge base as a file (app/services/project_archive.py)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from app.cli.settings import settings_or_exit

commands = typer.Typer()


@commands.command("copy-database")
def copy_database(
    to: str = typer.Option(..., "--to", help="The target database URL (e.g. postgresql+psycopg://USER@HOST/DB)."),
    source: str | None = typer.Option(None, "--from", help="The source database URL (default: RAGCHAT_DATABASE_URL)."),
    replace: bool = typer.Option(False, "--replace", help="Delete what the target holds first (refused otherwise)."),
) -> None:
    """Copy every knowledge base, vector, session, message and job into another database, ids kept.

    Both databases must be migrated to this version (`ragchat migrate`); the copy is one
    transaction on the target, so a failure leaves it as it was."""
    from app.services.database_copy import copy_database as run

    url = source or settings_or_exit().database_url
    started = time.perf_counter()
    report = run(url, to, replace=replace)
    rows = sum(report.rows.values())
    vectors = sum(report.vectors.values())
    typer.echo(
        f"copied {rows} rows ({', '.join(f'{n} {t}' for t, n in report.rows.items() if n)}) and {vectors} "
        f"vectors in {len(report.vectors)} embedding spaces in {time.perf_counter() - started:.1f} s"
    )


@commands.command("export-project")
def export_project(
    name: str = typer.Argument(..., help="The knowledge base's name."),
    path: Path = typer.Argument(..., help="The archive to write (e.g. handbook.ragchat.tar.gz)."),
) -> None:
    """Write one knowledge base to a file: documents' chunks and vectors, chats with their messages,
    citations and tool calls, its tools (secrets by name only). Safe while servers run."""
    from app.db.database import Database
    from app.services.project_archive import export_project as run

    store = Database.from_url(settings_or_exit().database_url)
    try:
        report = run(store, name, path)
    finally:
        store.dispose()
    typer.echo(
        f"exported {report.name}: {_counts(report.rows)}, "
        f"{report.vectors} vectors ({report.space or 'no space'}) to {path}"
    )


@commands.command("import-project")
def import_project(
    path: Path = typer.Argument(..., help="An archive from `ragchat export-project`."),
    name: str | None = typer.Option(None, "--name", help="Import under this name (default: the exported one)."),
) -> None:
    """Make a new knowledge base from an archive, in one transaction. Its vectors are used as they are
    when this server's embedder made the same space; otherwise its chunks are embedded here first."""
    from app.container import Container
    from app.services.project_archive import import_project as run

    container = Container.build(settings_or_exit())
    try:
        report = run(container.store, path, container.embedder, container.settings.tools, name=name)
    finally:
        container.close()
    how = "re-embedded with" if report.re_embedded else "vectors kept, in"
    typer.echo(
        f"imported {report.name} (id {report.project_id}): {_counts(report.rows)}; "
        f"{report.vectors} {how} {report.space or 'no space'}"
    )


def _counts(rows: dict[str, int]) -> str:
    return ", ".join(f"{n} {table}" for table, n in rows.items() if n) or "nothing"
