"""The `ragchat` command line (the console script is `app.cli:main`)."""

from app.cli.main import WEBSOCKET_OPTIONS, cli, main, settings_or_exit

__all__ = ["WEBSOCKET_OPTIONS", "cli", "main", "settings_or_exit"]
