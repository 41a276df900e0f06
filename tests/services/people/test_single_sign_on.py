"""The ID token's checks (signature, issuer, audience, expiry, nonce) and the trusted proxy header,
each refused where it must be."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from app.container import Container
from app.main import create_app
from app.security import TrustedProxies
from app.services.people import users
from app.services.people.access import CallerKind
from app.services.people.identify import Credentials
from app.services.people.oidc import check_id_token
from app.services.people.single_sign_on import SignInRefused
from app.settings import PeopleSettings, Settings
from tests.live import serve

ISSUER, CLIENT, NONCE = "https://id.example.org", "ragchat", "n-0nce"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})


def _token(key: Any = KEY, alg: str = "RS256", **claims: object) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": CLIENT, "sub": "s1", "iat": now, "exp": now + 300, "nonce": NONCE, **claims}
    return jwt.encode({"alg": alg, "kid": "k1"}, {k: v for k, v in body.items() if v is not None}, key)


def _check(token: str) -> dict[str, Any]:
    return check_id_token(token, KeySet([KEY]), ISSUER, CLIENT, NONCE, ["RS256", "HS256"])


def test_a_good_id_token_passes() -> None:
    assert _check(_token())["sub"] == "s1"
    assert _check(_token(aud=[CLIENT, "other"], azp=CLIENT))["sub"] == "s1"


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (lambda: _token(aud="another-client"), "token"),
        (lambda: _token(aud=[CLIENT, "other"]), "token"),  # several audiences and no azp naming us
        (lambda: _token(iss="https://evil.example.org"), "token"),
        (lambda: _token(exp=int(time.time()) - 3600), "token"),
        (lambda: _token(iat=int(time.time()) + 3600), "token"),
        (lambda: _token(nonce="replayed-nonce"), "token"),
        (lambda: _token(nonce=None), "token"),
        (lambda: _token(sub=None), "token"),
        (lambda: _token(key=OTHER_KEY), "signature"),  # same kid, another key: forged
        # A MAC keyed with something the attacker knows is never accepted, even if offered.
        (lambda: _token(key=OctKey.import_key(b"k" * 32), alg="HS256"), "signature"),
    ],
)
def test_id_tokens_that_must_be_refused(token: Any, reason: str) -> None:
    with pytest.raises(SignInRefused) as refused:
        _check(token())
    assert refused.value.reason == reason


def _scope(peer: str, **headers: str) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "client": (peer, 40000), "headers": raw}


def test_the_trusted_header_is_read_only_from_a_trusted_peer(caplog: pytest.LogCaptureFixture) -> None:
    proxies = TrustedProxies("X-Forwarded-Email", ["127.0.0.2/32", "10.1.0.0/16"])
    assert proxies.email(_scope("127.0.0.2", **{"X-Forwarded-Email": "ada@example.org"})) == "ada@example.org"
    assert proxies.email(_scope("10.1.200.3", **{"x-forwarded-email": "ada@example.org"})) == "ada@example.org"
    assert proxies.email(_scope("::ffff:10.1.0.9", **{"x-forwarded-email": "ada@example.org"})) == "ada@example.org"
    forged = {"x-forwarded-email": "admin@example.org", "x-forwarded-for": "127.0.0.2"}
    assert proxies.email(_scope("127.0.0.1", **forged)) == ""
    assert proxies.email(_scope("127.0.0.1", **forged)) == ""
    assert [r.message for r in caplog.records].count(
        "ignored x-forwarded-email from 127.0.0.1, which is not in RAGCHAT_PEOPLE__TRUSTED_PROXIES (said once)"
    ) == 1
    assert TrustedProxies(None, ["127.0.0.2/32"]).email(_scope("127.0.0.2", **{"x-forwarded-email": "a@b.org"})) == ""
    assert TrustedProxies("x-forwarded-email", []).email(_scope("127.0.0.2", **{"x-forwarded-email": "a@b.org"})) == ""


@pytest.fixture
def proxied(migrated: Settings) -> Iterator[tuple[str, Container]]:
    people = PeopleSettings(trusted_header="X-Forwarded-Email", trusted_proxies=["127.0.0.2/32"])
    settings = migrated.model_copy(update={"people": people})
    container = Container.build(settings)
    try:
        with serve(create_app(settings, container)) as base:
            yield base, container
    finally:
        container.close()


def _from(address: str, base: str) -> httpx.Client:
    return httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=address), timeout=30)


def test_behind_the_proxy_the_header_names_the_person(proxied: tuple[str, Container]) -> None:
    base, container = proxied
    ask = {"json": {"query": "{ __typename }"}, "headers": {"X-Forwarded-Email": "Grace@Example.org"}}
    with _from("127.0.0.1", base) as direct:  # not the proxy: the header is ignored
        assert direct.post("/graphql", **ask).status_code == 200  # type: ignore[arg-type]
    with container.store.read() as db:
        assert users.by_email(db, "grace@example.org") is None
    with _from("127.0.0.2", base) as proxy:
        assert proxy.post("/graphql", **ask).status_code == 200  # type: ignore[arg-type]
    with container.store.read() as db:
        grace = users.by_email(db, "grace@example.org")
    assert grace is not None and not grace.is_admin and grace.password_hash is None
    caller = container.identifier.identify(Credentials(proxy_email="grace@example.org"))
    assert caller is not None and caller.kind is CallerKind.PERSON and caller.user_id == grace.id
    with container.store.write() as db:
        users.set_disabled(db, users.require(db, grace.id), True)
    assert container.identifier.identify(Credentials(proxy_email="grace@example.org")) == caller.anonymous()
