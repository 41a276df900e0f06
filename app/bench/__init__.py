"""Benchmarks that run through the real code paths (`ragchat bench ...`)."""
