"""Models: Sequential (layers built in Python) and Model (any model, e.g. one loaded from a
run directory). Training runs the library's one training loop (the same as `trib train`)
with the GIL released, over numpy arrays or a Python iterator of (x, y) batches, and writes
a run directory like any run: config.yaml and checkpoints, which `Model.load`, `trib eval`
and the export and serving commands read."""

import itertools
import json
import os
import shutil
import tempfile

import numpy as np

from . import _tributary
from .layers import Dense, Layer
from .optimizers import Optimizer, Schedule, SGD


class Model:
    """A model with its variables. Made by Sequential, or by Model.load(run_dir)."""

    def __init__(self, core):
        self._core = core
        self._optimizer = None
        self._schedule = None
        self._clip_norm = None

    # ---- loading, variables --------------------------------------------------------------

    @classmethod
    def load(cls, path):
        """The model of a run directory (its config.yaml), with the variables of its newest
        valid checkpoint. `path` may also be a ckpt-<step> directory of it."""
        return cls(_tributary.ModelCore.load(os.fspath(path)))

    @property
    def step(self):
        """The training step the variables come from (a checkpoint's, or the steps trained)."""
        return self._core.step

    @property
    def config_yaml(self):
        """The job this model belongs to, as YAML (model, optimizer, training...)."""
        return self._core.config_yaml

    @property
    def variables(self):
        """{name: numpy array} over the variables' own memory (no copy): the arrays change as
        the model trains, and writing them changes the model. Use .copy() for a snapshot."""
        return self._core.variables()

    def parameter_names(self, trainable_only=False):
        return self._core.parameter_names(trainable_only)

    def set_variable(self, name, value):
        """Copies a float32 array of the variable's shape into the variable."""
        self._core.set_variable(name, value)

    # ---- inference -----------------------------------------------------------------------

    def predict(self, x, batch_size=256, output="logits"):
        """The model on float32 features x, [N, *input] or [N, features]: logits [N, classes],
        or output="probabilities" (softmax) or "classes" (argmax, int64 [N])."""
        if output not in ("logits", "probabilities", "classes"):
            raise ValueError(f"output must be 'logits', 'probabilities' or 'classes', got {output!r}")
        logits = self._core.predict(x, batch_size)
        if output == "logits":
            return logits
        if output == "classes":
            return logits.argmax(axis=1)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def evaluate(self, x, y, batch_size=1000):
        """{"loss", "accuracy", "examples"} over features x and integer labels y."""
        return self._core.evaluate(x, y, batch_size)

    # ---- training ------------------------------------------------------------------------

    def compile(self, optimizer=None, schedule=None, clip_norm=None):
        """Sets the optimizer (tributary.optimizers), the learning-rate schedule and gradient
        clipping by global norm for the next fits. Unset, a fit keeps the job's own (for a new
        Sequential: SGD with lr 0.01)."""
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be a tributary.optimizers.Optimizer, got {type(optimizer).__name__}")
        if schedule is not None and not isinstance(schedule, Schedule):
            raise TypeError(f"schedule must be a tributary.optimizers.Schedule, got {type(schedule).__name__}")
        self._optimizer, self._schedule, self._clip_norm = optimizer, schedule, clip_norm
        return self

    def fit(self, x, y=None, *, epochs=1, steps=0, batch_size=None, shuffle=True, callbacks=(),
            validation_data=None, eval_every=0, run_dir=None, resume=False, seed=None, verbose=False,
            steps_per_epoch=0, keep_checkpoints=None):
        """Trains the model and returns its history: {"loss": [...], "accuracy": [...] per
        step, "validation": [{"step", "epoch", "loss", "accuracy"}...], "summary": {...}}.

        Data: float32 features x and integer labels y (numpy arrays), taken epochs times
        (or for `steps` steps) in batches of batch_size (64), shuffled per epoch with the seed;
        or x an iterator (or iterable) of (x, y) batches and y None: the iterator's end ends
        the run (or `steps` do), batch_size defaults to the first batch's rows.

        callbacks: callables receiving each step's {"step", "epoch", "loss", "accuracy",
        "rows"}; one returning False stops the run at the next step (cleanly, with a
        checkpoint). An object with an on_report(row) method also receives each validation row.
        Validation (validation_data=(x, y)) runs every eval_every steps (default: each epoch;
        100 steps over an iterator) and at the end.

        run_dir: where the run directory goes (config.yaml, checkpoints); None: a temporary one,
        removed afterwards. resume=True continues the run in run_dir from its newest checkpoint
        (arrays only). Ctrl-C stops at the next step boundary and raises KeyboardInterrupt; the
        model keeps the steps trained."""
        callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
        for c in callbacks:
            if not callable(c) and not hasattr(c, "on_report"):
                raise TypeError(f"a callback must be callable or have on_report, got {type(c).__name__}")
        iterator = None
        if y is None:
            if isinstance(x, np.ndarray):
                raise TypeError("fit(x) without y needs an iterator of (x, y) batches; for arrays pass fit(x, y)")
            iterator = iter(x)
            try:
                first = next(iterator)
            except StopIteration:
                raise ValueError("the batch iterator is empty") from None
            iterator = itertools.chain([first], iterator)
            if batch_size is None and isinstance(first, tuple) and len(first) == 2 and hasattr(first[0], "shape"):
                batch_size = int(first[0].shape[0])
            self._prepare(first[0] if isinstance(first, tuple) and first else None)
        else:
            self._prepare(x)
        training = {"epochs": epochs, "steps": steps, "batch": 64 if batch_size is None else batch_size, "eval_every": eval_every}
        if seed is not None:
            training["seed"] = seed
        if keep_checkpoints is not None:
            training["keep_checkpoints"] = keep_checkpoints
        if self._clip_norm is not None:
            training["clip_norm"] = self._clip_norm
        overrides = [f"training.{k}={json.dumps(v)}" for k, v in training.items()]
        overrides.append(f"data.shuffle={json.dumps(bool(shuffle))}")
        if self._optimizer is not None:
            overrides.append("optimizer=" + json.dumps(self._optimizer.to_config()))
        if self._schedule is not None:
            overrides.append("schedule=" + json.dumps(self._schedule.to_config()))

        history = {"loss": [], "accuracy": [], "validation": [], "summary": None}
        step_callbacks = [c for c in callbacks if callable(c)]
        report_callbacks = [c.on_report for c in callbacks if hasattr(c, "on_report")]

        def on_step(metrics):
            history["loss"].append(metrics["loss"])
            history["accuracy"].append(metrics["accuracy"])
            keep_going = True
            for c in step_callbacks:
                if c(metrics) is False:
                    keep_going = False
            return keep_going

        on_report = None
        if validation_data is not None or report_callbacks:
            def on_report(step, epoch):
                row = {"step": step, "epoch": epoch}
                if validation_data is not None:
                    row.update(self.evaluate(validation_data[0], validation_data[1]))
                history["validation"].append(row)
                for c in report_callbacks:
                    c(row)

        temporary = None
        if run_dir is None:
            if resume:
                raise ValueError("resume=True needs the run_dir to continue")
            temporary = tempfile.mkdtemp(prefix="tributary-fit-")
            run_dir = os.path.join(temporary, "run")
        try:
            if iterator is None:
                summary = self._core.fit_arrays(x, y, overrides, os.fspath(run_dir), resume, verbose, on_step,
                                                on_report)
            else:
                summary = self._core.fit_iterator(iterator, steps, steps_per_epoch, overrides, os.fspath(run_dir),
                                                  verbose, on_step, on_report)
        finally:
            if temporary is not None:
                shutil.rmtree(temporary, ignore_errors=True)
        if temporary is not None:
            summary["run_dir"] = None
        history["summary"] = summary
        return history

    def _prepare(self, sample):
        """Sequential builds its compiled half on first use; a loaded model has it."""


