"""The settings a command runs with, read once at its start."""

from __future__ import annotations

import typer

from app import logs
from app.errors import RagchatError
from app.settings import Settings, load_settings


def settings_or_exit(**overrides: object) -> Settings:
    """The settings, with logging configured from them (app/logs.py); exits on bad settings."""
    try:
        settings = load_settings(**overrides)
    except RagchatError as exc:
        typer.secho(exc.message, fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from exc
    # A command prints its own results: its log shows warnings and worse unless a level is set.
    chosen = "level" in settings.log.model_fields_set or settings.log_level is not None
    logs.configure(settings, level=None if chosen else "warning")
    return settings
