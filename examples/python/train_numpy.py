"""Builds an MLP in Python and trains it on numpy arrays: Fashion-MNIST read with numpy.

    make python
    PYTHONPATH=build/python python3 examples/python/train_numpy.py [run_dir]

Then `python3 examples/python/predict.py run_dir` loads the model and predicts."""

import gzip
import sys

import numpy as np

import tributary as tb
from tributary import layers, optimizers

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path, offset):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def fashion(split):
    x = idx(f"{DATA}/{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255
    y = idx(f"{DATA}/{split}-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return x, y


def main():
    run_dir = sys.argv[1] if len(sys.argv) > 1 else None
    x, y = fashion("train")
    xt, yt = fashion("t10k")
    model = tb.Sequential([
        layers.Flatten(),
        layers.Dense(256, activation="relu", init="he_uniform"),
        layers.Dropout(0.1),
        layers.Dense(128, activation="relu", init="he_uniform"),
        layers.Dense(10),
    ], input_shape=(1, 28, 28), name="fashion_numpy")
    model.compile(optimizer=optimizers.Adam(lr=1e-3))

    def progress(m):
        if m["step"] % 200 == 0:
            print(f"step {m['step']:5d}  epoch {m['epoch']:.2f}  loss {m['loss']:.4f}", flush=True)

    history = model.fit(x, y, epochs=2, batch_size=128, callbacks=[progress], validation_data=(xt, yt),
                        run_dir=run_dir)
    for row in history["validation"]:
        print(f"step {row['step']}: test accuracy {row['accuracy']:.4f}, loss {row['loss']:.4f}")
    s = history["summary"]
    print(f"{s['steps']} steps in {s['wall_s']:.1f} s ({s['images_per_s']:.0f} images/s)"
          + (f"; run directory {run_dir}" if run_dir else ""))


if __name__ == "__main__":
    main()
