"""The disagreement coefficient theta(h*) = max_{r >= r0} P(DIS(B(h*, r))) / r.

B(h*, r) is the ball of hypotheses within pool mass r of h*; r runs over {1/n, 2/n, 4/n, ..., 1}
(masses are multiples of 1/n). The paper's Theorem 1.1: theta = O(ln^d n) for depth-d trees with
distinct features on every path over grid data, polynomial without either assumption.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

_CLASS_API = ("weights", "predict_cells", "errors", "disagreement_region")


def _check_class_and_center(cls, h_star) -> None:
    V.check_module_attrs(cls, "cls", _CLASS_API)
    index = V.check_array(h_star, "h_star", ndim=1, dtype=None)
    if index.dtype.kind not in "iu" and not (
        index.dtype.kind == "f" and np.all(np.mod(index, 1) == 0)
    ):
        raise TypeError(f"h_star must be an integer hypothesis index, got {tuple(index)}")
    shape = getattr(cls, "shape", None)
    if shape is not None and (
        index.size != len(shape) or np.any(index < 0) or np.any(index >= np.asarray(shape))
    ):
        raise ValueError(f"h_star {tuple(index)} is not an index of the class's shape {shape}")


def ball_disagreement(cls, h_star, r: float) -> np.ndarray:
    """DIS(B(h*, r)) as a boolean cell array (structured projection where the class has it)."""
    _check_class_and_center(cls, h_star)
    r = V.check_scalar(r, "r", low=0.0)
    if hasattr(cls, "ball_disagreement"):
        return cls.ball_disagreement(h_star, r)
    pred = cls.predict_cells(h_star)
    dist = cls.errors(cls.weights * (pred == 0), cls.weights * (pred == 1))
    return cls.disagreement_region(dist <= r * cls.weights.sum() + 1e-9)


def disagreement_coefficient(cls, h_star, radii=None, return_curve: bool = False):
    """theta(h*) of hypothesis class ``cls`` at ``h_star`` (exact on the pool)."""
    _check_class_and_center(cls, h_star)
    n = float(cls.weights.sum())
    if radii is None:
        radii = []
        r = 1.0 / n
        while r < 1.0:
            radii.append(r)
            r *= 2.0
        radii.append(1.0)
    radii = V.check_array(radii, "radii", ndim=1, dtype=np.float64)
    if radii.min() <= 0:
        raise ValueError(f"radii must be > 0, got a minimum of {radii.min():g}")
    masses = np.array(
        [float(np.sum(cls.weights * ball_disagreement(cls, h_star, r))) / n for r in radii]
    )
    ratios = masses / radii
    theta = float(ratios.max())
    if return_curve:
        return theta, radii, masses
    return theta
