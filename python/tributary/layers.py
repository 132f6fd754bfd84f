"""The layers a model is built of: one class per layer kind of the C++ library
(include/trib/nn). Each is the layer's entry of a job's model.layers list, so a model built
here is the model a job file describes, and its run directory's config.yaml can be read by
`trib eval` and `Model.load`. Arguments are checked when the layer is made, by the same parser
that reads job files: a bad value raises tributary.InvalidArgument naming it."""

from . import _tributary

_ACTIVATIONS = ("none", "linear", "relu", "sigmoid", "tanh", "softmax")


class Layer:
    """A layer: its kind (`type`) and settings, as a job's model.layers entry."""

    type = None

    def __init__(self, name=None, **settings):
        self._config = {"type": self.type}
        if name is not None:
            self._config["name"] = name
        self._config.update({k: v for k, v in settings.items() if v is not None})
        _check_layer(self)

    def to_config(self):
        """The layer as a job's model.layers entry (a dict)."""
        return dict(self._config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items() if k != "type")
        return f"{type(self).__name__}({args})"


def _activation(a):
    return "none" if a is None else a


def _check_layer(layer):
    # A one-layer job through the job parser: the same checks and messages as a job file.
    job = {"model": {"input": [1], "classes": 2, "layers": [layer.to_config()]},
           "data": {"format": "python"}}
    import json
    _tributary.parse_job(json.dumps(job), repr(layer))


class Dense(Layer):
    """A fully connected layer over [N, features]: x·w + b, then the activation."""

    type = "dense"

    def __init__(self, units, activation=None, init="glorot_uniform", use_bias=True, l2=0.0, name=None):
        super().__init__(name, units=units, activation=_activation(activation), init=init, bias=use_bias, l2=l2)


class Conv2D(Layer):
    """A 2-D convolution over NCHW images. padding: "same", "valid" or a number of pixels."""

    type = "conv2d"

    def __init__(self, filters, kernel=3, stride=1, padding="same", activation=None, init="he_uniform",
                 use_bias=True, l2=0.0, name=None):
        super().__init__(name, filters=filters, kernel=kernel, stride=stride, padding=padding,
                         activation=_activation(activation), init=init, bias=use_bias, l2=l2)


class MaxPool2D(Layer):
    """Max pooling over NCHW images (no padding); stride defaults to size."""

    type = "max_pool2d"

    def __init__(self, size=2, stride=None, name=None):
        super().__init__(name, size=size, stride=stride)


class AvgPool2D(Layer):
    """Average pooling over NCHW images (no padding); stride defaults to size."""

    type = "avg_pool2d"

    def __init__(self, size=2, stride=None, name=None):
        super().__init__(name, size=size, stride=stride)


class Flatten(Layer):
    """[N, ...] to [N, features]."""

    type = "flatten"

    def __init__(self, name=None):
        super().__init__(name)


class Dropout(Layer):
    """Zeroes a fraction `rate` of its inputs while training; nothing at inference."""

    type = "dropout"

    def __init__(self, rate, name=None):
        super().__init__(name, rate=rate)


class BatchNorm(Layer):
    """Batch normalisation over channels (dimension 1), with running statistics."""

    type = "batch_norm"

    def __init__(self, momentum=0.9, epsilon=1e-5, name=None):
        super().__init__(name, momentum=momentum, epsilon=epsilon)


class Embedding(Layer):
    """Rows of a trainable [vocabulary, dim] table, looked up by integer ids (given as floats)."""

    type = "embedding"

    def __init__(self, vocabulary, dim, name=None):
        super().__init__(name, vocabulary=vocabulary, dim=dim)


class Activation(Layer):
    """An activation function as a layer of its own: relu, sigmoid, tanh, softmax, none."""

    type = "activation"

    def __init__(self, activation, name=None):
        super().__init__(name, activation=_activation(activation))


__all__ = ["Layer", "Dense", "Conv2D", "MaxPool2D", "AvgPool2D", "Flatten", "Dropout", "BatchNorm",
           "Embedding", "Activation"]
