"""Single sign-on, the database side: sign-ins under way, and the person a provider (or an
authenticating proxy) names.

A sign-in through the OpenID Connect provider (app/services/people/oidc.py) is a :class:`Flow`
kept in ``sign_in_flows`` from the login redirect to the callback: found by the ``state`` the
provider hands back, only from the browser that started it (the digest of its flow cookie), within
:data:`FLOW_LIFETIME`, and used once (deleted as it is read), so a replayed or forged callback finds
nothing.

Who signs in (:func:`person_for`): the person already linked to the provider's subject
(``users.oidc_subject`` = ``<issuer> <sub>``); else the person with the same email, **only when the
provider says the email is verified** (an unverified address is whatever the account's owner typed,
and would take over that person's account); else a new member, when the settings create people.
An allowed-domain list admits verified emails of those domains only; administrator groups, when
configured, decide at every sign-in who is an administrator.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.models import SignInFlow, User, utcnow
from app.errors import ForbiddenError, ValidationError
from app.services.people import users

FLOW_LIFETIME = timedelta(minutes=10)


class SignInRefused(ForbiddenError):
    """Single sign-on did not sign anyone in. ``reason`` is a short word the sign-in page explains
    (``/sign-in?error=<reason>``); ``message`` is for the log."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class Flow:
    """A sign-in under way: the values the authorization request carries and the callback checks."""

    state: str
    nonce: str
    code_verifier: str
    redirect_uri: str
    browser: str  # the flow cookie's value: binds the callback to the browser that started it


def begin(db: Session, redirect_uri: str, *, now: datetime | None = None) -> Flow:
    """A new flow (and the expired ones swept away: every login is also the cleaner)."""
    now = now or utcnow()
    db.execute(delete(SignInFlow).where(SignInFlow.created_at < now - FLOW_LIFETIME))
    flow = Flow(
        state=secrets.token_urlsafe(32),
        nonce=secrets.token_urlsafe(32),
        code_verifier=secrets.token_urlsafe(64),  # 86 characters, within RFC 7636's 43-128
        redirect_uri=redirect_uri,
        browser=secrets.token_urlsafe(32),
    )
    db.add(
        SignInFlow(
            state_hash=_digest(flow.state),
            browser_hash=_digest(flow.browser),
            nonce=flow.nonce,
            code_verifier=flow.code_verifier,
            redirect_uri=redirect_uri,
            created_at=now,
        )
    )
    db.flush()
    return flow


def finish(db: Session, state: str, browser: str, *, now: datetime | None = None) -> Flow:
    """The flow ``state`` names, used up; :class:`SignInRefused` ("state") when there is none, it
    expired, or another browser started it. Deleted whatever the outcome: a state is tried once."""
    now = now or utcnow()
    if not state or len(state) > 200:
        raise SignInRefused("state", "the callback carries no usable state")
    row = db.scalar(select(SignInFlow).where(SignInFlow.state_hash == _digest(state)))
    if row is None:
        raise SignInRefused("state", "the callback's state is unknown or was already used")
    # The delete must be this request's: two callbacks racing with one state, only one finishes.
    taken = db.execute(delete(SignInFlow).where(SignInFlow.id == row.id)).rowcount  # type: ignore[attr-defined]
    if taken != 1:
        raise SignInRefused("state", "the callback's state was already used")
    if not browser or not secrets.compare_digest(row.browser_hash, _digest(browser)):
        raise SignInRefused("state", "the callback comes from another browser than the sign-in started in")
    if now - row.created_at > FLOW_LIFETIME:
        raise SignInRefused("state", "the sign-in took longer than ten minutes")
    return Flow(state, row.nonce, row.code_verifier, row.redirect_uri, browser)


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in (the checked ID token's claims)."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str = ""
    groups: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.issuer} {self.subject}"


@dataclass(frozen=True)
class Policy:
    """RAGCHAT_OIDC__ALLOWED_DOMAINS, __ADMIN_GROUPS and __CREATE_PEOPLE."""

    allowed_domains: Collection[str] = ()
    admin_groups: Collection[str] = ()
    create_people: bool = True


def _checked_email(identity: Identity, policy: Policy) -> str | None:
    if identity.email is None:
        if policy.allowed_domains:
            raise SignInRefused("email", "the provider sent no email, and only some domains may sign in")
        return None
    try:
        email = users.normalise_email(identity.email)
    except ValidationError:
        raise SignInRefused("email", f"the provider's email {identity.email[:100]!r} is not an address") from None
    if policy.allowed_domains:
        if email.rpartition("@")[2] not in policy.allowed_domains:
            raise SignInRefused("domain", f"{email} is not in an allowed domain (RAGCHAT_OIDC__ALLOWED_DOMAINS)")
        if not identity.email_verified:
            raise SignInRefused("unverified", f"the provider has not verified {email}, so its domain proves nothing")
    return email


def person_for(db: Session, identity: Identity, policy: Policy) -> User:
    """The person ``identity`` signs in as (this module's docstring), linked to the subject from now
    on; :class:`SignInRefused` when nobody may."""
    email = _checked_email(identity, policy)
    user = db.scalar(select(User).where(User.oidc_subject == identity.key))
    if user is None and email is not None:
        same_email = users.by_email(db, email)
        if same_email is not None:
            if not identity.email_verified:
                raise SignInRefused(
                    "unverified", f"a person with {email} exists, and the provider has not verified that address"
                )
            if same_email.oidc_subject is not None:
                raise SignInRefused("linked", f"{email} already signs in as another account of a provider")
            user = same_email
    if user is None:
        if not policy.create_people:
            raise SignInRefused("no_account", f"{email or identity.subject} has no account here; ask an administrator")
        if email is None:
            raise SignInRefused("email", "the provider sent no email, and a new person needs one")
        user = users.create(db, users.NewPerson(email, identity.name[:200]))
    if user.disabled:
        raise SignInRefused("disabled", f"{user.email} is disabled")
    user.oidc_subject = identity.key
    if policy.admin_groups:
        user.is_admin = bool(identity.groups & set(policy.admin_groups))
    db.flush()
    return user


def person_by_header(db: Session, email: str, *, create: bool) -> User | None:
    """The person an authenticating proxy names by email; created when ``create`` and unknown.
    None for a disabled person, an unknown one (not created) or a value that is not an email."""
    try:
        email = users.normalise_email(email)
    except ValidationError:
        return None
    user = users.by_email(db, email)
    if user is None and create:
        user = users.create(db, users.NewPerson(email, email.partition("@")[0]))
    return None if user is None or user.disabled else user