class Sequential(Model):
    """Layers applied one after another.

        model = tributary.Sequential([Flatten(), Dense(128, activation="relu"), Dense(10)],
                                     input_shape=(1, 28, 28))

    input_shape: one example's shape; None: taken from the first data the model sees.
    classes: the number of classes; None: the last Dense layer's units. seed: initial values
    and dropout masks. threads: intra-op threads (0: one per core)."""

    def __init__(self, layers=(), input_shape=None, classes=None, name="model", seed=1, threads=0):
        super().__init__(None)
        self._layers = []
        for layer in layers:
            self.add(layer)
        self._input_shape = None if input_shape is None else [int(d) for d in input_shape]
        self._classes = classes
        self._name = name
        self._seed = seed
        self._threads = threads

    def add(self, layer):
        if self._core is not None:
            raise RuntimeError("the model is built (it has predicted or trained): make a new Sequential to add layers")
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential takes tributary.layers objects, got {type(layer).__name__}")
        self._layers.append(layer)
        return self

    @property
    def layers(self):
        return list(self._layers)

    def to_config(self):
        """The job this model is (a dict): name, model, data (python), training seed, threads."""
        if self._input_shape is None:
            raise ValueError("the model's input_shape is not known yet: pass input_shape=, or fit it first")
        classes = self._classes
        if classes is None:
            dense = [l for l in self._layers if isinstance(l, Dense)]
            if not dense:
                raise ValueError("pass classes=: the model has no Dense layer to take the class count from")
            classes = dense[-1].to_config()["units"]
        return {"name": self._name,
                "model": {"input": self._input_shape, "classes": classes,
                          "layers": [l.to_config() for l in self._layers]},
                "data": {"format": "python"},
                "training": {"seed": self._seed},
                "threads": {"intra": self._threads}}

    def build(self):
        """Builds the model now (it builds itself on first use); raises if its shapes do not fit."""
        if self._core is None:
            if not self._layers:
                raise ValueError("the model has no layers")
            self._core = _tributary.ModelCore(json.dumps(self.to_config()), f"Sequential {self._name!r}")
        return self

    def _prepare(self, sample):
        if self._core is None and self._input_shape is None and sample is not None and hasattr(sample, "shape"):
            self._input_shape = [int(d) for d in sample.shape[1:]]
        self.build()

    def predict(self, x, batch_size=256, output="logits"):
        self._prepare(x)
        return super().predict(x, batch_size, output)

    def evaluate(self, x, y, batch_size=1000):
        self._prepare(x)
        return super().evaluate(x, y, batch_size)

    @property
    def variables(self):
        self.build()
        return super().variables

    def parameter_names(self, trainable_only=False):
        self.build()
        return super().parameter_names(trainable_only)

    def set_variable(self, name, value):
        self.build()
        super().set_variable(name, value)

    @property
    def step(self):
        return 0 if self._core is None else self._core.step

    @property
    def config_yaml(self):
        self.build()
        return super().config_yaml


__all__ = ["Model", "Sequential"]
