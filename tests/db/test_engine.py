"""Every connection the engine hands out has sqlite-vec loaded and the pragmas we rely on."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from app.container import Container
from app.db.engine import make_engine
from app.errors import StorageError


def _connection_facts(engine):  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT vec_version(), (SELECT journal_mode FROM pragma_journal_mode), "
            "(SELECT foreign_keys FROM pragma_foreign_keys), (SELECT timeout FROM pragma_busy_timeout)"
        ).one()


@pytest.mark.sqlite_only(reason="SQLite's pragmas and the sqlite-vec extension on every pooled connection")
def test_every_pooled_connection_has_vec_wal_and_foreign_keys(database_url: str) -> None:
    engine = make_engine(database_url)
    with ThreadPoolExecutor(8) as pool:
        facts = list(pool.map(lambda _: _connection_facts(engine), range(32)))
    engine.dispose()
    for vec, journal, fks, busy in facts:
        assert vec.startswith("v0.1.")
        assert journal == "wal"
        assert fks == 1
        assert busy >= 5000


@pytest.mark.sqlite_only(reason="sqlite-vec's vec0 virtual table")
def test_vec0_knn_works_on_a_connection(database_url: str) -> None:
    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE VIRTUAL TABLE v USING vec0(embedding float[2])")
        conn.exec_driver_sql("INSERT INTO v(rowid, embedding) VALUES (1, '[1, 0]'), (2, '[0, 1]')")
        rows = conn.exec_driver_sql("SELECT rowid FROM v WHERE embedding MATCH '[0.9, 0.1]' AND k = 1").all()
    engine.dispose()
    assert rows == [(1,)]


@pytest.mark.sqlite_only(reason="a SQLite file's folder")
def test_database_folder_is_created_on_demand(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'a' / 'b' / 'x.db'}"
    engine = make_engine(url)
    assert _connection_facts(engine)[0]
    engine.dispose()
    assert (tmp_path / "a" / "b" / "x.db").exists()


def test_write_rolls_back_everything_on_error(container: Container) -> None:
    from app.db.models import Project

    with pytest.raises(RuntimeError), container.store.write() as db:
        db.add(Project(name="half"))
        db.flush()
        raise RuntimeError("boom")
    with container.store.read() as db:
        assert db.query(Project).count() == 0


def test_read_only_database_gives_a_storage_error(migrated) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import event, text
    from sqlalchemy.engine import make_url

    from app.db.database import Database
    from app.db.models import Project

    engine = make_engine(migrated.database_url)
    if engine.dialect.name == "postgresql":  # as a hot standby or a read-only database refuses writes
        name = make_url(migrated.database_url).database
        with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
        engine.dispose()
    else:
        event.listen(engine, "connect", lambda conn, _record: conn.execute("PRAGMA query_only = ON"))
    store = Database(engine)
    with pytest.raises(StorageError, match=r"read-?only"), store.write() as db:
        db.add(Project(name="x", description=""))
    store.dispose()
