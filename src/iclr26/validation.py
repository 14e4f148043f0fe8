"""Input validation shared by every room's public boundary.

Each check either returns the (converted) value or raises ``ValueError`` / ``TypeError`` with a
message that starts with the argument's name, so that a user learns *which* input is wrong and
*why* before any work starts. Arrays go through :func:`sklearn.utils.validation.check_array`;
tensors get the same treatment with torch operations (no copy to numpy). NaN is never "in range".

Typical use at the top of a public function::

    from iclr26 import validation as V

    def fit(X, y, *, alpha=1.0):
        X = V.check_array(X, "X", ndim=2)
        y = V.check_array(y, "y", ndim=1, n_rows=X.shape[0])
        alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_array",
    "check_tensor",
    "check_scalar",
    "check_int",
    "check_probability",
    "check_choice",
    "check_bool",
    "check_same_length",
    "check_finite",
    "check_in_unit_interval",
    "check_square",
    "check_stochastic",
    "check_module_attrs",
]


def _fmt_shape(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"


def _check_ndim(name: str, ndim_actual: int, ndim: int | Collection[int] | None) -> None:
    if ndim is None:
        return
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if ndim_actual not in allowed:
        want = " or ".join(str(a) for a in allowed)
        hint = ""
        if allowed == (2,) and ndim_actual == 1:  # scikit-learn's wording for this case
            hint = (
                "; Reshape your data with .reshape(-1, 1) for a single feature or "
                ".reshape(1, -1) for a single sample"
            )
        raise ValueError(f"{name} must have {want} dimension(s), got {ndim_actual}{hint}")


def _check_shape(name: str, actual: Sequence[int], shape: Sequence[int | None] | None) -> None:
    if shape is None:
        return
    if len(actual) != len(shape) or any(s is not None and s != a for s, a in zip(shape, actual)):
        raise ValueError(
            f"{name} must have shape {_fmt_shape(shape)}, got {_fmt_shape(tuple(actual))}"
        )


def check_array(
    value: Any,
    name: str,
    *,
    ndim: int | Collection[int] | None = None,
    shape: Sequence[int | None] | None = None,
    dtype: Any = "numeric",
    allow_nan: bool = False,
    allow_inf: bool = False,
    min_rows: int = 1,
    min_cols: int = 1,
    n_rows: int | None = None,
    low: float | None = None,
    high: float | None = None,
    copy: bool = False,
) -> np.ndarray:
    """Convert ``value`` to a numpy array and check it.

    ``ndim`` (an int or a set of ints), ``shape`` (``None`` entries are free), non-empty
    (``min_rows`` along axis 0, ``min_cols`` along axis 1 for 2-D), ``n_rows`` (must equal),
    finite unless ``allow_nan`` / ``allow_inf``, and values within ``[low, high]``.
    ``dtype="numeric"`` keeps numeric dtypes and refuses strings and objects; pass a numpy dtype
    (e.g. ``np.float64``) to convert, or ``None`` to keep any dtype.
    """
    from sklearn.utils.validation import check_array as sk_check_array

    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be an array of numbers, got a string")
    try:
        arr = np.array(value, copy=copy) if copy else np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} could not be read as an array: {exc}") from None
    if dtype == "numeric":
        if arr.dtype.kind in "OUSV":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}") from None
        elif arr.dtype.kind == "c":
            raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    elif dtype is not None:
        target = np.dtype(dtype)
        if arr.dtype.kind == "c" and target.kind != "c":
            raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
        if target.kind in "iub" and arr.dtype.kind in "fc":
            # never cast NaN, infinity or fractions to integers silently
            _check_finite_numpy(arr, name, allow_nan=False, allow_inf=False)
            if arr.size and not np.all(arr == np.round(arr)):
                raise TypeError(f"{name} must hold integers, got fractional values")
        try:
            arr = arr.astype(dtype, copy=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} could not be converted to {dtype}: {exc}") from None
    _check_ndim(name, arr.ndim, ndim)
    _check_shape(name, arr.shape, shape)
    if arr.ndim >= 1 and arr.shape[0] < min_rows:
        raise ValueError(
            f"{name} is empty: it needs at least {min_rows} row(s), got {arr.shape[0]}"
        )
    if arr.ndim >= 2 and arr.shape[1] < min_cols:
        raise ValueError(
            f"{name} is empty: it needs at least {min_cols} column(s), got {arr.shape[1]}"
        )
    if arr.ndim >= 1 and arr.size == 0:
        raise ValueError(f"{name} is empty (shape {_fmt_shape(arr.shape)})")
    if n_rows is not None and arr.ndim >= 1 and arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows, got {arr.shape[0]}")
    if arr.dtype.kind == "f":
        _check_finite_numpy(arr, name, allow_nan=allow_nan, allow_inf=allow_inf)
    if arr.ndim == 2 and arr.dtype.kind in "iuf":
        # scikit-learn's own 2-D checks (dtype, finiteness, minimum sizes), named after `name`
        finite: bool | str = not (allow_nan or allow_inf)
        if allow_nan and not allow_inf:
            finite = "allow-nan"
        try:
            arr = sk_check_array(
                arr,
                dtype=None,
                ensure_all_finite=finite,
                ensure_min_samples=min_rows,
                ensure_min_features=min_cols,
                input_name=name,
            )
        except ValueError as exc:
            msg = str(exc)
            raise ValueError(msg if msg.startswith(name) else f"{name}: {msg}") from None
    _check_bounds(arr, name, low, high)
    return arr


def _check_finite_numpy(arr: np.ndarray, name: str, *, allow_nan: bool, allow_inf: bool) -> None:
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN ({int(np.isnan(arr).sum())} value(s))")
    if not allow_inf and np.isinf(arr).any():
        raise ValueError(f"{name} contains infinity ({int(np.isinf(arr).sum())} value(s))")


def _check_bounds(arr, name: str, low: float | None, high: float | None) -> None:
    if arr.size == 0 or (low is None and high is None):
        return
    finite = arr[np.isfinite(arr)] if np.asarray(arr).dtype.kind == "f" else arr
    if finite.size == 0:
        return
    if low is not None and finite.min() < low:
        raise ValueError(f"{name} must be >= {low}, got a minimum of {finite.min():g}")
    if high is not None and finite.max() > high:
        raise ValueError(f"{name} must be <= {high}, got a maximum of {finite.max():g}")


def _is_tensor(value: Any) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return isinstance(value, torch.Tensor)


def check_tensor(
    value: Any,
    name: str,
    *,
    ndim: int | Collection[int] | None = None,
    min_ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    floating: bool = False,
    integer: bool = False,
    allow_nan: bool = False,
    allow_inf: bool = False,
    nonempty: bool = True,
    low: float | None = None,
    high: float | None = None,
):
    """Check a ``torch.Tensor`` without copying it: type, rank, shape, dtype kind, finiteness,
    non-empty and value range. Returns the tensor unchanged."""
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    _check_ndim(name, value.dim(), ndim)
    if min_ndim is not None and value.dim() < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got {value.dim()}")
    _check_shape(name, tuple(value.shape), shape)
    if floating and not (value.is_floating_point() or value.is_complex()):
        raise TypeError(f"{name} must be a floating-point tensor, got {value.dtype}")
    if integer and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer tensor, got {value.dtype}")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} is empty (shape {_fmt_shape(tuple(value.shape))})")
    if value.is_floating_point() and value.numel():
        with torch.no_grad():
            if not allow_nan and torch.isnan(value).any():
                raise ValueError(f"{name} contains NaN")
            if not allow_inf and torch.isinf(value).any():
                raise ValueError(f"{name} contains infinity")
    if (low is not None or high is not None) and value.numel():
        with torch.no_grad():
            vmin = value.min().item()
            vmax = value.max().item()
        if low is not None and vmin < low:
            raise ValueError(f"{name} must be >= {low}, got a minimum of {vmin:g}")
        if high is not None and vmax > high:
            raise ValueError(f"{name} must be <= {high}, got a maximum of {vmax:g}")
    return value


def check_scalar(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
    integer: bool = False,
    allow_none: bool = False,
) -> Any:
    """A real number (``integer=True``: an integral one) within ``[low, high]`` (``low_open``
    / ``high_open`` make that end strict). ``bool`` is refused; NaN is never in range.
    Returns ``float(value)`` (``int(value)`` for integers) or ``None`` when allowed."""
    if value is None:
        if allow_none:
            return None
        raise TypeError(f"{name} must be a number, got None")
    if _is_tensor(value):
        if value.numel() != 1:
            raise TypeError(f"{name} must be a scalar, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise TypeError(f"{name} must be a scalar, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        kind = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    if integer:
        if isinstance(value, numbers.Integral):
            value = int(value)
        elif math.isfinite(float(value)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {value!r}")
    else:
        value = float(value)
        if math.isnan(value):
            raise ValueError(f"{name} must be a number, got NaN")
        if math.isinf(value) and not allow_inf:
            raise ValueError(f"{name} must be finite, got {value}")
    if low is not None:
        bad = value <= low if low_open else value < low
        if bad:
            op = ">" if low_open else ">="
            raise ValueError(f"{name} must be {op} {low}, got {value}")
    if high is not None:
        bad = value >= high if high_open else value > high
        if bad:
            op = "<" if high_open else "<="
            raise ValueError(f"{name} must be {op} {high}, got {value}")
    return value


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """An integer within ``[low, high]`` (``2.0`` is accepted as 2; ``2.5`` and ``True`` are
    refused)."""
    return check_scalar(value, name, low=low, high=high, integer=True, allow_none=allow_none)


def check_probability(
    value: Any, name: str, *, open_low: bool = False, open_high: bool = False
) -> float:
    """A number in ``[0, 1]`` (ends made strict by ``open_low`` / ``open_high``)."""
    return check_scalar(value, name, low=0.0, high=1.0, low_open=open_low, high_open=open_high)


check_in_unit_interval = check_probability


def check_choice(value: Any, name: str, choices: Collection[Any]) -> Any:
    """One of ``choices``; the message lists them."""
    try:
        ok = value in choices
    except TypeError:
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_same_length(**named: Any) -> int:
    """All named sequences/arrays have the same length along axis 0; returns it."""
    lengths = {
        k: (v.shape[0] if hasattr(v, "shape") and len(v.shape) else len(v))
        for k, v in named.items()
    }
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"inputs must have the same length: {desc}")
    return next(iter(lengths.values())) if lengths else 0


def check_finite(value: Any, name: str) -> Any:
    """NaN/inf check for a tensor, an array or a number; returns it unchanged."""
    if _is_tensor(value):
        return check_tensor(value, name, nonempty=False)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite, got {value}")
        return value
    arr = np.asarray(value)
    if arr.dtype.kind in "fc":
        _check_finite_numpy(arr, name, allow_nan=False, allow_inf=False)
    return value


def check_square(value: Any, name: str, **kwargs: Any) -> np.ndarray:
    """A finite square 2-D matrix."""
    arr = check_array(value, name, ndim=2, **kwargs)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    return arr


def check_stochastic(value: Any, name: str, *, axis: int = 1, atol: float = 1e-8) -> np.ndarray:
    """Non-negative entries whose sums along ``axis`` are 1 (a row-stochastic matrix by
    default)."""
    arr = check_array(value, name, low=0.0)
    sums = arr.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=atol):
        worst = float(np.abs(sums - 1.0).max())
        raise ValueError(f"{name} must sum to 1 along axis {axis}; off by up to {worst:.3g}")
    return arr


def check_module_attrs(module: Any, name: str, attrs: Sequence[str]) -> Any:
    """An object that has every attribute in ``attrs`` (a protocol check); the message names
    the first missing one."""
    for attr in attrs:
        if not hasattr(module, attr):
            raise TypeError(
                f"{name} must provide attribute {attr!r} ({type(module).__name__} has none); "
                f"required: {', '.join(attrs)}"
            )
    return module
