"""An independent evaluator of exported ONNX graphs, in NumPy: Debian's onnx 1.12 has no
runtime, and checking trib's export against trib's own engine would prove nothing. Each op is
written from the ONNX operator specification (opset 13), not from trib's kernels.

    outputs = run_graph(onnx.load("model.onnx"), {"features": x})   # {"logits": ..., ...}
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from onnx import numpy_helper


def _attrs(node):
    out = {}
    for a in node.attribute:
        if a.type == a.INT:
            out[a.name] = a.i
        elif a.type == a.FLOAT:
            out[a.name] = a.f
        elif a.type == a.INTS:
            out[a.name] = list(a.ints)
        else:
            raise ValueError(f"node {node.name}: attribute {a.name} of type {a.type} is not read here")
    return out


def _windows(x, kernel, strides, pads, pad_value):
    """[N, C, H, W] -> [N, C, OH, OW, KH, KW]: every window the kernel visits (floor mode)."""
    top, left, bottom, right = pads
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    w = sliding_window_view(x, tuple(kernel), axis=(2, 3))
    return w[:, :, :: strides[0], :: strides[1]]


def _pads(a, kernel):
    p = a.get("pads", [0] * 4)
    return [p[0], p[1], p[2], p[3]]


def _conv(x, w, b, a):
    kernel = a.get("kernel_shape", list(w.shape[2:]))
    if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
        raise ValueError("Conv: only group 1 and dilation 1 are evaluated here")
    win = _windows(x, kernel, a.get("strides", [1, 1]), _pads(a, kernel), 0.0)
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _max_pool(x, a):
    k = a["kernel_shape"]
    return _windows(x, k, a.get("strides", [1, 1]), _pads(a, k), -np.inf).max(axis=(4, 5))


def _avg_pool(x, a):
    k = a["kernel_shape"]
    if any(_pads(a, k)):
        raise ValueError("AveragePool: padding is not evaluated here")
    return _windows(x, k, a.get("strides", [1, 1]), [0] * 4, 0.0).mean(axis=(4, 5))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _gemm(a_, b_, c, a):
    if a.get("transA", 0):
        a_ = a_.T
    if a.get("transB", 0):
        b_ = b_.T
    y = a.get("alpha", 1.0) * (a_ @ b_)
    return y if c is None else y + a.get("beta", 1.0) * c


def _batch_norm(x, scale, bias, mean, var, a):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    eps = a.get("epsilon", 1e-5)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)


_CAST = {1: np.float32, 6: np.int32, 7: np.int64}


def _run_node(node, ins):
    a = _attrs(node)
    op = node.op_type
    if op == "Gemm":
        return _gemm(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)
    if op == "MatMul":
        return ins[0] @ ins[1]
    if op == "Add":
        return ins[0] + ins[1]
    if op == "Conv":
        return _conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)
    if op == "MaxPool":
        return _max_pool(ins[0], a)
    if op == "AveragePool":
        return _avg_pool(ins[0], a)
    if op == "Flatten":
        axis = a.get("axis", 1)
        return ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
    if op == "Relu":
        return np.maximum(ins[0], 0)
    if op == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-ins[0]))
    if op == "Tanh":
        return np.tanh(ins[0])
    if op == "Softmax":
        return _softmax(ins[0], a.get("axis", -1))
    if op == "BatchNormalization":
        return _batch_norm(*ins[:5], a)
    if op == "Identity":
        return ins[0]
    if op == "Cast":
        return ins[0].astype(_CAST[a["to"]])
    if op == "Gather":
        return np.take(ins[0], ins[1], axis=a.get("axis", 0))
    raise ValueError(f"node {node.name}: op {op} is not evaluated here")


def run_graph(model, feeds):
    """Evaluates `model` (an onnx.ModelProto) on `feeds` ({input name: array}), in float64
    (so that the comparison's tolerance is trib's float32 error alone); returns its outputs."""
    values = {t.name: numpy_helper.to_array(t).astype(np.float64)
              if t.data_type == 1 else numpy_helper.to_array(t) for t in model.graph.initializer}
    for name, x in feeds.items():
        values[name] = np.asarray(x, dtype=np.float64)
    for node in model.graph.node:  # ONNX requires topological order
        ins = [values[i] for i in node.input if i]
        values[node.output[0]] = _run_node(node, ins)
    return {o.name: values[o.name] for o in model.graph.output}
