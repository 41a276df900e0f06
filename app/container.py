"""What one running ragchat holds: settings, the store, providers and services.

Built once per process by the FastAPI lifespan (or by a CLI command, or a test) and passed
explicitly; there are no module-level singletons. Providers are built lazily, so a process that
never embeds never loads the model; tests pass fakes that implement the same Protocols.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from app.db.database import Database
from app.llm.base import Embedder, Reranker
from app.security import TrustedProxies
from app.settings import Settings

if TYPE_CHECKING:
    from app.llm.base import ChatModels
    from app.llm.rerankers.http import HttpReranker
    from app.services.chat.live import LiveTurns
    from app.services.chat.service import ChatService
    from app.services.ingestion.worker import JobWorker
    from app.services.people.identify import Identifier
    from app.services.people.oidc import Provider
    from app.services.people.throttle import SignInLimits


class Container:
    def __init__(
        self,
        settings: Settings,
        store: Database,
        *,
        embedder: Embedder | None = None,
        chat_models: ChatModels | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._embedder = embedder
        self._chat_models = chat_models
        self._chat: ChatService | None = None
        self._live: LiveTurns | None = None
        self._reranker: HttpReranker | None = None
        self._jobs: JobWorker | None = None
        self._identifier: Identifier | None = None
        self._sign_in_limits: SignInLimits | None = None
        self._single_sign_on: Provider | None = None
        self._trusted_proxies: TrustedProxies | None = None
        self._lock = threading.RLock()

    @classmethod
    def build(
        cls, settings: Settings, *, embedder: Embedder | None = None, chat_models: ChatModels | None = None
    ) -> Container:
        return cls(settings, Database.from_url(settings.database_url), embedder=embedder, chat_models=chat_models)

    @property
    def identifier(self) -> Identifier:
        """Who a request is (app/services/people/identify.py)."""
        with self._lock:
            if self._identifier is None:
                from datetime import timedelta

                from app.services.people.identify import Identifier
                from app.services.people.sessions import Lifetimes

                api, people = self.settings.api, self.settings.people
                self._identifier = Identifier(
                    self.store,
                    [k.get_secret_value() for k in api.api_keys],
                    [k.get_secret_value() for k in api.operator_keys],
                    Lifetimes(
                        idle=timedelta(minutes=people.session_idle_minutes),
                        absolute=timedelta(hours=people.session_absolute_hours),
                    ),
                    proxy_creates_people=people.trusted_header_creates_people,
                )
            return self._identifier

    @property
    def sign_in_limits(self) -> SignInLimits:
        """How often sign-ins may fail, per account and per address; one count per process."""
        with self._lock:
            if self._sign_in_limits is None:
                from app.services.people.throttle import SignInLimits, Throttle

                people = self.settings.people
                window = people.sign_in_window_seconds
                self._sign_in_limits = SignInLimits(
                    account=Throttle(people.sign_in_attempts_per_account, window),
                    address=Throttle(people.sign_in_attempts_per_address, window),
                )
            return self._sign_in_limits

    @property
    def trusted_proxies(self) -> TrustedProxies:
        """The authenticating proxy's header and addresses (RAGCHAT_PEOPLE__TRUSTED_HEADER, __TRUSTED_PROXIES)."""
        with self._lock:
            if self._trusted_proxies is None:
                people = self.settings.people
                self._trusted_proxies = TrustedProxies(people.trusted_header, people.trusted_proxies)
            return self._trusted_proxies

    @property
    def single_sign_on(self) -> Provider | None:
        """The OpenID Connect provider people sign in with (RAGCHAT_OIDC__ISSUER), or None."""
        with self._lock:
            if self._single_sign_on is None and self.settings.oidc.enabled:
                from app.services.people.oidc import Provider

                self._single_sign_on = Provider(self.settings.oidc)
            return self._single_sign_on

    @property
    def chat_models(self) -> ChatModels:
        with self._lock:
            if self._chat_models is None:
                from app.llm.chat.registry import chat_registry

                self._chat_models = chat_registry(self.settings)
            return self._chat_models

    @property
    def chat(self) -> ChatService:
        """The chat engine; one per process, because it owns the concurrency cap."""
        with self._lock:
            if self._chat is None:
                from app.services.chat.service import ChatService

                self._chat = ChatService(
                    self.store, self.settings, lambda: self.embedder, self.chat_models, reranker=self.reranker
                )
            return self._chat

    @property
    def live(self) -> LiveTurns:
        """The turns running for the API, which clients follow and re-attach to; one registry per
        process, over the chat engine."""
        with self._lock:
            if self._live is None:
                from app.services.chat.live import LiveTurns

                self._live = LiveTurns(self.chat)
            return self._live

    @property
    def reranker(self) -> Reranker | None:
        """The operator's rerank endpoint (RAGCHAT_RERANK__URL), or None when there is none."""
        with self._lock:
            if self._reranker is None and self.settings.rerank.url is not None:
                from app.llm.rerankers.http import HttpReranker

                self._reranker = HttpReranker(self.settings.rerank)
            return self._reranker

    @property
    def jobs(self) -> JobWorker:
        """The ingestion worker and its progress events; one per process (the lifespan starts it)."""
        with self._lock:
            if self._jobs is None:
                from app.services.ingestion.jobs import spool_dir
                from app.services.ingestion.worker import JobEvents, JobWorker

                s = self.settings
                self._jobs = JobWorker(self.store, lambda: self.embedder, s.ingest, s.jobs, spool_dir(s), JobEvents())
            return self._jobs

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from app.llm.embedders.registry import build_embedder

                    self._embedder = build_embedder(self.settings)
        return self._embedder

    def close(self) -> None:
        """Stop the ingestion worker (waiting, bounded, for its threads to leave the store), close
        provider clients, then dispose of the engine."""
        if self._jobs is not None:
            self._jobs.join()
        close = getattr(self._embedder, "close", None)  # remote embedders hold HTTP clients
        if close is not None:
            close()
        self.store.dispose()

    async def aclose(self) -> None:
        """Close provider HTTP clients, then the database."""
        aclose = getattr(self._chat_models, "aclose", None)
        if aclose is not None:
            await aclose()
        if self._reranker is not None:
            await self._reranker.aclose()
        self.close()
