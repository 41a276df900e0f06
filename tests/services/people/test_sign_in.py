"""People sign in with an email and a password (argon2id), browser sessions end when revoked, idle
or too old, and sign-in attempts are limited per account and per address."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from app.db.database import Database
from app.db.models import User, utcnow
from app.errors import ConflictError, ValidationError
from app.services.people import passwords, sessions, users
from app.services.people.access import Caller, CallerKind
from app.services.people.identify import Credentials, Identifier
from app.services.people.throttle import Throttle
from app.settings import Settings

LIFETIMES = sessions.Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1))
PASSWORD = "correct horse battery"


@pytest.fixture
def store(migrated: Settings) -> Iterator[Database]:
    made = Database.from_url(migrated.database_url)
    yield made
    made.dispose()


def _person(store: Database, email: str = "Ada@Example.org", *, admin: bool = False) -> int:
    with store.write() as db:
        return users.create(db, users.NewPerson(email, "Ada", PASSWORD, is_admin=admin)).id


def test_passwords_are_argon2id_and_checked(store: Database) -> None:
    uid = _person(store)
    with store.read() as db:
        row = db.get(User, uid)
        assert row is not None and row.email == "ada@example.org"
        assert row.password_hash is not None and row.password_hash.startswith("$argon2id$")
        assert PASSWORD not in row.password_hash
    with store.write() as db:
        assert users.authenticate(db, "ADA@example.org ", PASSWORD) is not None
        assert users.authenticate(db, "ada@example.org", PASSWORD + "!") is None
        assert users.authenticate(db, "nobody@example.org", PASSWORD) is None
    with store.write() as db, pytest.raises(ConflictError, match="already exists"):
        users.create(db, users.NewPerson("ada@EXAMPLE.org", password=PASSWORD))
    with store.write() as db, pytest.raises(ValidationError, match="at least 10 characters"):
        users.create(db, users.NewPerson("bob@example.org", password="short"))
    with store.write() as db, pytest.raises(ValidationError, match="not an email address"):
        users.create(db, users.NewPerson("bob", password=PASSWORD))
    assert not passwords.verify(None, "")


def test_a_disabled_person_cannot_sign_in_and_is_signed_out(store: Database) -> None:
    uid = _person(store)
    with store.write() as db:
        token = sessions.start(db, users.require(db, uid))
    with store.read() as db:
        assert sessions.person(db, token, LIFETIMES) is not None
    with store.write() as db:
        users.set_disabled(db, users.require(db, uid), True)
        assert users.authenticate(db, "ada@example.org", PASSWORD) is None
    with store.read() as db:
        assert sessions.person(db, token, LIFETIMES) is None


def test_sessions_end_when_revoked_idle_too_old_or_the_password_changes(store: Database) -> None:
    uid = _person(store)
    with store.write() as db:
        user = users.require(db, uid)
        first, second, third = (sessions.start(db, user) for _ in range(3))
    assert len({first, second, third}) == 3
    now = utcnow()
    with store.read() as db:
        assert sessions.person(db, first, LIFETIMES, now=now + timedelta(minutes=59)) is not None
        assert sessions.person(db, first, LIFETIMES, now=now + timedelta(minutes=61)) is None  # idle
        long = sessions.Lifetimes(idle=timedelta(days=30), absolute=timedelta(days=1))
        assert sessions.person(db, first, long, now=now + timedelta(days=1, minutes=1)) is None  # absolute
    with store.write() as db:
        sessions.end(db, first)
    with store.read() as db:
        assert sessions.person(db, first, LIFETIMES) is None
        assert sessions.person(db, second, LIFETIMES) is not None
    with store.write() as db:
        users.set_password(db, users.require(db, uid), "a new password entirely")
    with store.read() as db:
        assert sessions.person(db, second, LIFETIMES) is None
        assert sessions.person(db, third, LIFETIMES) is None
    with store.write() as db:
        assert users.authenticate(db, "ada@example.org", "a new password entirely") is not None


def test_who_a_request_is(store: Database) -> None:
    now = [0.0]
    open_server = Identifier(store, [], [], LIFETIMES, clock=lambda: now[0])
    assert open_server.identify(Credentials()) == Caller.open()
    keyed = Identifier(store, ["server-key"], ["operator-key"], LIFETIMES, clock=lambda: now[0])
    assert keyed.identify(Credentials()) is None  # server keys and nobody to sign in: a key is required
    assert keyed.identify(Credentials(bearer="server-key")) == Caller.server()
    assert keyed.identify(Credentials(bearer="operator-key")) == Caller.server(operator=True)
    assert keyed.identify(Credentials(bearer="wrong")) is None  # a wrong key is refused, not anonymous
    uid = _person(store, admin=True)
    # The first person makes an open server one that needs signing in: within a second for a
    # server that had looked before (another server may have created them).
    assert open_server.identify(Credentials()) == Caller.open()
    now[0] += 1
    assert open_server.identify(Credentials()) == Caller.anonymous()
    assert keyed.identify(Credentials()) == Caller.anonymous()
    with store.write() as db:
        token = sessions.start(db, users.require(db, uid))
    caller = open_server.identify(Credentials(cookie=token))
    assert caller is not None and caller.kind == CallerKind.PERSON and caller.user_id == uid and caller.is_admin
    stale = open_server.identify(Credentials(cookie="not-a-session"))
    assert stale is not None and stale.kind == CallerKind.ANONYMOUS


def test_sign_in_attempts_are_limited_and_forgotten_after_the_window() -> None:
    now = [1000.0]
    throttle = Throttle(3, 60, clock=lambda: now[0], max_keys=2)
    for _ in range(3):
        assert throttle.retry_after("ada") == 0
        throttle.failed("ada")
    assert throttle.retry_after("ada") == 61
    now[0] += 30
    assert throttle.retry_after("ada") == 31
    now[0] += 31
    assert throttle.retry_after("ada") == 0
    throttle.failed("ada")
    throttle.succeeded("ada")
    assert throttle.retry_after("ada") == 0
    for name in ("a", "b", "c"):  # bounded memory: the oldest key is forgotten first
        for _ in range(3):
            throttle.failed(name)
    assert throttle.retry_after("a") == 0 and throttle.retry_after("c") > 0


@pytest.mark.postgres
def test_a_database_older_than_people_has_none(database_url: str) -> None:
    # Not migrated: the server answers as before people existed (healthz says what is wrong).
    store = Database.from_url(database_url)
    try:
        assert Identifier(store, [], [], LIFETIMES).identify(Credentials()) == Caller.open()
        assert Identifier(store, ["k"], [], LIFETIMES).identify(Credentials()) is None
    finally:
        store.dispose()
