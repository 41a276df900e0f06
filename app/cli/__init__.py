"""The `ragchat` command line (the console script is `app.cli:main`), one Typer sub-app per family
of commands: `main` (serve, migrate, export-schema) composes `ingest` (ingest, reindex, demo),
`chat` (ask), `database` (copy-database) and `bench` (ragchat bench ...)."""

from app.cli.main import cli, main

__all__ = ["cli", "main"]
