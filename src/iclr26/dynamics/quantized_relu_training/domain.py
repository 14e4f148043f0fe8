"""The finite domain Z_d and the truncated activation ReLU_d of fully quantized networks.

Z_d = {z : -floor((d-1)/2) <= z <= ceil((d-1)/2)} holds every weight, bias, input, label and
activation; ReLU_d(z) = min(max(z, 0), ceil((d-1)/2)) keeps activations inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

OUTPUT_ACTIVATIONS = ("relu_d", "clip")


@dataclass(frozen=True)
class QuantizedDomain:
    """Z_d for an integer ``d >= 2`` (d = 2: {0, 1}; d = 3: {-1, 0, 1}; d = 4: {-1, 0, 1, 2})."""

    d: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", V.check_int(self.d, "d", low=2))

    @property
    def lo(self) -> int:
        return -((self.d - 1) // 2)

    @property
    def hi(self) -> int:
        return (self.d - 1) - (self.d - 1) // 2

    @property
    def values(self) -> np.ndarray:
        return np.arange(self.lo, self.hi + 1, dtype=np.int64)

    def contains(self, array) -> bool:
        """True when every entry is an integer inside Z_d."""
        arr = np.asarray(array)
        if arr.size == 0:
            return True
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                return False
        return bool(arr.min() >= self.lo and arr.max() <= self.hi)

    def relu(self, z: np.ndarray) -> np.ndarray:
        """ReLU_d: truncation of max(z, 0) at ceil((d-1)/2)."""
        return np.clip(z, 0, self.hi)

    def activate(self, z: np.ndarray, kind: str = "relu_d") -> np.ndarray:
        """ReLU_d (hidden neurons, and outputs by default) or plain clipping into Z_d."""
        if kind == "relu_d":
            return np.clip(z, 0, self.hi)
        if kind == "clip":
            return np.clip(z, self.lo, self.hi)
        raise ValueError(f"unknown activation {kind!r}; valid: {', '.join(OUTPUT_ACTIVATIONS)}")
