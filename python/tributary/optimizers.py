"""Optimizers and learning-rate schedules, as a job's optimizer and schedule sections
(include/trib/optim). Hyper-parameters left as None take the optimizer's own default. They
are checked when made, by the job parser: a bad value raises tributary.InvalidArgument."""

import json

from . import _tributary


class Optimizer:
    """An optimizer: its name, learning rate and hyper-parameters (a job's optimizer section)."""

    name = None

    def __init__(self, lr, **settings):
        self._config = {"name": self.name, "lr": lr}
        self._config.update({k: v for k, v in settings.items() if v is not None})
        _check({"optimizer": self._config}, repr(self))

    def to_config(self):
        return dict(self._config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items() if k != "name")
        return f"{type(self).__name__}({args})"


class SGD(Optimizer):
    """Plain SGD; with momentum > 0 the momentum optimizer (PyTorch's semantics)."""

    name = "sgd"

    def __init__(self, lr=0.01, momentum=None, nesterov=False, weight_decay=None):
        super().__init__(lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)


class Momentum(Optimizer):
    name = "momentum"

    def __init__(self, lr=0.01, momentum=0.9, nesterov=False, weight_decay=None):
        super().__init__(lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)


class Adam(Optimizer):
    name = "adam"

    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999, eps=None, weight_decay=None):
        super().__init__(lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (default 0.01)."""

    name = "adamw"

    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999, eps=None, weight_decay=None):
        super().__init__(lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay)


class Adagrad(Optimizer):
    name = "adagrad"

    def __init__(self, lr=0.01, eps=None, initial_accumulator=0.0, weight_decay=None):
        super().__init__(lr, eps=eps, initial_accumulator=initial_accumulator, weight_decay=weight_decay)


class RMSProp(Optimizer):
    name = "rmsprop"

    def __init__(self, lr=0.001, alpha=0.99, eps=None, momentum=None, centered=False, weight_decay=None):
        super().__init__(lr, alpha=alpha, eps=eps, momentum=momentum, centered=centered, weight_decay=weight_decay)


class Schedule:
    """A learning-rate schedule (a job's schedule section): Schedule("cosine", warmup_steps=100).
    Names: constant, step, exponential, cosine; keys as in docs/config.md."""

    def __init__(self, name="constant", **settings):
        self._config = {"name": name, **settings}
        _check({"schedule": self._config}, repr(self))

    def to_config(self):
        return dict(self._config)

    def __repr__(self):
        return "Schedule(" + ", ".join(f"{k}={v!r}" for k, v in self._config.items()) + ")"


def _check(section, origin):
    job = {"model": {"input": [1], "classes": 2, "layers": [{"type": "dense", "units": 2}]},
           "data": {"format": "python"}, **section}
    _tributary.parse_job(json.dumps(job), origin)


__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamW", "Adagrad", "RMSProp", "Schedule"]
