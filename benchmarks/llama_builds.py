"""Issue 16, item 6: the local chat model (SmolLM2-135M, Q4_1) on each llama.cpp build, same run.

Each build runs in its own process (:mod:`benchmarks.llama_worker`, its ``llama_cpp`` first on
PYTHONPATH) with the model loaded once; rounds alternate which build goes first. Per round and
build: an ~800-token RAG prompt (SciFact abstracts) evaluated from an empty cache, then 64 tokens
decoded greedily, with the app's default thread count (half the CPUs; ``BENCH_LLAMA_THREADS``).
Reported: prompt and generation tokens/s (medians), each build ÷ the first
(``avx2``), and the prompt's seconds (what the time to the first token is made of).

Which builds: ``BENCH_LLAMA_BUILDS="name=DIR,name=DIR"`` (DIR holds a ``llama_cpp`` package, e.g.
from ``pip install --target DIR``; an empty DIR is this venv's own). Without it: every wheel the
Makefile built into ``~/.cache/ragchat/wheels/llama-<version>-<variant>/`` (``avx2`` first), each
installed once (offline, from that wheel) into the benchmark cache; with none there, the venv's own.

Usage: python -m benchmarks.llama_builds [--quick]
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import common, data
from benchmarks.common import Config

NAME = "llama_builds"
PROMPT_TOKENS = 800
GENERATE = 64
WHEELHOUSE = Path(os.environ.get("WHEELHOUSE", "~/.cache/ragchat/wheels")).expanduser()
log = logging.getLogger("benchmarks")


def builds(cfg: Config) -> dict[str, str]:
    """Build name → directory to put first on PYTHONPATH ("" for this venv's own llama_cpp)."""
    configured = os.environ.get("BENCH_LLAMA_BUILDS", "").strip()
    if configured:
        out: dict[str, str] = {}
        for item in configured.split(","):
            name, _, folder = item.partition("=")
            out[name.strip()] = folder.strip()
        return out
    found: dict[str, str] = {}
    for wheels in sorted(WHEELHOUSE.glob("llama-*-*/")):
        wheel = next(iter(sorted(wheels.glob("llama_cpp_python-*.whl"))), None)
        if wheel is None:
            continue
        variant = wheels.name.split("-", 2)[2]
        target = cfg.cache_dir / "llama-builds" / wheels.name
        if not (target / "llama_cpp").is_dir():
            log.info("llama_builds: installing %s into %s", wheel.name, target)
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
                check=True,
            )
        found[variant] = str(target)
    if not found:
        return {"installed": ""}
    # The portable build first: every other one is compared with it.
    return dict(sorted(found.items(), key=lambda item: item[0] != "avx2"))


class Worker:
    def __init__(self, name: str, folder: str, argv: list[str]) -> None:
        env = dict(os.environ)
        paths = [p for p in (folder, str(common.ROOT), env.get("PYTHONPATH", "")) if p]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.llama_worker", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=common.ROOT,
        )
        try:
            self.info = self._read()
        except BaseException:
            self.close()
            raise

    def measure(self) -> dict[str, float]:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        finally:
            if self.process.stdout is not None:
                self.process.stdout.close()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait(timeout=60)
            raise RuntimeError(f"llama.cpp build {self.name!r} exited ({code}) before answering")
        return json.loads(line)  # type: ignore[no-any-return]


