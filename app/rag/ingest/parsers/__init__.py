"""One module per file format, each turning bytes or decoded text into a :class:`ParsedDocument`.

The public entry point is :func:`app.rag.ingest.parsing.parse`; these modules are its workers.
"""
