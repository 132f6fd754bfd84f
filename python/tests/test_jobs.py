"""tributary.train over job files: in this process, and a local cluster through trib."""

import numpy as np
import pytest

import tributary as tb
from tributary.jobs import read_metrics
from conftest import SOURCE_DIR


def test_train_job_returns_metrics(fashion_job, tmp_path):
    job, overrides = fashion_job
    steps = []
    result = tb.train(job, overrides=overrides, output=tmp_path / "run", verbose=False,
                      callbacks=[lambda m: steps.append(m["step"])])
    assert steps == list(range(1, 17))
    assert result["summary"]["steps"] == 16
    tests = [r for r in result["metrics"] if r["split"] == "test"]
    assert [r["step"] for r in tests] == [8, 16]
    assert result["summary"]["accuracy"] == pytest.approx(tests[-1]["accuracy"])
    assert tests[-1]["accuracy"] > 0.3  # ten classes: 0.1 by chance


def test_train_job_then_load_and_predict(fashion_job, tmp_path):
    job, overrides = fashion_job
    run = tmp_path / "run"
    tb.train(job, overrides=overrides, output=run, verbose=False)
    model = tb.Model.load(run)
    assert model.step == 16
    assert sorted(model.parameter_names()) == ["dense_1/b", "dense_1/w", "dense_2/b", "dense_2/w", "dense_3/b",
                                               "dense_3/w"]
    x = np.random.default_rng(0).random((5, 1, 28, 28), dtype=np.float32)
    assert model.predict(x).shape == (5, 10)
    assert model.predict(x.reshape(5, 784)).shape == (5, 10)
    # A checkpoint directory loads too.
    ckpt = max((run / "checkpoints").glob("ckpt-*"), key=lambda p: int(p.name.split("-")[1]))
    np.testing.assert_array_equal(tb.Model.load(ckpt).predict(x), model.predict(x))


def test_unknown_override_key_is_one_clear_error(fashion_job, tmp_path):
    job, _ = fashion_job
    with pytest.raises(tb.InvalidArgument, match="unknown key 'training.epoch'; did you mean 'training.epochs'"):
        tb.train(job, overrides={"training.epoch": 3}, output=tmp_path / "run")
    with pytest.raises(tb.InvalidArgument, match="optimizer"):
        tb.train(job, overrides={"optimizer.name": "adamm"}, output=tmp_path / "run")
    with pytest.raises(tb.NotFound, match="nope.yaml"):
        tb.train(tmp_path / "nope.yaml")
    with pytest.raises(TypeError, match="overrides"):
        tb.train(job, overrides=3)
    assert not (tmp_path / "run").exists()


def test_load_errors(tmp_path):
    with pytest.raises(tb.NotFound, match="does not exist"):
        tb.Model.load(tmp_path / "missing")
    with pytest.raises(tb.NotFound, match="not a run directory"):
        tb.Model.load(tmp_path)


def test_python_job_refused_by_file_training(tmp_path):
    (tmp_path / "job.yaml").write_text(
        "model: {input: [4], classes: 2, layers: [{type: dense, units: 2}]}\ndata: {format: python}\n")
    with pytest.raises(tb.InvalidArgument, match="data.format is python"):
        tb.train(tmp_path / "job.yaml", output=tmp_path / "run", verbose=False)


def test_local_cluster_job_runs_through_trib(tmp_path):
    job = SOURCE_DIR / "examples" / "fashion_ps.yaml"
    overrides = {"data.train_subset": 1024, "data.test_subset": 256, "training.steps": 8,
                 "training.batch": 64, "training.eval_every": 8, "threads.intra": 1}
    result = tb.train(job, overrides=overrides, output=tmp_path / "run", verbose=False)
    tests = [r for r in result["metrics"] if r.get("split") == "test"]
    assert tests and tests[-1]["step"] >= 8
    assert result["summary"]["accuracy"] == tests[-1]["accuracy"]
    assert read_metrics(tmp_path / "run") == result["metrics"]
