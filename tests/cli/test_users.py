"""`ragchat users` and `ragchat keys`, run as a person types them, on a real migrated database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.cli.users import first_run_hint
from app.db.database import Database
from app.services.people import keys, sessions, users
from app.settings import Settings

PASSWORD = "correct horse battery"


@pytest.fixture
def runner(migrated: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("RAGCHAT_DATABASE_URL", migrated.database_url)
    return CliRunner()


def test_users_create_list_disable_reset_and_keys(runner: CliRunner, migrated: Settings) -> None:
    assert first_run_hint(migrated) is not None and "users create --admin" in (first_run_hint(migrated) or "")
    made = runner.invoke(
        cli, ["users", "create", "--admin", "--email", "Ada@Example.org", "--name", "Ada", "--password-stdin"],
        input=PASSWORD + "\n",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert first_run_hint(migrated) is None
    prompted = runner.invoke(cli, ["users", "create", "--email", "bob@example.org"], input=f"{PASSWORD}\n{PASSWORD}\n")
    assert prompted.exit_code == 0, prompted.output
    listed = runner.invoke(cli, ["users", "list"]).output.splitlines()
    assert [line.split("\t")[1:] for line in listed] == [
        ["ada@example.org", "Ada", "admin"],
        ["bob@example.org", "", ""],
    ]

    store = Database.from_url(migrated.database_url)
    try:
        with store.write() as db:
            assert users.authenticate(db, "ada@example.org", PASSWORD) is not None
            bob = users.by_email(db, "bob@example.org")
            assert bob is not None
            token = sessions.start(db, bob)
        key = runner.invoke(
            cli, ["keys", "create", "--email", "bob@example.org", "--name", "ci", "--read-only", "--expires", "30"]
        )
        assert key.exit_code == 0, key.output
        secret = key.stdout.strip().splitlines()[0]
        with store.read() as db:
            found = keys.resolve(db, secret)
            assert found is not None and found[1].read_only

        assert runner.invoke(cli, ["users", "disable", "bob@example.org"]).exit_code == 0
        with store.read() as db:
            assert keys.resolve(db, secret) is None
        last = runner.invoke(cli, ["users", "disable", "ada@example.org"])
        assert last.exit_code != 0 and "last administrator" in str(last.exception or last.output)
        assert runner.invoke(cli, ["users", "enable", "bob@example.org"]).exit_code == 0

        reset = runner.invoke(cli, ["users", "reset", "bob@example.org"])
        assert reset.exit_code == 0, reset.output
        link = reset.stdout.strip().splitlines()[0]
        assert link.startswith("http://127.0.0.1:8000/invite/")
        with store.read() as db:
            assert (
                sessions.person(db, token, sessions.Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1)))
                is None
            )
            assert users.authenticate(db, "bob@example.org", PASSWORD) is None
    finally:
        store.dispose()


def test_users_create_refuses_a_short_password(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["users", "create", "--email", "a@example.org", "--password-stdin"], input="short\n")
    assert result.exit_code != 0
