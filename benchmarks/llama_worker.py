"""One llama.cpp build, in its own process, for :mod:`benchmarks.llama_builds`.

Imports only the standard library, numpy and whichever ``llama_cpp`` comes first on PYTHONPATH, so
each build is loaded alone. It loads the GGUF once, prints one JSON line describing the build, then
answers each ``go`` line on stdin with one JSON line: the seconds (wall and CPU) to evaluate the
prompt from an empty cache and to decode ``generate`` tokens greedily after it.

Usage: python -m benchmarks.llama_worker MODEL.gguf PROMPT.txt PROMPT_TOKENS GENERATE THREADS
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    import llama_cpp
    import numpy as np

    model, prompt_file, prompt_tokens, generate, threads = argv
    llm = llama_cpp.Llama(
        model_path=model, n_ctx=2048, n_threads=int(threads), n_threads_batch=int(threads), verbose=False
    )
    with open(prompt_file, encoding="utf-8") as handle:
        tokens = llm.tokenize(handle.read().encode("utf-8"))[: int(prompt_tokens)]
    info = llama_cpp.llama_print_system_info()
    _say(
        {
            "ready": True,
            "module": llama_cpp.__file__,
            "version": llama_cpp.__version__,
            "system_info": info.decode() if isinstance(info, bytes) else str(info),
            "prompt_tokens": len(tokens),
        }
    )
    for line in sys.stdin:
        if line.strip() != "go":
            break
        llm.reset()
        start, cpu = time.perf_counter(), time.process_time()
        llm.eval(tokens)
        prompt_seconds, prompt_cpu = time.perf_counter() - start, time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        vocabulary = llm.n_vocab()
        for _ in range(int(generate)):
            # The last position's logits, straight from the context (Llama.scores keeps them only
            # with logits_all, which would change the prompt's cost).
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(vocabulary,))
            llm.eval([int(np.argmax(logits))])
        _say(
            {
                "prompt_seconds": prompt_seconds,
                "generate_seconds": time.perf_counter() - start,
                # CPU seconds of the process: what the machine's other load does not stretch.
                "prompt_cpu": prompt_cpu,
                "generate_cpu": time.process_time() - cpu,
            }
        )
    return 0


def _say(payload: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
