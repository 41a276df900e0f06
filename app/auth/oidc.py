"""``GET /auth/oidc/login`` and ``GET /auth/oidc/callback``: single sign-on with OpenID Connect.

Login keeps a new flow server-side (app/services/people/single_sign_on.py), gives the browser the
flow's cookie (HttpOnly, SameSite=Lax so it comes back on the provider's top-level redirect, only
under /auth/oidc, ten minutes) and sends it to the provider (app/services/people/oidc.py). The
callback finds the flow by its state and that cookie, exchanges the code, checks the ID token,
signs the person in with the same session cookie as a password sign-in and sends the browser to
``/``. Every failure sends it to ``/sign-in?error=<reason>`` (the reasons: ``SignInRefused``) and
is logged with what went wrong; tokens and codes are never logged.

These are pages, not API: the perimeter lets GETs outside /graphql through unidentified, and
neither route reads or changes anything a cross-site page could abuse (a forged callback finds no
flow of its browser).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from app.security import cookie_secure, set_session_cookie
from app.services.people import sessions
from app.services.people import single_sign_on as sso
from app.services.people.single_sign_on import SignInRefused
from app.settings import Settings

log = logging.getLogger("ragchat.people")

LOGIN_PATH = "/auth/oidc/login"
CALLBACK_PATH = "/auth/oidc/callback"
FLOW_COOKIE = "ragchat_sign_in"
FLOW_COOKIE_PATH = "/auth/oidc"
SIGN_IN_PAGE = "/sign-in"


def oidc_routes(settings: Settings) -> APIRouter:
    router = APIRouter()
    oidc, people = settings.oidc, settings.people
    policy = sso.Policy(oidc.allowed_domains, oidc.admin_groups, oidc.create_people)

    def secure(request: Request) -> bool:
        return cookie_secure(people.cookie_secure, request.url.scheme)

    @router.get(LOGIN_PATH)
    async def login(request: Request) -> RedirectResponse:
        container: Any = request.app.state.container
        provider = container.single_sign_on
        if provider is None:
            return _refused(request, SignInRefused("not_configured", "single sign-on is not configured"))
        redirect_uri = oidc.redirect_url or f"{request.url.scheme}://{request.headers['host']}{CALLBACK_PATH}"

        def begin() -> sso.Flow:
            with container.store.write() as db:
                return sso.begin(db, redirect_uri)

        try:
            flow = await anyio.to_thread.run_sync(begin)
            target = await provider.authorization_url(flow)
        except SignInRefused as refused:
            return _refused(request, refused)
        response = _redirect(target)
        response.set_cookie(
            FLOW_COOKIE,
            flow.browser,
            max_age=int(sso.FLOW_LIFETIME.total_seconds()),
            path=FLOW_COOKIE_PATH,
            secure=secure(request),
            httponly=True,
            samesite="lax",
        )
        return response

    @router.get(CALLBACK_PATH)
    async def callback(request: Request) -> RedirectResponse:
        container: Any = request.app.state.container
        provider = container.single_sign_on
        query = request.query_params
        browser = request.cookies.get(FLOW_COOKIE, "")

        def finish() -> sso.Flow:
            with container.store.write() as db:
                return sso.finish(db, query.get("state", ""), browser)

        def sign_in(identity: sso.Identity) -> tuple[int, str]:
            with container.store.write() as db:
                user = sso.person_for(db, identity, policy)
                return user.id, sessions.start(db, user)

        try:
            if provider is None:
                raise SignInRefused("not_configured", "single sign-on is not configured")
            if "error" in query and not query.get("state"):  # nothing to finish; nobody is signed in
                raise SignInRefused("denied", f"the provider did not sign anyone in ({query['error'][:100]})")
            flow = await anyio.to_thread.run_sync(finish)  # used up whatever follows
            if "error" in query or not query.get("code"):
                said = query.get("error", "no code")[:100]
                raise SignInRefused("denied", f"the provider did not sign anyone in ({said})")
            identity = await provider.identity(query["code"], flow)
            person, token = await anyio.to_thread.run_sync(sign_in, identity)
        except SignInRefused as refused:
            return _refused(request, refused)
        log.info("person %s signed in through single sign-on (%s)", person, oidc.issuer)
        response = _redirect("/")
        response.delete_cookie(FLOW_COOKIE, path=FLOW_COOKIE_PATH, secure=secure(request), httponly=True)
        set_session_cookie(response, token, secure=secure(request), max_age=people.session_absolute_hours * 3600)
        return response

    return router


def _redirect(url: str) -> RedirectResponse:
    response = RedirectResponse(url, status_code=303)
    response.headers["cache-control"] = "no-store"
    return response


def _refused(request: Request, refused: SignInRefused) -> RedirectResponse:
    log.warning("single sign-on refused (%s): %s", refused.reason, refused.message)
    response = _redirect(f"{SIGN_IN_PAGE}?{urlencode({'error': refused.reason})}")
    if request.url.path == CALLBACK_PATH:
        response.delete_cookie(FLOW_COOKIE, path=FLOW_COOKIE_PATH, httponly=True)
    return response
