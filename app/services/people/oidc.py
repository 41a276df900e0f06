"""OpenID Connect sign-in, the protocol side: the operator's provider (RAGCHAT_OIDC__ISSUER), the
authorization request and the checks of what comes back.

- **Discovery**: ``<issuer>/.well-known/openid-configuration``, which must name the configured
  issuer character for character (OpenID Connect Discovery 1.0, section 4.3); kept for an hour.
- **The request** (:meth:`Provider.authorization_url`): the authorization code flow with PKCE
  (S256), a ``state`` and a ``nonce`` (app/services/people/single_sign_on.py keeps them).
- **The answer** (:meth:`Provider.identity`): the code is exchanged with authlib's client (the
  client secret, if any, as HTTP Basic; the PKCE verifier), and the ID token is checked: its
  signature by a key of the provider's JWKS (asymmetric algorithms only: never ``none``, never a
  MAC keyed with a secret the client knows too), then ``iss``, ``aud`` (and ``azp`` when there are
  several audiences), ``exp``, ``iat`` and the flow's ``nonce``.

Every request to the provider has one wall-clock deadline (RAGCHAT_OIDC__TIMEOUT), however the
provider paces its bytes, and a bounded answer. Whatever goes wrong becomes a
:class:`~app.services.people.single_sign_on.SignInRefused`: ``provider`` (unreachable, or an
answer this cannot read), ``denied`` (the token endpoint refused the code) or ``token`` (the ID
token failed a check).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx2
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from app.services.people.single_sign_on import Flow, Identity, SignInRefused
from app.settings import OidcSettings

log = logging.getLogger("ragchat.people")

DISCOVERY = "/.well-known/openid-configuration"
METADATA_TTL = 3600.0
MAX_ANSWER_BYTES = 1024 * 1024  # a discovery document or a key set; real ones are a few KB
CLOCK_LEEWAY = 60  # seconds of clock skew allowed between this server and the provider
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"}
)


class Provider:
    """One provider, one per process (it caches the discovery document and the keys)."""

    def __init__(self, settings: OidcSettings, *, clock: Any = time.monotonic) -> None:
        if settings.issuer is None or settings.client_id is None:
            raise ValueError("OidcSettings.issuer or client_id is not set")
        self.settings = settings
        self.issuer = settings.issuer
        self.client_id = settings.client_id
        self._clock = clock
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._keys: KeySet | None = None

    async def authorization_url(self, flow: Flow) -> str:
        """Where to send the browser to sign in (raises SignInRefused("provider") if discovery fails)."""
        metadata = await self.metadata()
        async with self._client(flow) as client:
            url, _ = client.create_authorization_url(
                _endpoint(metadata, "authorization_endpoint"),
                state=flow.state,
                code_verifier=flow.code_verifier,
                nonce=flow.nonce,
            )
        return str(url)

    async def identity(self, code: str, flow: Flow) -> Identity:
        """Who signed in: the code exchanged, the ID token checked (this module's docstring)."""
        metadata = await self.metadata()
        try:
            async with self._client(flow) as client, asyncio.timeout(self.settings.timeout):
                token = await client.fetch_token(
                    _endpoint(metadata, "token_endpoint"),
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=flow.code_verifier,
                    redirect_uri=flow.redirect_uri,
                )
        except TimeoutError:
            raise self._unreachable(f"its token endpoint did not answer within {self.settings.timeout:g} s") from None
        except OAuthError as exc:
            raise SignInRefused("denied", f"the provider refused the code: {exc.error}") from exc
        except (httpx2.HTTPError, ValueError, KeyError) as exc:
            raise self._unreachable(f"its token endpoint failed ({type(exc).__name__})") from exc
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignInRefused("token", "the provider's token answer has no ID token (is 'openid' a scope?)")
        claims = await self._verified_claims(id_token, metadata, flow.nonce)
        return _identity(self.issuer, claims, self.settings.groups_claim)

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None or self._clock() - self._metadata_at > METADATA_TTL:
            found = await self._get_json(self.issuer.rstrip("/") + DISCOVERY, "discovery document")
            if found.get("issuer") != self.issuer:
                raise self._unreachable(
                    f"its discovery document names the issuer {str(found.get('issuer'))[:200]!r}, not {self.issuer!r}"
                )
            self._metadata, self._metadata_at, self._keys = found, self._clock(), None
        return self._metadata

    async def _key_set(self, metadata: Mapping[str, Any], *, fresh: bool = False) -> KeySet:
        if self._keys is None or fresh:
            found = await self._get_json(_endpoint(metadata, "jwks_uri"), "key set")
            try:
                self._keys = KeySet.import_key_set(found)  # type: ignore[arg-type]
            except (JoseError, ValueError, KeyError, TypeError) as exc:
                raise self._unreachable(f"its key set cannot be read ({type(exc).__name__})") from exc
        return self._keys

    async def _verified_claims(self, id_token: str, metadata: Mapping[str, Any], nonce: str) -> dict[str, Any]:
        offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = offered if isinstance(offered, list) else []
        for fresh in (False, True):  # a key not in the cached set: the provider may have rotated
            keys = await self._key_set(metadata, fresh=fresh)
            try:
                return check_id_token(id_token, keys, self.issuer, self.client_id, nonce, algorithms)
            except SignInRefused as refused:
                if refused.reason != "signature" or fresh:
                    raise SignInRefused("token", refused.message) from refused
        raise AssertionError("unreachable")

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with (
                asyncio.timeout(self.settings.timeout),
                httpx2.AsyncClient(timeout=self.settings.timeout) as client,
                client.stream("GET", url, headers={"accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise self._unreachable(f"its {what} answered HTTP {response.status_code}")
                body = bytearray()
                async for part in response.aiter_bytes():
                    body += part
                    if len(body) > MAX_ANSWER_BYTES:
                        raise self._unreachable(f"its {what} is larger than {MAX_ANSWER_BYTES} bytes")
        except TimeoutError:
            raise self._unreachable(f"its {what} did not arrive within {self.settings.timeout:g} s") from None
        except httpx2.HTTPError as exc:
            raise self._unreachable(f"its {what} could not be fetched ({type(exc).__name__})") from exc
        try:
            found = json.loads(body)
        except ValueError:
            found = None
        if not isinstance(found, dict):
            raise self._unreachable(f"its {what} is not a JSON object")
        return found

    def _client(self, flow: Flow) -> AsyncOAuth2Client:
        secret = self.settings.client_secret
        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=secret.get_secret_value() if secret is not None else None,
            scope=" ".join(self.settings.scopes),
            redirect_uri=flow.redirect_uri,
            code_challenge_method="S256",
            timeout=self.settings.timeout,
        )

    def _unreachable(self, why: str) -> SignInRefused:
        return SignInRefused("provider", f"the single sign-on provider {self.issuer} failed: {why}")


def check_id_token(
    id_token: str, keys: KeySet, issuer: str, client_id: str, nonce: str, algorithms: list[str]
) -> dict[str, Any]:
    """The ID token's claims once its signature (by one of ``keys``, with one of ``algorithms``),
    ``iss``, ``aud``/``azp``, ``exp``, ``iat`` and ``nonce`` are checked; SignInRefused("token") if
    any fails ("signature" for the signature, so the caller may fetch fresh keys and try again)."""
    try:
        claims = jwt.decode(id_token, keys, algorithms=sorted(ASYMMETRIC & set(algorithms))).claims
    except JoseError as exc:
        raise SignInRefused("signature", f"the ID token's signature does not verify ({exc.error})") from exc
    registry = jwt.JWTClaimsRegistry(
        leeway=CLOCK_LEEWAY,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": client_id},
        sub={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise SignInRefused("token", f"the ID token fails a check: {exc.error} {exc.description or ''}") from exc
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    azp = claims.get("azp")
    if (len(audiences) > 1 or azp is not None) and azp != client_id:
        raise SignInRefused("token", "the ID token was issued to another client (azp)")
    return claims


def _endpoint(metadata: Mapping[str, Any], name: str) -> str:
    url = metadata.get(name)
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise SignInRefused("provider", f"the provider's discovery document has no usable {name}")
    return url


def _identity(issuer: str, claims: Mapping[str, Any], groups_claim: str) -> Identity:
    email = claims.get("email")
    verified = claims.get("email_verified")
    groups = claims.get(groups_claim)
    if isinstance(groups, str):
        groups = [groups]
    name = claims.get("name") or claims.get("preferred_username") or ""
    return Identity(
        issuer=issuer,
        subject=str(claims["sub"]),
        email=email if isinstance(email, str) and email else None,
        # Some providers send the string "true"; anything else is not a verification.
        email_verified=verified is True or verified == "true",
        name=name if isinstance(name, str) else "",
        groups=frozenset(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else frozenset(),
    )
