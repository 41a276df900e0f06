"""The `ragchat` command's tree as users type it: every command and option, composed from the
sub-apps in app/cli/, and the console script that runs it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import typer.main

from app import cli

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = {
    "migrate": ["revision"],
    "serve": ["--host", "--port", "--workers"],
    "export-schema": [],
    "ingest": ["paths", "--project", "-p", "--url", "--include", "--exclude", "--no-default-excludes", "--tag"],
    "reindex": ["--project", "-p"],
    "demo": [],
    "ask": ["question", "--session", "-s", "--project", "-p", "--top-k", "--threshold", "--mode"],
    "copy-database": ["--to", "--from", "--replace"],
    "export-project": ["name", "path"],
    "import-project": ["path", "--name"],
    "backup": ["path", "--check"],
    "restore": ["path", "--replace"],
    "bench retrieval": [
        *("--dataset", "--split", "--mode", "--max-docs", "--max-queries", "--json", "--cache", "--rrf-k"),
        *("--vector-weight", "--keyword-weight", "--feedback-docs", "--fusion", "--convex-alpha", "--expansion"),
        *("--rerank", "--provider", "--model", "--quality"),
    ],
    "bench conversations": ["--variant", "--conversations", "--documents", "--json"],
    "bench answers": [
        "--mode",
        "--provider",
        "--model",
        "--limit",
        "--max-tokens",
        "--questions",
        "--json",
        "--dataset",
        "--corpus",
        "--out",
    ],
    "users create": ["--email", "--name", "--admin", "--password-stdin"],
    "users list": [],
    "users disable": ["email"],
    "users enable": ["email"],
    "users reset": ["email"],
    "keys create": ["--email", "--name", "--kb", "--read-only", "--expires"],
}


def _tree(command: object, prefix: str = "") -> dict[str, list[str]]:
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        params = getattr(command, "params", [])
        return {prefix: [o for p in params for o in (p.opts if p.param_type_name == "option" else [p.name])]}
    found: dict[str, list[str]] = {}
    for name, sub in subcommands.items():
        found |= _tree(sub, f"{prefix} {name}".strip())
    return found


def test_every_command_and_option_is_there_in_the_order_help_lists_them() -> None:
    tree = _tree(typer.main.get_command(cli.cli))
    assert list(tree) == list(COMMANDS)
    assert tree == COMMANDS


def test_the_console_script_runs_the_composed_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, function = scripts["ragchat"].partition(":")
    assert (module, function) == ("app.cli", "main")
    assert cli.main.__module__ == "app.cli.main"
