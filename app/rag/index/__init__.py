"""The indexes behind search: embedding spaces, vectors, the in-memory vector and keyword indexes
kept coherent with SQLite, and their PostgreSQL counterparts. Every branch on the database dialect in
rag/ lives here."""
