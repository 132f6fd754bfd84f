"""Tributary from Python: build models and train them on numpy arrays or iterators, run job
files, load trained models and predict. See docs/python.md.

    import tributary as tb
    model = tb.Sequential([tb.layers.Flatten(), tb.layers.Dense(128, activation="relu"),
                           tb.layers.Dense(10)], input_shape=(1, 28, 28))
    model.compile(optimizer=tb.optimizers.Adam(lr=1e-3))
    history = model.fit(x, y, epochs=2)
    tb.train("examples/fashion_mlp.yaml", overrides={"training.epochs": 3})
"""

import os as _os

# OpenMP workers that wait by spinning take the cores their partners need (a 2-thread step
# ran 50x slower: include/trib/engine/context.h). libgomp reads this once, when it loads
# with the module below, so it is set first unless the user chose a policy.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from ._tributary import Error, InvalidArgument, NotFound, ShapeError  # noqa: E402
from . import layers, optimizers  # noqa: E402
from .jobs import load_job, read_metrics, train  # noqa: E402
from .model import Model, Sequential  # noqa: E402

__all__ = ["Error", "InvalidArgument", "NotFound", "ShapeError", "layers", "optimizers", "load_job",
           "read_metrics", "train", "Model", "Sequential"]
