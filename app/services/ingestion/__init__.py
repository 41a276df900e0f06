"""Ingestion jobs: uploads spooled to disk (:mod:`.spool`), URLs fetched as documents
(:mod:`.url_documents`), the queue of jobs and items (:mod:`.jobs`) and the worker that drains it
(:mod:`.worker`).
"""
