"""Single sign-on against a real OpenID Connect provider on loopback: the browser's whole round
trip (ragchat's login, the provider's authorization page, ragchat's callback), and what must be
refused on the way back."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select

from app.container import Container
from app.db.models import BrowserSession, SignInFlow, User
from app.main import create_app
from app.security import CSRF_REFUSED, SESSION_COOKIE
from app.services.people import users
from app.services.people.access import CallerKind
from app.services.people.identify import Credentials
from app.settings import ApiSettings, OidcSettings, Settings
from tests.auth.provider import Provider, running_provider
from tests.live import serve

CLIENT_ID = "ragchat-test"


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@dataclass
class Server:
    base: str
    container: Container
    provider: Provider
    browsers: list[httpx.Client] = field(default_factory=list)

    def browser(self) -> httpx.Client:
        made = httpx.Client(base_url=self.base, follow_redirects=False, timeout=30)
        self.browsers.append(made)
        return made

    def to_callback(self, browser: httpx.Client, sub: str, claims: dict[str, object]) -> str:
        """Sign in at the provider as ``sub``; the callback URL it sends the browser back to."""
        self.provider.set_user(sub, claims)
        start = browser.get("/auth/oidc/login")
        assert start.status_code == 303, start.text
        authorize = start.headers["location"]
        assert authorize.startswith(self.provider.issuer + "/oauth2/authorize?")
        page = browser.get(authorize)  # the provider's own page, as a browser shows it
        assert page.status_code == 200 and "Authorize" in page.text
        consent = browser.post(authorize, data={"sub": sub})
        assert consent.status_code == 302, consent.text
        return consent.headers["location"]

    def sign_in(self, sub: str, claims: dict[str, object]) -> tuple[httpx.Client, httpx.Response]:
        browser = self.browser()
        return browser, browser.get(self.to_callback(browser, sub, claims))

    def person(self, email: str) -> User | None:
        with self.container.store.read() as db:
            return users.by_email(db, email)


def _serve(migrated: Settings, provider: Provider, api: ApiSettings | None = None, **oidc: object) -> Iterator[Server]:
    settings = migrated.model_copy(
        update={
            "oidc": OidcSettings(
                issuer=provider.issuer,
                client_id=CLIENT_ID,
                client_secret="s3cret",
                **oidc,  # type: ignore[arg-type]
            ),
            "api": api or migrated.api,
        }
    )
    container = Container.build(settings)
    try:
        with serve(create_app(settings, container)) as base:
            made = Server(base, container, provider)
            yield made
            for browser in made.browsers:
                browser.close()
    finally:
        container.close()


@pytest.fixture
def server(migrated: Settings, provider: Provider) -> Iterator[Server]:
    yield from _serve(migrated, provider)


def _refused(response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    location = urlsplit(response.headers["location"])
    assert location.path == "/sign-in"
    assert SESSION_COOKIE not in response.cookies
    return parse_qs(location.query)["error"][0]


def test_a_person_signs_in_through_the_provider_and_is_that_person_after(server: Server) -> None:
    claims = {"email": "Ada@Example.org", "email_verified": True, "name": "Ada Lovelace"}
    browser, done = server.sign_in("ada-sub", claims)
    assert done.status_code == 303 and done.headers["location"] == "/"
    token = done.cookies[SESSION_COOKIE]
    cookie_header = next(v for v in done.headers.get_list("set-cookie") if v.startswith(SESSION_COOKIE + "="))
    attributes = {part.strip().split("=")[0].lower() for part in cookie_header.split(";")}
    assert {"httponly", "path"} <= attributes and "samesite=lax" in cookie_header.lower()
    assert "path=/;" in cookie_header.lower() + ";" and "secure" not in attributes  # http: auto is not Secure

    ada = server.person("ada@example.org")
    assert ada is not None and ada.name == "Ada Lovelace" and not ada.is_admin
    assert ada.oidc_subject == f"{server.provider.issuer} ada-sub" and ada.password_hash is None
    with server.container.store.read() as db:
        assert db.scalar(select(BrowserSession.user_id).where(BrowserSession.revoked_at.is_(None))) == ada.id
        assert db.scalar(select(SignInFlow)) is None  # the flow was used up
    caller = server.container.identifier.identify(Credentials(cookie=token))
    assert caller is not None and caller.kind is CallerKind.PERSON and caller.user_id == ada.id
    # The browser's next API request carries the cookie and passes the perimeter as that person.
    answer = browser.post("/graphql", json={"query": "{ __typename }"})
    assert answer.status_code == 200 and answer.json() == {"data": {"__typename": "Query"}}

    # Signing in again is the same person, by the provider's subject, with a new session.
    _, again = server.sign_in("ada-sub", claims)
    assert again.cookies[SESSION_COOKIE] != token
    assert server.person("ada@example.org").id == ada.id  # type: ignore[union-attr]


def test_the_code_is_bound_to_its_pkce_verifier_and_the_request_carries_a_nonce(server: Server) -> None:
    server.sign_in("pkce-sub", {"email": "pkce@example.org", "email_verified": True})
    asked, exchanged = server.provider.authorize_queries[-1], server.provider.token_bodies[-1]
    assert asked["code_challenge_method"] == "S256" and asked["nonce"] and asked["state"]
    assert asked["scope"].split() == ["openid", "email", "profile"] and asked["client_id"] == CLIENT_ID
    digest = hashlib.sha256(exchanged["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == asked["code_challenge"]
    assert exchanged["redirect_uri"] == asked["redirect_uri"] == f"{server.base}/auth/oidc/callback"


def test_a_forged_a_replayed_and_another_browsers_callback_are_refused(server: Server) -> None:
    browser = server.browser()
    callback = server.to_callback(browser, "eve-sub", {"email": "eve@example.org", "email_verified": True})
    parts = urlsplit(callback)
    forged = callback.replace(parse_qs(parts.query)["state"][0], "forged-state")
    assert _refused(browser.get(forged)) == "state"
    # The real callback from a browser without the flow's cookie (a link sent to a victim).
    assert _refused(server.browser().get(callback)) == "state"
    # The flow was used up by that attempt: not even its own browser finishes it now.
    assert _refused(browser.get(callback)) == "state"
    assert server.person("eve@example.org") is None

    browser = server.browser()
    callback = server.to_callback(browser, "eve-sub", {"email": "eve@example.org", "email_verified": True})
    assert browser.get(callback).headers["location"] == "/"
    assert _refused(browser.get(callback)) == "state"  # replayed


def test_an_unverified_email_does_not_take_over_an_existing_person(server: Server) -> None:
    with server.container.store.write() as db:
        users.create(db, users.NewPerson("grace@example.org", "Grace", "correct horse battery"))
    _, done = server.sign_in("mallory-sub", {"email": "grace@example.org", "email_verified": False})
    assert _refused(done) == "unverified"
    grace = server.person("grace@example.org")
    assert grace is not None and grace.oidc_subject is None

    # Verified by the provider: the same person, now linked to the provider's subject.
    _, done = server.sign_in("grace-sub", {"email": "grace@example.org", "email_verified": True})
    assert done.headers["location"] == "/"
    linked = server.person("grace@example.org")
    assert linked is not None and linked.id == grace.id and linked.oidc_subject.endswith(" grace-sub")  # type: ignore[union-attr]
    # And another subject with the same verified address cannot take the account over.
    _, done = server.sign_in("other-sub", {"email": "grace@example.org", "email_verified": True})
    assert _refused(done) == "linked"


def test_a_disabled_person_is_not_signed_in(server: Server) -> None:
    server.sign_in("hal-sub", {"email": "hal@example.org", "email_verified": True})
    with server.container.store.write() as db:
        users.set_disabled(db, users.require(db, server.person("hal@example.org").id), True)  # type: ignore[union-attr]
    _, done = server.sign_in("hal-sub", {"email": "hal@example.org", "email_verified": True})
    assert _refused(done) == "disabled"


@pytest.fixture
def strict_server(migrated: Settings, provider: Provider) -> Iterator[Server]:
    yield from _serve(migrated, provider, allowed_domains=["Example.org"], admin_groups=["ragchat-admins"])


def test_allowed_domains_and_admin_groups(strict_server: Server) -> None:
    _, done = strict_server.sign_in("out-sub", {"email": "out@elsewhere.net", "email_verified": True})
    assert _refused(done) == "domain"
    assert strict_server.person("out@elsewhere.net") is None
    _, done = strict_server.sign_in("unv-sub", {"email": "unv@example.org", "email_verified": False})
    assert _refused(done) == "unverified"

    claims: dict[str, object] = {"email": "boss@example.org", "email_verified": True, "groups": ["ragchat-admins"]}
    _, done = strict_server.sign_in("boss-sub", claims)
    assert done.headers["location"] == "/"
    assert strict_server.person("boss@example.org").is_admin  # type: ignore[union-attr]
    # Out of the group at the provider: out of the administrators at the next sign-in.
    _, done = strict_server.sign_in("boss-sub", {**claims, "groups": ["staff"]})
    assert done.headers["location"] == "/"
    assert not strict_server.person("boss@example.org").is_admin  # type: ignore[union-attr]


@pytest.fixture
def invited_only(migrated: Settings, provider: Provider) -> Iterator[Server]:
    yield from _serve(migrated, provider, create_people=False)


def test_without_create_people_only_existing_people_sign_in(invited_only: Server) -> None:
    _, done = invited_only.sign_in("new-sub", {"email": "new@example.org", "email_verified": True})
    assert _refused(done) == "no_account"
    assert invited_only.person("new@example.org") is None


def test_the_provider_saying_no_and_a_server_without_single_sign_on(server: Server, settings: Settings) -> None:
    browser = server.browser()
    server.provider.set_user("no-sub", {"email": "no@example.org"})
    authorize = browser.get("/auth/oidc/login").headers["location"]
    denied = browser.post(authorize, data={"action": "deny"})
    assert _refused(browser.get(denied.headers["location"])) == "denied"

    container = Container.build(settings)
    try:
        with serve(create_app(settings, container)) as base, httpx.Client(base_url=base) as plain:
            assert _refused(plain.get("/auth/oidc/login", follow_redirects=False)) == "not_configured"
    finally:
        container.close()


@pytest.fixture
def keyed_server(migrated: Settings, provider: Provider) -> Iterator[Server]:
    yield from _serve(migrated, provider, ApiSettings(api_keys=["server-key"]))  # type: ignore[list-item]


def test_the_sign_in_pages_pass_a_keyed_perimeter_and_the_api_keeps_its_csrf_rule(keyed_server: Server) -> None:
    browser, done = keyed_server.sign_in("kay-sub", {"email": "kay@example.org", "email_verified": True})
    assert done.headers["location"] == "/"  # no key, yet the login and callback pages were reached
    # The session cookie is a credential, so a request a page elsewhere could send is still refused.
    simple = browser.post("/graphql", content='{"query": "{ __typename }"}', headers={"content-type": "text/plain"})
    assert simple.status_code == 400 and simple.json()["errors"][0]["message"] == CSRF_REFUSED
    assert browser.post("/graphql", json={"query": "{ __typename }"}).status_code == 200
