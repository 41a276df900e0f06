"""`ragchat copy-database`: move a knowledge base to another database (SQLite → PostgreSQL), ids and
vectors kept, nothing re-embedded (app/services/database_copy.py)."""

from __future__ import annotations

import time

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
