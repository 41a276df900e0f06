"""Generated cases per reliability suite, added up by tests/conftest.py's terminal summary (across
xdist workers too); docs/RELIABILITY.md quotes them."""

from __future__ import annotations

from collections import Counter

CASES: Counter[str] = Counter()
