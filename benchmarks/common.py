"""What every benchmark shares: its configuration, paired timing in rounds, ratio statistics, the
machine description, and writing results (JSON + PNG) and tables."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
DOCS_OUT = ROOT / "docs" / "benchmarks"
T = TypeVar("T")


@dataclass(frozen=True)
class Config:
    """How big and how long. ``quick`` (``--quick`` or ``BENCH_QUICK=1``) keeps ``make bench`` to a few
    minutes; ``tiny`` is for the smoke test: the smallest inputs that still run every code path."""

    quick: bool = False
    tiny: bool = False
    out_dir: Path = DOCS_OUT
    cache_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("BENCH_CACHE", "~/.cache/ragchat/bench")).expanduser()
    )

    def pick(self, full: T, quick: T, tiny: T) -> T:
        return tiny if self.tiny else quick if self.quick else full

    @property
    def label(self) -> str:
        return "tiny" if self.tiny else "quick" if self.quick else "full"


def main(run: Callable[[Config], dict[str, Any]], description: str) -> None:
    """Run one benchmark from the command line and print its ratio table."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("alembic", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    print(run(parse_config(description))["table"])


def parse_config(description: str, argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller inputs (also BENCH_QUICK=1)")
    parser.add_argument("--out", type=Path, default=DOCS_OUT, help="where JSON and PNG files go")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("BENCH_QUICK", "") not in ("", "0")
    return Config(quick=quick, out_dir=args.out)


def tiny(cfg: Config, out_dir: Path) -> Config:
    return replace(cfg, tiny=True, out_dir=out_dir)


# -- timing -----------------------------------------------------------------------------------
@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS (OpenBLAS under numpy) limited to one thread, so that a numpy baseline and ragchat each
    get one core. Needs threadpoolctl; without it, set OPENBLAS_NUM_THREADS=1 before starting."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
            logging.getLogger("benchmarks").warning("threadpoolctl is missing: BLAS may use several threads")
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def rounds(count: int, measures: dict[str, Callable[[int], float]]) -> dict[str, list[float]]:
    """Run every measure once per round and collect what each returns (seconds). The order rotates
    from round to round, so slow drifts of the machine's load hit every measure alike."""
    names = list(measures)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(count):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(measures[name](r))
    return out


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summary(values: Sequence[float], scale: float = 1000.0) -> dict[str, float]:
    """Median and p95 (nearest rank), in ms by default."""
    return {"median": statistics.median(values) * scale, "p95": p95(values) * scale, "n": len(values)}


def ratio(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float]:
    """Per-round ratios (each round's two numbers were measured back to back): median and p95,
    and the ratio of the two medians for comparison."""
    per_round = [a / b for a, b in zip(numerator, denominator, strict=True) if b > 0]
    return {
        "median": statistics.median(per_round),
        "p95": p95(per_round),
        "of_medians": statistics.median(numerator) / statistics.median(denominator),
    }


# -- the machine ------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": _cpu_model(),
        "memory_gib": round(_meminfo("MemTotal") / 2**20, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }
    try:
        import numpy
        import pysqlite3.dbapi2 as sqlite3
        import sqlite_vec

        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        info["sqlite"], info["sqlite_vec"] = conn.execute("SELECT sqlite_version(), vec_version()").fetchone()
        info["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover - all are dependencies
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _meminfo(key: str) -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# -- output -----------------------------------------------------------------------------------
def write(cfg: Config, name: str, result: dict[str, Any], figure: Any | None) -> dict[str, Any]:
    """Write ``<name>.json`` (and ``<name>.png``) into the output folder; returns the JSON payload."""
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "mode": cfg.label, "machine": machine(), **result}
    (cfg.out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2, default=_jsonable) + "\n")
    if figure is not None:
        figure.savefig(cfg.out_dir / f"{name}.png", dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(figure)
    return payload


def _jsonable(value: object) -> object:
    if hasattr(value, "item"):
        return value.item()  # numpy scalars
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)  # type: ignore[call-overload]
    return str(value)


def figure(columns: int = 1, width: float = 6.0, height: float = 4.0) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, columns, figsize=(width * columns, height), squeeze=False)
    return fig, axes[0]


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text (and Markdown) table."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(_align(c, raw, w) for c, raw, w in zip(r, row, widths, strict=True)) + " |"
        for r, row in zip(cells, rows, strict=True)
    ]
    return "\n".join([f"**{title}**", "", line, rule, *body, ""])


def _align(text: str, raw: object, width: int) -> str:
    return text.rjust(width) if isinstance(raw, int | float) else text.ljust(width)


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value == 0 or abs(value) >= 100:
            return f"{value:.0f}"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"
    return str(value)


def goal(met: bool) -> str:
    return "yes" if met else "**no**"
