"""Issue 16, item 4: the local embedder at int8 vs fp32 on the same chunks, in one run.

Both precisions embed the very same SciFact chunk texts (raw ``embed()``) and ingest the very same
files end to end (``Ingestor``: parse, chunk, embed, write), in rounds whose order rotates.
Reported: chunks/s of each and int8 ÷ fp32 per round (median, worst); the arithmetic each achieves
per core (GFLOP/s: the model's matrix products over the real tokens, no padding counted, ÷ the
process's CPU seconds) next to the core's peak derived from /proc/cpuinfo (:func:`peak`); and the
cosine between the two precisions' vectors of each chunk (both are one vector space).

Usage: python -m benchmarks.embedder_int8 [--quick]
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.rag.ingest.pipeline import Ingestor, Source
from app.settings import IngestSettings
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.ingestion import _fresh

NAME = "embedder_int8"
GOAL = 1.8
log = logging.getLogger("benchmarks")

# all-MiniLM-L6-v2: 6 layers, width 384, feed-forward 1536.
LAYERS, WIDTH, FFN = 6, 384, 1536


def matmul_flops(length: int) -> int:
    """Multiply-adds x 2 of one sequence of ``length`` tokens: Q, K, V, output and the two feed-forward
    projections (the weights: the part that runs as int8), plus attention's scores and mix (fp32)."""
    weights = 2 * length * WIDTH * (4 * WIDTH + 2 * FFN)
    attention = 2 * 2 * length * length * WIDTH
    return LAYERS * (weights + attention)


def weight_flops(length: int) -> int:
    return LAYERS * 2 * length * WIDTH * (4 * WIDTH + 2 * FFN)


def peak(cpuinfo: str | None = None) -> dict[str, Any]:
    """The per-core peak of fp32 FMA and of int8 dot products, from /proc/cpuinfo.

    fp32 FLOP/cycle = FMA units x fp32 lanes per unit x 2 (a fused multiply-add is two FLOPs).
    AMD Zen 2-4 (family 23/25) have two 256-bit FMA pipes, AVX-512 or not (Zen 4 splits a 512-bit
    op over both): 2 x 8 x 2 = 32; Zen 5 (family 26) has 512-bit pipes: 64. Intel cores with AVX-512
    are counted with two 512-bit FMA units (2 x 16 x 2 = 64), with AVX2 only 2 x 8 x 2 = 32.
    int8: a VNNI dot product (vpdpbusd) does 4 multiply-adds per 32-bit lane, so 4x the fp32 rate
    on the same pipes; without VNNI (vpmaddubsw + vpmaddwd + vpaddd) half that, 2x.
    The clock is the kernel's ``cpu MHz`` (under a hypervisor, usually the nominal clock).
    """
    text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    vendor = fields.get("vendor_id", "")
    family = int(fields.get("cpu family", "0") or 0)
    ghz = float(fields.get("cpu MHz", "0") or 0) / 1000
    if vendor == "AuthenticAMD":
        lanes = 16 if family >= 26 and "avx512f" in flags else 8
    else:
        lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    fma_units = 2 if "fma" in flags else 1
    fp32 = fma_units * lanes * 2
    vnni = "avx512_vnni" in flags or "avx_vnni" in flags
    int8 = fp32 * (4 if vnni else 2)
    return {
        "ghz": ghz,
        "fp32_flop_per_cycle": fp32,
        "int8_op_per_cycle": int8,
        "fp32_gflops": fp32 * ghz,
        "int8_gops": int8 * ghz,
        "vnni": vnni,
        "explained": f"{fma_units} FMA units x {lanes} fp32 lanes x 2 FLOP x {ghz:.2f} GHz"
        + (f"; int8 x{int8 // fp32} ({'VNNI' if vnni else 'no VNNI'})"),
    }


