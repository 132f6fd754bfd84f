"""Loads a trained model from a run directory and predicts with it.

    PYTHONPATH=build/python python3 examples/python/predict.py RUN_DIR
"""

import gzip
import sys

import numpy as np

import tributary as tb

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]


def main():
    model = tb.Model.load(sys.argv[1])
    with gzip.open(f"{DATA}/t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255
    with gzip.open(f"{DATA}/t10k-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    print(f"model from step {model.step}; variables:",
          ", ".join(f"{k} {v.shape}" for k, v in sorted(model.variables.items())))
    probs = model.predict(x[:5], output="probabilities")
    for p, label in zip(probs, y[:5]):
        print(f"predicted {CLASSES[p.argmax()]:9s} ({p.max():.2f}), true {CLASSES[label]}")
    print("test accuracy:", round(model.evaluate(x, y)["accuracy"], 4))


if __name__ == "__main__":
    main()
