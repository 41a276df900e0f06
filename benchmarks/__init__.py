"""ragchat's performance benchmarks: `make bench` (all of them) or `python -m benchmarks.<name>`.

Every benchmark measures ragchat side by side with a baseline in the same process, round by round,
and reports ratios (medians and p95 of per-round ratios) rather than bare times: the machines this
runs on are shared and noisy. Results go to docs/benchmarks/<name>.json and <name>.png;
docs/BENCHMARKS.md explains them.
"""
