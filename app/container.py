"""What one running ragchat holds: settings, the store, providers and services.

Built once per process by the FastAPI lifespan (or by a CLI command, or a test) and passed
explicitly; there are no module-level singletons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.db.database import Database
from app.settings import Settings


@dataclass
class Container:
    settings: Settings
    db: Database
    extras: dict[str, object] = field(default_factory=dict)

    @classmethod
    def build(cls, settings: Settings) -> Container:
        return cls(settings=settings, db=Database.from_url(settings.database_url))

    def close(self) -> None:
        self.db.dispose()
