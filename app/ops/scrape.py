"""What /metrics reads from the database when it is scraped, and who may scrape it.

The ingestion queue is rows, the same for every worker: the worker answering the scrape counts
them (one grouped count over the state index) and sets the gauges the others read too
(app/ops/metrics.py). The connection pool is followed as it lends connections
(:func:`watch_pool`), so each worker's own count is current whichever worker is scraped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from sqlalchemy import Engine, event, func, select

from app.db.database import Database
from app.db.enums import UNFINISHED_ITEM_STATES, ItemState
from app.db.models import IngestionItem
from app.ops import metrics
from app.rag.index import vector_index


def read_ingestion(store: Database) -> None:
    with store.read() as db:
        rows = db.execute(select(IngestionItem.state, func.count()).group_by(IngestionItem.state)).all()
    counts = {str(state): 0 for state in ItemState} | {str(state): int(count) for state, count in rows}
    metrics.ingestion(counts, tuple(str(state) for state in UNFINISHED_ITEM_STATES))


def read_indexes(store: Database) -> None:
    """The in-memory vector indexes of this process (SQLite; PostgreSQL's are pgvector's, in the database)."""
    spaces, vectors = vector_index.loaded_rows(store.engine.pool)
    metrics.INDEX_SPACES.set(spaces)
    metrics.INDEX_VECTORS.set(vectors)


def watch_pool(engine: Engine) -> None:
    """Count the connections ``engine``'s pool has lent out (once per engine)."""
    if event.contains(engine, "checkout", _lent):
        return
    event.listen(engine, "checkout", _lent)
    event.listen(engine, "checkin", _returned)


def _lent(*_: object) -> None:
    metrics.DB_CONNECTIONS_IN_USE.inc()


def _returned(*_: object) -> None:
    metrics.DB_CONNECTIONS_IN_USE.dec()


class Allowed:
    """The peers RAGCHAT_OPS__METRICS_ALLOW lets read /metrics without a key."""

    def __init__(self, networks: Iterable[str]) -> None:
        self.networks = tuple(ipaddress.ip_network(entry, strict=False) for entry in networks)

    def allows(self, address: str) -> bool:
        if not self.networks or not address:
            return False
        try:
            peer = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(peer, ipaddress.IPv6Address) and peer.ipv4_mapped is not None:
            peer = peer.ipv4_mapped
        return any(peer in network for network in self.networks)
