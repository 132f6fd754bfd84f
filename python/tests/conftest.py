"""Shared fixtures: synthetic data the tests can learn in a few steps, and a small
Fashion-MNIST job. Run by ctest (python_pytest) with PYTHONPATH=build/python, TRIB_SOURCE_DIR
and TRIB_BINARY set; by hand: PYTHONPATH=build/python python3 -m pytest python/tests."""

import os
import pathlib

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TRIB_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


def blobs(n=512, features=8, classes=3, seed=0):
    """Separable clusters: float32 x [n, features], int64 y [n]. A small MLP learns them in
    tens of steps."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(classes, features)).astype(np.float32)
    y = rng.integers(0, classes, size=n)
    x = centres[y] + rng.normal(0, 0.5, size=(n, features)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


@pytest.fixture
def data():
    return blobs()


@pytest.fixture
def fashion_job(tmp_path):
    """The Fashion-MNIST MLP example, with its overrides for a run of seconds."""
    job = SOURCE_DIR / "examples" / "fashion_mlp.yaml"
    overrides = {"data.train_subset": 1024, "data.test_subset": 256, "training.steps": 16, "training.batch": 64,
                 "training.eval_every": 8, "threads.intra": 1, "schedule.name": "constant"}
    return job, overrides
