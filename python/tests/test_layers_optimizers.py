"""Layers and optimizers are checked when made, by the job parser, with one clear message."""

import pytest

import tributary as tb
from tributary import layers, optimizers


def test_layers_become_job_entries():
    assert layers.Dense(10, activation="relu").to_config() == {
        "type": "dense", "units": 10, "activation": "relu", "init": "glorot_uniform", "bias": True, "l2": 0.0}
    assert layers.Conv2D(8, kernel=5, padding="valid", name="c").to_config()["padding"] == "valid"
    assert layers.MaxPool2D(2).to_config() == {"type": "max_pool2d", "size": 2}
    assert layers.Flatten().to_config() == {"type": "flatten"}


def test_bad_layer_values_name_the_key():
    with pytest.raises(tb.InvalidArgument, match="activation"):
        layers.Dense(10, activation="relux")
    with pytest.raises(tb.InvalidArgument, match="init"):
        layers.Dense(10, init="glorot")
    with pytest.raises(tb.InvalidArgument, match="padding"):
        layers.Conv2D(4, padding="full")
    with pytest.raises(tb.InvalidArgument):
        layers.Dropout(1.5)


def test_unknown_layer_arguments_are_type_errors():
    with pytest.raises(TypeError, match="unit"):
        layers.Dense(unit=10)


def test_optimizers_are_checked():
    assert optimizers.Adam(lr=0.01).to_config() == {"name": "adam", "lr": 0.01, "beta1": 0.9, "beta2": 0.999}
    with pytest.raises(tb.InvalidArgument):
        optimizers.Adam(beta1=1.5)
    with pytest.raises(tb.InvalidArgument, match="schedule"):
        optimizers.Schedule("cosinus")
    with pytest.raises(tb.InvalidArgument, match="warmup"):
        optimizers.Schedule("cosine", warmup=10)


def test_errors_are_one_hierarchy():
    assert issubclass(tb.InvalidArgument, tb.Error) and issubclass(tb.InvalidArgument, ValueError)
    assert issubclass(tb.ShapeError, tb.InvalidArgument)
    assert issubclass(tb.NotFound, LookupError)
