"""`ragchat users ...` and `ragchat keys ...`: people and their keys from the server's own machine,
with the server's trust (no sign-in), through the same services as the API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import typer
from sqlalchemy.exc import SQLAlchemyError

from app.cli.settings import settings_or_exit
from app.db.database import Database
from app.db.models import User, utcnow
from app.errors import NotFoundError, RagchatError
from app.services.people import api_keys, directory, invitations, keys, users
from app.services.people.access import Caller, CallerKind
from app.settings import Settings

commands = typer.Typer(help="People who sign in: create the first administrator, list, disable, reset.")
key_commands = typer.Typer(help="Personal API keys.")
SERVER = Caller.server(operator=True)


@contextmanager
def _store() -> Iterator[tuple[Settings, Database]]:
    settings = settings_or_exit()
    store = Database.from_url(settings.database_url)
    try:
        yield settings, store
    finally:
        store.dispose()


def _base_url(settings: Settings) -> str:
    host = settings.host if settings.host not in ("", "0.0.0.0", "::", "[::]") else "localhost"
    return f"http://{host}:{settings.port}"


def _person(store: Database, email: str) -> User:
    with store.read() as db:
        found = users.by_email(db, email)
    if found is None:
        raise NotFoundError("person", email)
    return found


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return str(typer.prompt("Password", hide_input=True, confirmation_prompt=True))


@commands.command("create")
def create(
    email: str = typer.Option(..., help="Their email: the name they sign in with."),
    name: str = typer.Option("", help="Their name as shown."),
    admin: bool = typer.Option(False, "--admin", help="Make them an administrator."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from stdin (one line)."),
) -> None:
    """Create a person with a password (asked twice, or read from stdin)."""
    password = _password(password_stdin)
    with _store() as (_, store), store.write() as db:
        person = users.create(db, users.NewPerson(email, name, password, is_admin=admin))
        created = (person.id, person.email)
    typer.echo(f"created {'administrator' if admin else 'person'} {created[1]} (id {created[0]})")


@commands.command("list")
def list_people() -> None:
    """Everyone: id, email, name, administrator or not, disabled or not."""
    with _store() as (_, store):
        for person in directory.people(store, SERVER):
            marks = [m for m, on in (("admin", person.is_admin), ("disabled", person.disabled)) if on]
            typer.echo(f"{person.id}\t{person.email}\t{person.name}\t{','.join(marks)}")


def _set_disabled(email: str, disabled: bool) -> None:
    with _store() as (_, store):
        person = directory.set_disabled(store, SERVER, _person(store, email).id, disabled)
    typer.echo(f"{person.email} {'disabled: signed out, keys stopped' if disabled else 'enabled'}")


@commands.command("disable")
def disable(email: str = typer.Argument(..., help="Their email.")) -> None:
    """Disable a person: they cannot sign in, their sessions and keys stop at once."""
    _set_disabled(email, True)


@commands.command("enable")
def enable(email: str = typer.Argument(..., help="Their email.")) -> None:
    """Let a disabled person sign in again."""
    _set_disabled(email, False)


@commands.command("reset")
def reset(email: str = typer.Argument(..., help="Their email.")) -> None:
    """Void a person's password, sign them out, and print a one-time link to set a new one."""
    with _store() as (settings, store):
        issued = invitations.reset(store, SERVER, _person(store, email).id)
    typer.echo(f"{_base_url(settings)}{issued.path}")
    typer.echo(f"(works once, until {issued.expires_at:%Y-%m-%d %H:%M} UTC)", err=True)


@key_commands.command("create")
def create_key(
    email: str = typer.Option(..., help="Whose key: their email."),
    name: str = typer.Option(..., help="What the key is for."),
    kb: list[int] = typer.Option([], "--kb", help="Only this knowledge base (repeat for more); default: all theirs."),
    read_only: bool = typer.Option(False, "--read-only", help="Only read: search, chat and lists."),
    expires: int | None = typer.Option(None, "--expires", min=1, help="Stop working after this many days."),
) -> None:
    """Create a key for a person and print its secret (shown this once)."""
    with _store() as (_, store):
        person = _person(store, email)
        caller = Caller(CallerKind.PERSON, user_id=person.id, is_admin=person.is_admin)
        new = keys.NewKey(
            name=name,
            projects=kb or None,
            read_only=read_only,
            expires_at=utcnow() + timedelta(days=expires) if expires is not None else None,
        )
        created = api_keys.create(store, caller, new)
    typer.echo(created.secret)
    typer.echo(f"key {created.key.id} ({created.key.prefix}…) for {person.email}: shown this once", err=True)


def first_run_hint(settings: Settings) -> str | None:
    """What `serve` says on a server with no people yet (None when it has some, or cannot tell)."""
    store = Database.from_url(settings.database_url)
    try:
        with store.read() as db:
            if users.count(db) > 0:
                return None
    except (RagchatError, SQLAlchemyError):
        return None  # not migrated yet: serving says so
    finally:
        store.dispose()
    create = "ragchat users create --admin --email you@example.org"
    if settings.api.api_keys or settings.api.operator_keys:
        return f"No one can sign in yet: create the first administrator with `{create}`."
    return (
        "This server has no people: whoever reaches it may use it. To add people, create the first "
        f"administrator with `{create}` (or setUpFirstAdministrator in GraphiQL at {_base_url(settings)}/graphql, "
        "from this machine)."
    )