def run(cfg: Config) -> dict[str, Any]:
    from app.llm.chat.local import SMOLLM2, shipped_models

    model = shipped_models()[SMOLLM2]
    prompt_tokens = cfg.pick(PROMPT_TOKENS, PROMPT_TOKENS, 48)
    generate = cfg.pick(GENERATE, GENERATE, 4)
    count = cfg.pick(7, 3, 1)
    # As the app's LocalChatModel by default (half the CPUs); BENCH_LLAMA_THREADS overrides.
    threads = int(os.environ.get("BENCH_LLAMA_THREADS", "0")) or max(1, (os.cpu_count() or 2) // 2)
    chosen = builds(cfg)
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        prompt = Path(tmp) / "prompt.txt"
        text = "\n\n".join(body for _, body in data.documents(12))
        prompt.write_text(f"Answer from these sources only.\n\n{text}\n\nQuestion: what do the sources show?")
        argv = [str(model), str(prompt), str(prompt_tokens), str(generate), str(threads)]
        workers = {name: Worker(name, folder, argv) for name, folder in chosen.items()}
        try:
            log.info("llama_builds: %s, %d rounds", ", ".join(workers), count)
            samples: dict[str, list[dict[str, float]]] = {name: [] for name in workers}
            order = list(workers)
            for r in range(count):
                shift = r % len(order)
                for name in order[shift:] + order[:shift]:
                    samples[name].append(workers[name].measure())
        finally:
            for worker in workers.values():
                worker.close()
    tokens = workers[order[0]].info["prompt_tokens"]
    result: dict[str, Any] = {"prompt_tokens": tokens, "generated_tokens": generate, "rounds": count, "builds": {}}
    for name, values in samples.items():
        result["builds"][name] = {
            "directory": chosen[name],
            "system_info": workers[name].info["system_info"],
            "prompt_tokens_per_s": common.summary([tokens / v["prompt_seconds"] for v in values], scale=1.0),
            "generate_tokens_per_s": common.summary([generate / v["generate_seconds"] for v in values], scale=1.0),
            "prompt_seconds": common.summary([v["prompt_seconds"] for v in values], scale=1.0),
            "prompt_seconds_raw": [v["prompt_seconds"] for v in values],
            "generate_seconds_raw": [v["generate_seconds"] for v in values],
            "prompt_cpu_raw": [v["prompt_cpu"] for v in values],
            "generate_cpu_raw": [v["generate_cpu"] for v in values],
        }
    base = order[0]
    rows = []
    for name, b in result["builds"].items():
        ratios = {
            f"{kind}{'_cpu' if clock == 'cpu' else ''}": common.ratio(
                result["builds"][base][f"{kind}_{clock}_raw"], b[f"{kind}_{clock}_raw"]
            )
            for kind in ("prompt", "generate")
            for clock in ("seconds", "cpu")
        }
        b["ratio_to_" + base] = ratios
        rows.append(
            [
                name,
                _features(b["system_info"]),
                b["prompt_tokens_per_s"]["median"],
                ratios["prompt"]["median"],
                ratios["prompt_cpu"]["median"],
                b["generate_tokens_per_s"]["median"],
                ratios["generate"]["median"],
                ratios["generate_cpu"]["median"],
                b["prompt_seconds"]["median"],
            ]
        )
    text = common.table(
        f"llama.cpp builds, SmolLM2-135M Q4_1, {tokens}-token prompt then {generate} tokens, {threads} threads; "
        f"medians of {count} alternating rounds (÷ {base}: per-round ratios of speed)",
        [
            "build",
            "features",
            "prompt tok/s",
            f"÷ {base}",
            f"÷ {base} (CPU s)",
            "generate tok/s",
            f"÷ {base}",
            f"÷ {base} (CPU s)",
            "prompt s",
        ],
        rows,
    )
    return common.write(cfg, NAME, {**result, "table": text}, _plot(result))


def _features(info: str) -> str:
    """The instruction sets a build's system info says it uses (``AVX512_VNNI = 1`` → AVX512_VNNI)."""
    on = [part.split("=")[0].strip() for part in info.split("|") if part.strip().endswith("= 1")]
    return " ".join(f for f in on if f.startswith(("AVX", "AMX", "FMA", "F16C", "BMI2"))) or "-"


def _plot(result: dict[str, Any]) -> Any:
    fig, (left, right) = common.figure(2, width=5)
    names = list(result["builds"])
    left.bar(names, [result["builds"][n]["prompt_tokens_per_s"]["median"] for n in names])
    left.set(ylabel="prompt tokens per second (median)", title="prompt evaluation")
    right.bar(names, [result["builds"][n]["generate_tokens_per_s"]["median"] for n in names], color="C1")
    right.set(ylabel="generated tokens per second (median)", title="generation")
    fig.suptitle("llama.cpp builds")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
