"""The shared validation module: each check names the argument and refuses NaN, inf, empty
input, wrong rank/shape/dtype and out-of-range hyperparameters."""

import math

import numpy as np
import pytest
import torch

from iclr26 import validation as V


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        ([[1.0, np.nan]], {}, ValueError, "X contains NaN"),
        ([1.0, np.inf], {}, ValueError, "X contains infinity"),
        ([], {}, ValueError, "X is empty"),
        (np.zeros((0, 3)), {}, ValueError, "X is empty"),
        (np.zeros((3, 0)), {}, ValueError, "X is empty"),
        (np.zeros((3, 2)), {"ndim": 1}, ValueError, "X must have 1 dimension"),
        (np.zeros((3, 2)), {"shape": (None, 3)}, ValueError, r"X must have shape \(\*, 3\)"),
        (["a", "b"], {}, TypeError, "X must hold numbers"),
        (None, {}, TypeError, "X must be an array"),
        ([1 + 2j], {}, TypeError, "X must be real"),
        ([0.0, 2.0], {"high": 1.0}, ValueError, "X must be <= 1.0"),
        (np.zeros((4, 2)), {"n_rows": 3}, ValueError, "X must have 3 rows"),
    ],
)
def test_check_array_refuses(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        V.check_array(value, "X", **kwargs)


def test_check_array_accepts_and_converts():
    out = V.check_array([[1, 2], [3, 4]], "X", ndim=2)
    assert isinstance(out, np.ndarray) and out.shape == (2, 2)
    assert V.check_array(torch.ones(3), "x").shape == (3,)
    assert np.isnan(V.check_array([np.nan, 1.0], "x", allow_nan=True)).sum() == 1
    assert V.check_array([1, 2], "x", dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        (math.nan, {"low": 0.0}, ValueError, "lr must be a number, got NaN"),
        (math.inf, {}, ValueError, "lr must be finite"),
        (0.0, {"low": 0.0, "low_open": True}, ValueError, "lr must be > 0.0"),
        (2.0, {"high": 1.0}, ValueError, "lr must be <= 1.0"),
        (True, {}, TypeError, "lr must be a real number"),
        ("0.1", {}, TypeError, "lr must be a real number"),
        (None, {}, TypeError, "lr must be a number"),
        (2.5, {"integer": True}, TypeError, "lr must be an integer"),
    ],
)
def test_check_scalar_refuses(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        V.check_scalar(value, "lr", **kwargs)


def test_check_scalar_and_int_accept():
    assert V.check_scalar(np.float32(0.5), "lr", low=0) == 0.5
    assert V.check_int(3.0, "k", low=1) == 3 and isinstance(V.check_int(np.int64(4), "k"), int)
    assert V.check_scalar(None, "k", allow_none=True) is None
    with pytest.raises(ValueError, match="k must be >= 1"):
        V.check_int(0, "k", low=1)
    with pytest.raises(ValueError, match="p must be <= 1.0"):
        V.check_probability(1.5, "p")


def test_check_tensor():
    x = torch.randn(2, 3)
    assert V.check_tensor(x, "x", ndim=2, floating=True) is x
    with pytest.raises(ValueError, match="x contains NaN"):
        V.check_tensor(torch.tensor([1.0, float("nan")]), "x")
    with pytest.raises(ValueError, match="x is empty"):
        V.check_tensor(torch.zeros(0, 3), "x")
    with pytest.raises(TypeError, match="x must be a floating-point"):
        V.check_tensor(torch.ones(2, dtype=torch.long), "x", floating=True)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        V.check_tensor(np.ones(2), "x")
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 4\)"):
        V.check_tensor(x, "x", shape=(None, 4))


def test_other_checks():
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'"):
        V.check_choice("c", "mode", ["a", "b"])
    with pytest.raises(ValueError, match="W must sum to 1"):
        V.check_stochastic([[0.5, 0.6]], "W")
    with pytest.raises(ValueError, match="W must be square"):
        V.check_square(np.ones((2, 3)), "W")
    with pytest.raises(ValueError, match="X has 3, y has 2"):
        V.check_same_length(X=np.ones((3, 2)), y=[1, 2])
    with pytest.raises(TypeError, match="backbone must provide attribute 'blocks'"):
        V.check_module_attrs(object(), "backbone", ["blocks"])
    with pytest.raises(TypeError, match="flag must be True or False"):
        V.check_bool(1, "flag")


def test_integer_casts_refuse_nan_inf_and_fractions():
    with pytest.raises(ValueError, match="y contains NaN"):
        V.check_array([0.0, np.nan], "y", dtype=np.int64)
    with pytest.raises(ValueError, match="y contains infinity"):
        V.check_array([0.0, np.inf], "y", dtype=np.int64)
    with pytest.raises(TypeError, match="y must hold integers"):
        V.check_array([0.0, 1.5], "y", dtype=np.int64)
    assert V.check_array([0.0, 2.0], "y", dtype=np.int64).dtype == np.int64
    with pytest.raises(TypeError, match="y must be real"):
        V.check_array([1 + 2j], "y", dtype=np.float32)
