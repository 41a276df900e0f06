"""The `ragchat` command: the server's own commands here, the others composed from the sub-apps
beside this module (ingest, chat, database, bench, users and keys)."""

from __future__ import annotations

import sys

import typer

from app import logs
from app.cli import backup, bench, chat, database, ingest, users
from app.cli.settings import settings_or_exit
from app.errors import RagchatError

# No locals in tracebacks: they would print settings, API keys included.
cli = typer.Typer(
    help="ragchat: a GraphQL RAG chat server.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@cli.command()
def migrate(revision: str = typer.Argument("head", help="Target revision (default: the latest).")) -> None:
    """Bring the database to a revision (creating it if needed)."""
    from app.db import migrate as migrations

    settings = settings_or_exit()
    migrations.upgrade(settings.database_url, revision, default_threshold=settings.rag.threshold)
    typer.echo(f"database {settings.database_url} is at {revision}")


@cli.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address (default RAGCHAT_HOST or 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port (default RAGCHAT_PORT or 8000)."),
    workers: int | None = typer.Option(
        None, help="Server processes on that port (default RAGCHAT_WORKERS or 1): for remote chat providers."
    ),
) -> None:
    """Serve the GraphQL API (GraphiQL at /graphql) and the frontend."""
    from app import serving

    chosen = {"host": host, "port": port, "workers": workers}
    overrides = {name: value for name, value in chosen.items() if value is not None}
    settings = settings_or_exit(**overrides)
    logs.configure(settings)  # a server logs each request, at RAGCHAT_LOG__LEVEL (default info)
    processes = f", {settings.workers} worker processes" if settings.workers > 1 else ""
    typer.echo(f"ragchat on http://{settings.host}:{settings.port}/  (GraphiQL: /graphql{processes})")
    if hint := users.first_run_hint(settings):
        typer.echo(hint)
    serving.serve(settings)


@cli.command("export-schema")
def export_schema() -> None:
    """Print the GraphQL schema (SDL), as committed in schema.graphql."""
    from app.graphql.schema import export_sdl

    sys.stdout.write(export_sdl())


# Nameless sub-apps put their commands at the top level; `--help` lists them in this order.
cli.add_typer(ingest.commands)
cli.add_typer(chat.commands)
cli.add_typer(database.commands)
cli.add_typer(backup.commands)
cli.add_typer(bench.commands, name="bench")
cli.add_typer(users.commands, name="users")
cli.add_typer(users.key_commands, name="keys")


def main() -> None:
    try:
        cli()
    except RagchatError as exc:  # expected failures are messages, not tracebacks
        typer.secho(exc.message, fg=typer.colors.RED, err=True)
        raise SystemExit(2) from exc
