"""Models built in Python, trained on numpy arrays; predict, evaluate, variables."""

import os

import numpy as np
import pytest

import tributary as tb
from tributary import layers, optimizers
from conftest import blobs


def mlp(features=8, classes=3, seed=1):
    return tb.Sequential([layers.Dense(16, activation="relu"), layers.Dense(classes)],
                         input_shape=(features,), seed=seed)


def test_fit_on_arrays_learns(data):
    x, y = data
    model = mlp().compile(optimizer=optimizers.Adam(lr=0.01))
    before = model.evaluate(x, y)["accuracy"]
    history = model.fit(x, y, epochs=3, batch_size=32)
    assert len(history["loss"]) == 3 * (len(x) // 32) == model.step
    assert history["summary"]["steps"] == model.step
    after = model.evaluate(x, y)
    assert after["accuracy"] > 0.9 and after["accuracy"] > before
    assert after["examples"] == len(x)
    assert np.mean(history["loss"][-4:]) < np.mean(history["loss"][:4])


def test_predict_outputs(data):
    x, y = data
    model = mlp()
    model.fit(x, y, steps=30, batch_size=32)
    logits = model.predict(x[:7])
    assert logits.shape == (7, 3) and logits.dtype == np.float32
    probs = model.predict(x[:7], output="probabilities")
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(model.predict(x[:7], output="classes"), logits.argmax(axis=1))
    # Chunked prediction (batch_size smaller than N, a short last chunk) gives the same numbers.
    np.testing.assert_allclose(model.predict(x[:7], batch_size=3), logits, rtol=1e-5, atol=1e-6)


def test_variables_are_views_without_copies(data):
    x, y = data
    model = mlp()
    v = model.variables
    assert set(v) == set(model.parameter_names())
    w = v["dense_0/w"]
    assert w.shape == (8, 16) and w.dtype == np.float32
    assert np.shares_memory(w, model.variables["dense_0/w"])
    before = w.copy()
    model.fit(x, y, steps=5, batch_size=32)
    assert not np.array_equal(w, before), "a view sees the trained values"
    # Writing through set_variable changes the model's output.
    model.set_variable("dense_1/b", np.full(3, 100.0, np.float32) * np.array([0, 0, 1], np.float32))
    assert (model.predict(x[:5], output="classes") == 2).all()
    with pytest.raises(tb.ShapeError, match="dense_1/b"):
        model.set_variable("dense_1/b", np.zeros(4, np.float32))
    with pytest.raises(tb.NotFound, match="nope"):
        model.set_variable("nope", np.zeros(4, np.float32))


def test_view_outlives_model(data):
    x, _ = data
    model = mlp()
    w = model.variables["dense_0/w"]
    expected = w.copy()
    del model
    np.testing.assert_array_equal(w, expected)


def test_seed_makes_runs_repeatable(data):
    x, y = data
    a, b = mlp(seed=7), mlp(seed=7)
    ha = a.fit(x, y, steps=10, batch_size=32, seed=3)
    hb = b.fit(x, y, steps=10, batch_size=32, seed=3)
    assert ha["loss"] == hb["loss"]
    np.testing.assert_array_equal(a.predict(x), b.predict(x))


def test_every_layer_kind_trains():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, size=64)
    model = tb.Sequential([
        layers.Conv2D(4, kernel=3, activation="relu"),
        layers.BatchNorm(),
        layers.MaxPool2D(2),
        layers.Conv2D(4, kernel=3, padding="valid"),
        layers.Activation("tanh"),
        layers.AvgPool2D(size=1),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(4, activation=None, l2=1e-4),
    ], input_shape=(1, 8, 8))
    h = model.fit(x, y, steps=4, batch_size=16)
    assert len(h["loss"]) == 4 and all(np.isfinite(h["loss"]))
    names = model.parameter_names()
    assert any("batch_norm" in n for n in names)
    assert len(model.parameter_names(trainable_only=True)) < len(names)  # running statistics
    assert model.predict(x[:3]).shape == (3, 4)


def test_embedding_needs_integer_ids_which_features_are_not():
    # The training loop feeds float32 features; the engine's embedding takes i32 ids. A job
    # file with an embedding first fails the same way: one clear error, no crash.
    model = tb.Sequential([layers.Embedding(20, 4), layers.Flatten(), layers.Dense(2)], input_shape=(3,))
    with pytest.raises(tb.ShapeError, match="ids must be i32 or i64"):
        model.build()


def test_input_shape_taken_from_data(data):
    x, y = data
    model = tb.Sequential([layers.Dense(3)])
    model.fit(x, y, steps=2, batch_size=32)
    assert model.predict(x[:2]).shape == (2, 3)


def test_bad_arrays_raise_clear_errors(data):
    x, y = data
    model = mlp()
    with pytest.raises(TypeError, match="float32.*float64"):
        model.fit(x.astype(np.float64), y, steps=1)
    with pytest.raises(tb.InvalidArgument, match=r"x has shape \(512, 5\)"):
        model.fit(x[:, :5], y, steps=1)
    with pytest.raises(TypeError, match="integer class indices"):
        model.fit(x, y.astype(np.float32), steps=1)
    with pytest.raises(tb.InvalidArgument, match=r"y\[\d+\] is 7"):
        model.fit(x, np.where(y == 0, 7, y), steps=1)
    with pytest.raises(tb.InvalidArgument, match="one class index per example"):
        model.fit(x, y[:10], steps=1)
    with pytest.raises(TypeError, match="numpy array"):
        model.predict([[1.0] * 8])
    with pytest.raises(tb.InvalidArgument, match="training.batch"):
        model.fit(x, y, steps=1, batch_size=0)
    with pytest.raises(tb.InvalidArgument, match="larger than"):
        model.fit(x[:10], y[:10], steps=1, batch_size=64)
    # The model is still usable after all of that.
    assert model.predict(x[:2]).shape == (2, 3)


def test_model_that_does_not_fit_fails_when_built():
    model = tb.Sequential([layers.Dense(5)], input_shape=(8,), classes=3)
    with pytest.raises(tb.ShapeError, match="dense layer of 3 units"):
        model.build()


def test_fit_writes_a_run_directory_and_load_restores_it(data, tmp_path):
    x, y = data
    model = mlp().compile(optimizer=optimizers.SGD(lr=0.1, momentum=0.9))
    run = tmp_path / "run"
    model.fit(x, y, epochs=1, batch_size=64, run_dir=run)
    assert (run / "config.yaml").exists()
    assert any(p.name.startswith("ckpt-") for p in (run / "checkpoints").iterdir())
    loaded = tb.Model.load(run)
    assert loaded.step == model.step == len(x) // 64
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)
    assert "format: python" in loaded.config_yaml
    # A loaded model trains on, from its own variables and optimizer.
    loaded.fit(x, y, steps=2, batch_size=64)
    assert loaded.step == 2
    # Resuming the run directory continues from its checkpoint.
    model.fit(x, y, epochs=2, batch_size=64, run_dir=run, resume=True)
    assert model.step == 2 * (len(x) // 64)


def test_validation_and_report_callbacks(data):
    x, y = data
    rows = []

    class Reporter:
        def on_report(self, row):
            rows.append(row)

    model = mlp().compile(optimizer=optimizers.Adam(lr=0.01))
    h = model.fit(x, y, epochs=2, batch_size=64, validation_data=(x[:100], y[:100]), callbacks=[Reporter()])
    assert [r["step"] for r in h["validation"]] == [8, 16] == [r["step"] for r in rows]
    assert 0 <= h["validation"][-1]["accuracy"] <= 1 and h["validation"][-1]["examples"] == 100