def run(cfg: Config) -> dict[str, Any]:
    from app.llm.embedders.local import LocalEmbedder

    files = data.documents(cfg.pick(48, 16, 2))
    sources = [Source.from_bytes(name, text.encode()) for name, text in files]
    count = cfg.pick(5, 3, 1)
    settings = IngestSettings()
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        folder = Path(tmp)
        embedders = {
            p: LocalEmbedder(precision=p, cache_dir=folder / "models")
            for p in ("fp32", "int8")  # type: ignore[arg-type]
        }
        store, pid = _fresh(folder, "warm.db")
        Ingestor(store, embedders["fp32"], settings).ingest(pid, sources)  # gives the chunk texts
        with store.read() as db:
            texts = [row[0] for row in db.connection().exec_driver_sql("SELECT text FROM chunks ORDER BY id")]
        store.dispose()
        vectors = {p: e.embed(texts) for p, e in embedders.items()}  # also loads both models
        encoder = embedders["fp32"]._load()[1]
        lengths = [len(e.ids) for e in encoder.encode_batch(texts)]
        total_flops = sum(map(matmul_flops, lengths))
        int8_share = sum(map(weight_flops, lengths)) / total_flops
        log.info("embedder_int8: %d files, %d chunks, %d rounds", len(files), len(texts), count)
        cpu: dict[str, list[float]] = {p: [] for p in embedders}

        def raw(precision: str) -> Any:
            def measure(r: int) -> float:
                started = time.process_time()
                seconds = common.timed(lambda: embedders[precision].embed(texts))[0]
                cpu[precision].append(time.process_time() - started)
                return seconds

            return measure

        def ingest(precision: str) -> Any:
            def measure(r: int) -> float:
                target, project = _fresh(folder, f"{precision}-{r}.db")
                try:
                    ingestor = Ingestor(target, embedders[precision], settings)
                    seconds, summary = common.timed(lambda: ingestor.ingest(project, sources))
                finally:
                    target.dispose()
                assert sum(f.chunks for f in summary.files) == len(texts), "every round ingests the same chunks"
                return seconds

            return measure

        times = common.rounds(
            count,
            {
                "raw_fp32": raw("fp32"),
                "raw_int8": raw("int8"),
                "ingest_fp32": ingest("fp32"),
                "ingest_int8": ingest("int8"),
            },
        )
        for embedder in embedders.values():
            embedder.close()
    chunks = len(texts)
    cosines = np.sum(vectors["fp32"] * vectors["int8"], axis=1)
    machine_peak = peak()
    gflops = {p: total_flops / statistics.median(seconds) / 1e9 for p, seconds in cpu.items()}
    result: dict[str, Any] = {
        "files": len(files),
        "chunks": chunks,
        "tokens": sum(lengths),
        "rounds": count,
        "chunks_per_s": {
            name: common.summary([chunks / s for s in values], scale=1.0) for name, values in times.items()
        },
        "ratio_raw": common.ratio(times["raw_fp32"], times["raw_int8"]),  # = int8 chunks/s ÷ fp32 chunks/s
        "ratio_ingest": common.ratio(times["ingest_fp32"], times["ingest_int8"]),
        # The same, in CPU seconds: what the machine's other load does not move.
        "ratio_raw_cpu": common.ratio(cpu["fp32"], cpu["int8"]),
        "gflops_per_core": gflops,
        "int8_share_of_flops": int8_share,
        "peak": machine_peak,
        "cosine": {"min": float(cosines.min()), "mean": float(cosines.mean()), "p5": float(np.percentile(cosines, 5))},
    }
    rows = []
    for kind in ("raw", "ingest"):
        ratio = result[f"ratio_{kind}"]
        rows.append(
            [
                "embed() only" if kind == "raw" else "ingestion end to end",
                result["chunks_per_s"][f"{kind}_fp32"]["median"],
                result["chunks_per_s"][f"{kind}_int8"]["median"],
                ratio["median"],
                min(a / b for a, b in zip(times[f"{kind}_fp32"], times[f"{kind}_int8"], strict=True)),
                common.goal(ratio["median"] >= GOAL),
            ]
        )
    text = common.table(
        f"Local embedder int8 vs fp32 ({len(files)} SciFact abstracts, {chunks} chunks, {sum(lengths)} tokens; "
        f"medians of {count} rotating rounds)",
        ["measured", "fp32 chunks/s", "int8 chunks/s", "int8 ÷ fp32 (median)", "worst round", f"goal >={GOAL}"],
        rows,
    ) + common.table(
        f"Arithmetic per core (matrix products over real tokens ÷ CPU seconds; {int8_share:.0%} of them are the "
        f"weights', int8 in the int8 graph). Peak: {machine_peak['explained']}",
        [
            "precision",
            "achieved GFLOP/s per core",
            "core peak",
            "share of peak",
            "CPU s int8 ÷ fp32 speed-up",
            "cosine fp32·int8 min / mean",
        ],
        [
            [
                "fp32",
                gflops["fp32"],
                f"{machine_peak['fp32_gflops']:.0f} GFLOP/s fp32",
                gflops["fp32"] / machine_peak["fp32_gflops"],
                "-",
                "-",
            ],
            [
                "int8",
                gflops["int8"],
                f"{machine_peak['int8_gops']:.0f} GOP/s int8",
                gflops["int8"] / machine_peak["int8_gops"],
                result["ratio_raw_cpu"]["median"],
                f"{result['cosine']['min']:.4f} / {result['cosine']['mean']:.4f}",
            ],
        ],
    )
    return common.write(cfg, NAME, {**result, "table": text}, _plot(result))


def _plot(result: dict[str, Any]) -> Any:
    fig, (left, right) = common.figure(2, width=5)
    speeds = result["chunks_per_s"]
    labels = ["embed fp32", "embed int8", "ingest fp32", "ingest int8"]
    keys = ["raw_fp32", "raw_int8", "ingest_fp32", "ingest_int8"]
    left.bar(labels, [speeds[k]["median"] for k in keys], color=["C0", "C1", "C0", "C1"])
    left.set(ylabel="chunks per second (median)", title=f"int8 ÷ fp32 = {result['ratio_raw']['median']:.2f} (embed)")
    peak_ = result["peak"]
    right.bar(
        ["fp32 achieved", "fp32 peak", "int8 achieved", "int8 peak"],
        [
            result["gflops_per_core"]["fp32"],
            peak_["fp32_gflops"],
            result["gflops_per_core"]["int8"],
            peak_["int8_gops"],
        ],
        color=["C0", "C7", "C1", "C7"],
    )
    right.set(yscale="log", ylabel="G(FL)OP/s per core", title="arithmetic per core")
    fig.suptitle("Local embedder: int8 vs fp32")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
