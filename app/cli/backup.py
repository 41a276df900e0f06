"""`ragchat backup` and `ragchat restore`: copies of the database taken while servers run
(app/ops/backup.py, docs/OPERATIONS.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.settings import settings_or_exit

commands = typer.Typer()


@commands.command("backup")
def backup(
    path: Path = typer.Argument(..., help="The backup file to write (or, with --check, to check)."),
    check: bool = typer.Option(False, "--check", help="Check an existing backup instead of writing one."),
) -> None:
    """Back up the database online (SQLite's backup API; pg_dump for PostgreSQL), or check a backup."""
    from app.ops import backup as backups

    if check:
        found = backups.check(path)
        if not found.ok:
            typer.secho(f"{path}: {found.detail}", fg=typer.colors.RED, err=True)
            raise SystemExit(1)
        revision = f", migration revision {found.revision}" if found.revision else ""
        typer.echo(f"{path}: ok{revision}")
        return
    settings = settings_or_exit()
    written = backups.backup(settings.database_url, path)
    found = backups.check(written)
    if not found.ok:
        typer.secho(f"{written} was written but does not check: {found.detail}", fg=typer.colors.RED, err=True)
        raise SystemExit(1)
    typer.echo(f"backed up {settings.database_url} to {written} ({written.stat().st_size} bytes, checked)")


@commands.command("restore")
def restore(
    path: Path = typer.Argument(..., help="The backup file (from `ragchat backup`)."),
    replace: bool = typer.Option(False, "--replace", help="Overwrite an existing database."),
) -> None:
    """Restore a backup as RAGCHAT_DATABASE_URL's database (servers on it stopped)."""
    from app.ops import backup as backups

    settings = settings_or_exit()
    backups.restore(path, settings.database_url, replace=replace)
    found = backups.check(path)
    typer.echo(f"restored {path} as {settings.database_url}")
    if backups.behind(found):
        typer.echo("the backup is older than this version: run `ragchat migrate` before serving")
