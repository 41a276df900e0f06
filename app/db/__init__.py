"""The embedded SQLite store: engine, ORM models, sessions and migrations."""
