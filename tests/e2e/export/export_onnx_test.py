"""`trib export --format onnx`, end to end: tiny runs of the example MLP and CNN and of a
model with every covered layer are trained, exported, checked with onnx.checker, and
evaluated by an independent NumPy interpreter of the graph (onnx_numpy_eval.py) on the first
test examples, against `trib eval --outputs` on the same examples: the same accuracy, and
logits within float32 tolerance.

    python3 export_onnx_test.py TRIB SOURCE_DIR WORK_DIR
"""
import gzip
import os
import re
import shutil
import subprocess
import sys
import unittest

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_numpy_eval import run_graph  # noqa: E402

TRIB, SOURCE, WORK = sys.argv[1:4]
FASHION = "/usr/share/datasets/fashion-mnist"
EXAMPLES = 300  # test examples compared: enough for accuracy to mean something, quick in NumPy


def trib(*args, check=True):
    p = subprocess.run([TRIB, *args], capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"trib {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def idx(path, count):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    return arr[:count]


def test_split(count):
    images = idx(f"{FASHION}/t10k-images-idx3-ubyte.gz", count).astype(np.float32) * np.float32(1.0 / 255.0)
    labels = idx(f"{FASHION}/t10k-labels-idx1-ubyte.gz", count).astype(np.int64)
    return images.reshape(count, 1, 28, 28), labels


class ExportOnnx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.features, cls.labels = test_split(EXAMPLES)

    def export_and_compare(self, job, steps):
        name = os.path.splitext(os.path.basename(job))[0]
        run = os.path.join(WORK, name)
        trib("train", job, "--output", run, "--set", f"training.steps={steps}", "--set", "training.train_metrics=false")
        model_file = os.path.join(WORK, name + ".onnx")
        out = trib("export", run, "--format", "onnx", "--output", model_file).stdout
        self.assertIn("ONNX opset 13", out)

        model = onnx.load(model_file)
        onnx.checker.check_model(model, full_check=True)  # and shape inference, strict
        self.assertEqual(model.opset_import[0].version, 13)
        self.assertEqual([o.name for o in model.graph.output], ["logits", "probabilities"])

        npy = os.path.join(WORK, name + ".npy")
        ev = trib("eval", job, "--checkpoint", run, "--limit", str(EXAMPLES), "--outputs", npy).stdout
        accuracy = float(re.search(r"test accuracy ([0-9.]+)", ev).group(1))
        trib_logits = np.load(npy)
        self.assertEqual(trib_logits.shape, (EXAMPLES, 10))

        outs = run_graph(model, {"features": self.features})
        logits, probs = outs["logits"], outs["probabilities"]
        scale = max(1.0, float(np.abs(logits).max()))
        np.testing.assert_allclose(trib_logits, logits, rtol=0, atol=2e-4 * scale,
                                   err_msg=f"{name}: trib's logits and the ONNX graph's differ")
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)
        self.assertTrue((np.argmax(probs, axis=1) == np.argmax(logits, axis=1)).all())
        onnx_accuracy = float((np.argmax(logits, axis=1) == self.labels).mean())
        self.assertEqual(round(onnx_accuracy, 4), accuracy, f"{name}: accuracy of the ONNX graph")
        self.assertTrue((np.argmax(trib_logits, axis=1) == np.argmax(logits, axis=1)).all())
        return model

    def test_mlp_example(self):
        self.export_and_compare(os.path.join(SOURCE, "examples/fashion_mlp.yaml"), 30)

    def test_cnn_example(self):
        model = self.export_and_compare(os.path.join(SOURCE, "examples/fashion_cnn.yaml"), 6)
        self.assertEqual([n.op_type for n in model.graph.node][:2], ["Conv", "Relu"])

    def test_every_layer(self):
        model = self.export_and_compare(os.path.join(SOURCE, "tests/e2e/export/every_layer.yaml"), 60)
        ops = {n.op_type for n in model.graph.node}
        for op in ["Conv", "BatchNormalization", "MaxPool", "AveragePool", "Identity", "Flatten", "Gemm", "MatMul",
                   "Relu", "Sigmoid", "Tanh", "Softmax"]:
            self.assertIn(op, ops)

    def test_not_a_run_directory(self):
        p = trib("export", WORK, "--format", "onnx", "--output", os.path.join(WORK, "x.onnx"), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not a run directory: it has no config.yaml", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
