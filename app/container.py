"""What one running ragchat holds: settings, the store, providers and services.

Built once per process by the FastAPI lifespan (or by a CLI command, or a test) and passed
explicitly; there are no module-level singletons. Providers are built lazily, so a process that
never embeds never loads the model; tests pass fakes that implement the same Protocols.
"""

from __future__ import annotations

import threading

from app.db.database import Database
from app.llm.base import Embedder
from app.settings import Settings


class Container:
    def __init__(self, settings: Settings, db: Database, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.db = db
        self._embedder = embedder
        self._lock = threading.Lock()

    @classmethod
    def build(cls, settings: Settings, *, embedder: Embedder | None = None) -> Container:
        return cls(settings, Database.from_url(settings.database_url), embedder=embedder)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from app.llm.embedders.registry import build_embedder

                    self._embedder = build_embedder(self.settings)
        return self._embedder

    def close(self) -> None:
        self.db.dispose()
