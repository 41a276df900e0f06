"""Outbound HTTP for user-supplied URLs: an SSRF-guarded fetcher (``fetch``) and the address rules
it applies (``addresses``). Reusable by anything that fetches a URL a user gave: documents by URL
today, HTTP tools later."""
