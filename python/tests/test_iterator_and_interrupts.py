"""Training from a Python iterator, the GIL while the library works, callbacks and Ctrl-C."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import tributary as tb
from tributary import layers, optimizers
from conftest import blobs


def mlp():
    return tb.Sequential([layers.Dense(16, activation="relu"), layers.Dense(3)], input_shape=(8,))


def batches(x, y, size, count):
    for i in range(count):
        s = (i * size) % (len(x) - size + 1)
        yield x[s:s + size], y[s:s + size]


def test_fit_on_iterator_until_it_ends(data):
    x, y = data
    model = mlp().compile(optimizer=optimizers.Adam(lr=0.01))
    h = model.fit(batches(x, y, 32, 40))
    assert model.step == 40 == len(h["loss"])
    assert model.evaluate(x, y)["accuracy"] > 0.8


def test_iterator_steps_limit_and_short_batches(data):
    x, y = data
    model = mlp()
    model.fit(batches(x, y, 32, 100), steps=5)
    assert model.step == 5
    # A short last batch runs through a graph of its own size.
    def ragged():
        yield x[:32], y[:32]
        yield x[32:42], y[32:42]
    h = mlp().fit(ragged())
    assert [r for r in h["loss"]] and len(h["loss"]) == 2


def test_iterator_bad_batches(data):
    x, y = data
    with pytest.raises(tb.InvalidArgument, match="batch 1 of the iterator has 64 rows, more than the batch size 32"):
        mlp().fit(iter([(x[:32], y[:32]), (x[:64], y[:64])]))
    with pytest.raises(TypeError, match=r"batch 0 of the iterator must be an \(x, y\) tuple"):
        mlp().fit(iter([x[:32]]), batch_size=32)
    with pytest.raises(TypeError, match="batch 1 of the iterator: x must be float32"):
        mlp().fit(iter([(x[:32], y[:32]), (x[:32].astype(np.float64), y[:32])]))
    with pytest.raises(ValueError, match="empty"):
        mlp().fit(iter([]))


def test_iterator_exception_reaches_the_caller(data):
    x, y = data

    def failing():
        yield x[:32], y[:32]
        raise RuntimeError("the data went away")

    model = mlp()
    with pytest.raises(RuntimeError, match="the data went away"):
        model.fit(failing())
    assert model.predict(x[:2]).shape == (2, 3)


def test_callbacks_get_metrics_per_step_and_can_stop(data):
    x, y = data
    seen = []

    def cb(m):
        seen.append(m)
        return m["step"] < 6

    model = mlp()
    model.fit(x, y, epochs=5, batch_size=32, callbacks=[cb])
    assert [m["step"] for m in seen] == [1, 2, 3, 4, 5, 6]
    assert model.step == 6
    assert set(seen[0]) == {"step", "epoch", "loss", "accuracy", "rows"}
    assert seen[0]["rows"] == 32 and 0 <= seen[0]["accuracy"] <= 1
    assert seen[1]["epoch"] == pytest.approx(2 / 16)


def test_gil_is_released_while_the_library_works():
    # A Python thread counts while one long predict runs: it could not if the GIL were held.
    x, _ = blobs(n=20000, features=64)
    model = tb.Sequential([layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu"),
                           layers.Dense(3)], input_shape=(64,))
    model.build()
    count = 0
    running = True

    def counter():
        nonlocal count
        while running:
            count += 1
            time.sleep(0)

    t = threading.Thread(target=counter)
    t.start()
    time.sleep(0.05)
    before = count
    model.predict(x, batch_size=20000)
    during = count - before
    running = False
    t.join()
    assert during > 100


def test_ctrl_c_stops_cleanly_with_a_checkpoint(data, tmp_path):
    x, y = data
    model = mlp()
    run = tmp_path / "run"
    started = threading.Event()

    def cb(m):
        started.set()

    timer = threading.Thread(target=lambda: (started.wait(10), time.sleep(0.2), os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, epochs=100000, batch_size=32, callbacks=[cb], run_dir=run)
    timer.join()
    assert 0 < model.step < 100000 * 16
    steps = [int(p.name.split("-")[1]) for p in (run / "checkpoints").iterdir() if p.name.startswith("ckpt-")]
    assert model.step in steps, "the run stopped at a step boundary and wrote its checkpoint"
    loaded = tb.Model.load(run)
    np.testing.assert_allclose(loaded.predict(x[:10]), model.predict(x[:10]), rtol=1e-6)
