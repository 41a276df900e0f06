"""Who a request is: the :class:`Caller` its credentials name.

- ``Authorization: Bearer <key>``: a server key (``RAGCHAT_API__API_KEYS``, ``__OPERATOR_KEYS``,
  compared in constant time) is the server; an ``rck_`` key is its person, scoped. A bearer key
  that is neither is refused (``None``): a wrong key is an error, never a quiet anonymous call.
  Neither is a key when the server has server keys and no people: refused too, as before people
  existed (nobody could sign in, so nothing would answer an anonymous caller).
- Else the email an authenticating proxy put in ``RAGCHAT_PEOPLE__TRUSTED_HEADER`` (only when the
  connection comes from one of ``__TRUSTED_PROXIES``: app/security.py :class:`TrustedProxies`): that
  person, created on first sight unless ``__TRUSTED_HEADER_CREATES_PEOPLE`` is off; a disabled or
  unknown person goes on as if the header were absent. It comes before the cookie: behind such a
  proxy, the proxy says who is at the browser.
- Else the session cookie: its person while the session is valid; a stale cookie is anonymous (the
  browser is shown the sign-in page, not an error).
- Else nobody: the server is **open** when it has no people and no keys (the single-user default,
  on loopback only — ``security.check_exposure``), **anonymous** otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

from app.db.database import Database
from app.errors import StorageError
from app.security import key_matches
from app.services.people import keys, sessions, single_sign_on, users
from app.services.people.access import Caller, CallerKind

PEOPLE_RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Credentials:
    bearer: str = ""  # the key of "Authorization: Bearer <key>" (or of a websocket's connection_init)
    cookie: str = ""  # the session cookie's token
    proxy_email: str = ""  # the trusted header's value, set only for a request from a trusted proxy


class Identifier:
    def __init__(
        self,
        store: Database,
        api_keys: list[str],
        operator_keys: list[str],
        lifetimes: sessions.Lifetimes,
        *,
        proxy_creates_people: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.api_keys = api_keys
        self.operator_keys = operator_keys
        self.server_keys = [*api_keys, *operator_keys]
        self.lifetimes = lifetimes
        self.proxy_creates_people = proxy_creates_people
        self.clock = clock
        self._people_exist = False  # once true, stays true: people are disabled, never deleted
        self._checked_at: float | None = None

    def people_exist(self) -> bool:
        """Whether the server has people. A "no" is asked again after a second: another server on
        the same database may create the first person."""
        if self._recheck_due():
            try:
                with self.store.read() as db:
                    self._people_exist = users.count(db) > 0
            except (OperationalError, ProgrammingError, StorageError) as exc:
                # Not migrated yet (no people table): no one can exist, as before people did. An
                # unreadable database (the store's StorageError): what was last read (people, once
                # seen, are never forgotten), so its requests fail with the storage error a client
                # can act on. Asked again next time.
                if isinstance(exc, StorageError) or _no_people_table(exc):
                    return self._people_exist
                raise
            self._checked_at = self.clock()
        return self._people_exist

    def saw_people(self) -> None:
        """The first person was just created in this process: from now on, no request is open."""
        self._people_exist = True

    def _recheck_due(self) -> bool:
        if self._people_exist:
            return False
        return self._checked_at is None or self.clock() - self._checked_at >= PEOPLE_RECHECK_SECONDS

    def needs_database(self, given: Credentials) -> bool:
        """Whether :meth:`identify` would read the database (else it is cheap enough for the loop)."""
        if given.bearer:
            return keys.is_personal(given.bearer)
        return bool(given.cookie or given.proxy_email) or self._recheck_due()

    def identify(self, given: Credentials) -> Caller | None:
        """The caller, or None when a bearer key was given and is not valid. Blocking: call from a
        worker thread."""
        if given.bearer:
            if key_matches(given.bearer, self.server_keys):
                return Caller.server(operator=key_matches(given.bearer, self.operator_keys))
            if not keys.is_personal(given.bearer):
                return None
            with self.store.read() as db:
                found = keys.resolve(db, given.bearer)
            if found is None:
                return None
            user, scope, due = found
            if due:
                with self.store.write() as db:
                    keys.touch(db, scope.key_id)
            return Caller(CallerKind.PERSON, user_id=user.id, is_admin=user.is_admin, key=scope)
        if given.proxy_email:
            with self.store.read() as db:
                named = single_sign_on.person_by_header(db, given.proxy_email, create=False)
            if named is None and self.proxy_creates_people:  # a write only for someone new
                with self.store.write() as db:
                    named = single_sign_on.person_by_header(db, given.proxy_email, create=True)
            if named is not None:
                self._people_exist = True
                return Caller(CallerKind.PERSON, user_id=named.id, is_admin=named.is_admin)
        if given.cookie:
            with self.store.read() as db:
                signed_in = sessions.person(db, given.cookie, self.lifetimes)
            if signed_in is not None:
                user, due_session = signed_in
                if due_session is not None:
                    with self.store.write() as db:
                        sessions.touch(db, due_session)
                return Caller(CallerKind.PERSON, user_id=user.id, is_admin=user.is_admin)
        if not self.people_exist():
            return None if self.server_keys else Caller.open()
        return Caller.anonymous()


def _no_people_table(exc: DBAPIError) -> bool:
    """Whether ``exc`` says the people table does not exist (a database older than people)."""
    said = str(exc.orig).lower()
    return "users" in said and ("no such table" in said or "does not exist" in said)
