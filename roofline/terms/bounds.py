"""What limits a step: the bound codes (memory, compute, network, host) and their names."""

from __future__ import annotations

import numpy as np

from roofline.model.memory import Number

#: What limits a step, by :func:`bound_code`: 0 memory, 1 compute, 2 network; 3 host, where the
#: engine's prefill floor (an eager step's host launches) outlasts the device work (:func:`prompt_step_floor`).
BOUND_NAMES = np.array(["memory", "compute", "network", "host"])
HOST_BOUND = np.int8(3)


def bound_code(compute_s: Number, bytes_s: Number, exposed_s: Number | None, local_s: Number) -> np.ndarray:
    """0 memory; 1 compute where FLOP time > byte time; 2 network where exposed collectives > local work.

    ``exposed_s`` None: no collectives exposed anywhere (the code keeps the shape it would have).
    """
    code = np.asarray(np.greater(compute_s, bytes_s)).view(np.int8)  # False/True are the bytes 0/1
    if exposed_s is None:
        shape = np.broadcast_shapes(code.shape, np.shape(local_s))
    else:
        network = np.greater(exposed_s, local_s)
        shape = np.broadcast_shapes(code.shape, network.shape)
        if network.any():
            code = np.where(network, np.int8(2), code)
    return code if code.shape == shape else np.broadcast_to(code, shape).copy()


def bound_names(code: np.ndarray) -> np.ndarray:
    """The words of :data:`BOUND_NAMES` for an array of bound codes (same shape)."""
    return BOUND_NAMES[code.reshape(-1)].reshape(code.shape)
