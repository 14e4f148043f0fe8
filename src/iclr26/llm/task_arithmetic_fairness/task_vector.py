"""Task vectors (Ilharco et al.) over any ``torch.nn.Module`` or state dict.

A task vector is τ = θ_ft − θ₀ over the floating-point entries of a state dict; task arithmetic
edits a model as θ₀ + Σ_g λ_g τ_g. The paper merges subgroup vectors τ_g with one global λ
under two conventions, named explicitly here: ``"sum"`` (θ₀ + λ Σ_g τ_g, the official script's
sweep, whose balanced point is λ = 1/G) and ``"mean"`` (θ₀ + λ (1/G) Σ_g τ_g).
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch

from iclr26 import validation as V

CONVENTIONS = ("sum", "mean")


def _state_dict(obj, name: str) -> dict[str, torch.Tensor]:
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, Mapping):
        if not obj:
            raise ValueError(f"{name} is an empty state dict")
        bad = [k for k, v in obj.items() if not isinstance(v, torch.Tensor)]
        if bad:
            raise TypeError(f"{name} must map names to tensors; {bad[0]!r} is not a tensor")
        return dict(obj)
    raise TypeError(f"{name} must be a torch.nn.Module or a state dict, got {type(obj).__name__}")


def _check_scale(value, name: str) -> float:
    if isinstance(value, torch.Tensor | numbers.Real) and not isinstance(value, bool):
        return V.check_scalar(value, name)
    raise TypeError(f"{name} must be a real number, got {type(value).__name__}")


class TaskVector:
    """τ = θ_ft − θ₀ as ``{name: tensor}`` (float entries only; integer buffers are skipped).

    Supports ``+``, ``-``, unary ``-``, scalar ``*`` (both sides), ``sum([...])``, ``norm()``
    (global L2), ``norms_by_prefix()`` and ``apply_to(base, scale)``. Vectors combine only when
    they cover the same names with the same shapes.
    """

    def __init__(self, vector: Mapping[str, torch.Tensor]):
        if not isinstance(vector, Mapping):
            raise TypeError(f"vector must be a mapping name -> tensor, got {type(vector).__name__}")
        if not vector:
            raise ValueError("vector is empty: a task vector needs at least one tensor")
        store: dict[str, torch.Tensor] = {}
        for key, value in vector.items():
            if not isinstance(value, torch.Tensor) or not value.is_floating_point():
                raise TypeError(f"vector[{key!r}] must be a floating-point tensor")
            if not bool(torch.isfinite(value).all()):
                raise ValueError(f"vector[{key!r}] holds NaN or infinite values")
            store[str(key)] = value.detach()
        self.vector = store
        self._bound: float | None = None  # largest absolute entry, computed on first use

    @classmethod
    def _of(cls, store: dict[str, torch.Tensor], bound: float, name: str) -> TaskVector:
        """A vector from entries that arithmetic on checked vectors produced. The per-entry
        checks (a full pass over every parameter, the main cost of task arithmetic on a
        20 M-parameter model) are repeated only when ``bound``, an upper bound on the largest
        absolute entry, could exceed the dtype's range: then the operation may have
        overflowed to inf, and an overflow is an error naming ``name``."""
        out = cls.__new__(cls)
        out.vector = store
        out._bound = bound
        limit = min(torch.finfo(v.dtype).max for v in store.values())
        if not bound < limit:
            for key, value in store.items():
                if not bool(torch.isfinite(value).all()):
                    raise ValueError(f"{name} overflows: entry {key!r} is no longer finite")
            out._bound = None
        return out

    def _max_abs(self) -> float:
        """The largest absolute entry (computed once, then kept)."""
        if getattr(self, "_bound", None) is None:
            self._bound = max(float(v.abs().max()) for v in self.vector.values())
        return self._bound

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_models(
        cls,
        base,
        finetuned,
        include: Callable[[str], bool] | None = None,
    ) -> TaskVector:
        """{name: θ_ft − θ_base} over the floating-point entries that ``include(name)`` keeps.
        ``base`` and ``finetuned`` are modules or state dicts of the same architecture."""
        base_sd = _state_dict(base, "base")
        ft_sd = _state_dict(finetuned, "finetuned")
        if include is not None and not callable(include):
            raise TypeError("include must be a callable name -> bool or None")
        missing = sorted(set(base_sd) ^ set(ft_sd))
        if missing:
            raise ValueError(
                f"finetuned does not match base: {len(missing)} names differ (e.g. {missing[0]!r})"
            )
        out = {}
        for key, b in base_sd.items():
            f = ft_sd[key]
            if not b.is_floating_point() or (include is not None and not include(key)):
                continue
            if f.shape != b.shape:
                raise ValueError(
                    f"finetuned[{key!r}] has shape {tuple(f.shape)}, base has {tuple(b.shape)}"
                )
            out[key] = (f.detach().to(b.dtype) - b.detach()).clone()
        if not out:
            raise ValueError("base has no floating-point entries selected by include")
        return cls(out)

    # ------------------------------------------------------------------ arithmetic
    def _check_compatible(self, other: TaskVector, name: str = "other") -> None:
        if not isinstance(other, TaskVector):
            raise TypeError(f"{name} must be a TaskVector, got {type(other).__name__}")
        if set(self.vector) != set(other.vector):
            diff = sorted(set(self.vector) ^ set(other.vector))
            raise ValueError(f"{name} covers other parameters than this vector (e.g. {diff[0]!r})")
        for key, value in self.vector.items():
            if other.vector[key].shape != value.shape:
                raise ValueError(
                    f"{name}[{key!r}] has shape {tuple(other.vector[key].shape)}, "
                    f"expected {tuple(value.shape)}: a task vector of another model"
                )

    def __add__(self, other):
        if isinstance(other, numbers.Number) and other == 0:  # sum() starts from 0
            return self
        self._check_compatible(other)
        bound = self._max_abs() + other._max_abs()
        return TaskVector._of(
            {k: v + other.vector[k] for k, v in self.vector.items()}, bound, "the sum"
        )

    __radd__ = __add__

    def __neg__(self) -> TaskVector:
        return TaskVector._of({k: -v for k, v in self.vector.items()}, self._max_abs(), "-vector")

    def __sub__(self, other) -> TaskVector:
        self._check_compatible(other)
        bound = self._max_abs() + other._max_abs()
        return TaskVector._of(
            {k: v - other.vector[k] for k, v in self.vector.items()}, bound, "the difference"
        )

    def __mul__(self, scale) -> TaskVector:
        scale = _check_scale(scale, "scale")
        bound = abs(scale) * self._max_abs()
        return TaskVector._of({k: scale * v for k, v in self.vector.items()}, bound, "scale")

    __rmul__ = __mul__

    def norm(self) -> float:
        """Global L2 norm ‖τ‖₂."""
        return math.sqrt(sum(float(v.double().pow(2).sum()) for v in self.vector.values()))

    def norms_by_prefix(self, depth: int = 3) -> dict[str, float]:
        """L2 norms grouped by the first ``depth`` dot-separated parts of each name."""
        depth = V.check_int(depth, "depth", low=1)
        sq: dict[str, float] = {}
        for key, value in self.vector.items():
            prefix = ".".join(key.split(".")[:depth])
            sq[prefix] = sq.get(prefix, 0.0) + float(value.double().pow(2).sum())
        return {k: math.sqrt(v) for k, v in sq.items()}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return dict(self.vector)

    def __len__(self) -> int:
        return len(self.vector)

    def __repr__(self) -> str:
        return f"TaskVector({len(self.vector)} tensors, norm={self.norm():.4g})"

    # ------------------------------------------------------------------ editing
    def apply_to(self, base, scale: float = 1.0, inplace: bool = False):
        """θ₀ + scale·τ. A module gives a module (a deep copy unless ``inplace``), a state dict
        gives a new state dict. Tied weights (one tensor under two names) are set, not added
        twice, because every entry is computed from the base values."""
        scale = _check_scale(scale, "scale")
        inplace = V.check_bool(inplace, "inplace")
        base_sd = _state_dict(base, "base")
        missing = [k for k in self.vector if k not in base_sd]
        if missing:
            raise ValueError(
                f"base has no parameter {missing[0]!r} of this task vector: a model of another "
                "architecture"
            )
        for key, value in self.vector.items():
            if base_sd[key].shape != value.shape:
                raise ValueError(
                    f"base[{key!r}] has shape {tuple(base_sd[key].shape)}, the task vector "
                    f"{tuple(value.shape)}: a task vector of a model of another shape"
                )
        new = {
            k: base_sd[k]
            + (v if scale == 1.0 else scale * v).to(
                device=base_sd[k].device, dtype=base_sd[k].dtype
            )
            for k, v in self.vector.items()
        }
        if not isinstance(base, torch.nn.Module):
            out = dict(base_sd)
            out.update(new)
            return out
        if inplace:
            base.load_state_dict(new, strict=False)
            return base
        # the copy takes the new tensors in place of the ones it replaces instead of copying
        # them first (a tensor shared by two names takes the value of the later name, as
        # load_state_dict would give it)
        memo: dict[int, torch.Tensor] = {}
        placed = set()
        for name, param in base.named_parameters(remove_duplicate=False):
            if name in new:
                memo[id(param)] = torch.nn.Parameter(new[name], requires_grad=param.requires_grad)
                placed.add(name)
        for name, buffer in base.named_buffers(remove_duplicate=False):
            if name in new:
                memo[id(buffer)] = new[name]
                placed.add(name)
        model = copy.deepcopy(base, memo)
        rest = {k: v for k, v in new.items() if k not in placed}  # state-dict-only names
        if rest:
            model.load_state_dict(rest, strict=False)
        return model


def combine_coefficients(lam: float, n_vectors: int, convention: str = "sum") -> list[float]:
    """Per-vector coefficients λ_g of one global λ: λ under ``"sum"``, λ/G under ``"mean"``."""
    lam = _check_scale(lam, "lam")
    n_vectors = V.check_int(n_vectors, "n_vectors", low=1)
    V.check_choice(convention, "convention", CONVENTIONS)
    return [lam if convention == "sum" else lam / n_vectors] * n_vectors


def merge(base, vectors: Sequence[TaskVector] | Iterable[TaskVector], coeffs) -> object:
    """θ₀ + Σ_g λ_g τ_g as a new model (or state dict, if ``base`` is one). ``coeffs`` is one
    number (the same λ for every vector) or one per vector."""
    vectors = list(vectors) if not isinstance(vectors, Mapping) else list(vectors.values())
    if not vectors:
        raise ValueError("vectors is empty: merge needs at least one task vector")
    for i, tv in enumerate(vectors):
        if not isinstance(tv, TaskVector):
            raise TypeError(f"vectors[{i}] must be a TaskVector, got {type(tv).__name__}")
    if isinstance(coeffs, numbers.Real | torch.Tensor) and not isinstance(coeffs, bool):
        coeffs = [coeffs] * len(vectors)
    coeffs = list(coeffs)
    if len(coeffs) != len(vectors):
        raise ValueError(f"coeffs has {len(coeffs)} entries for {len(vectors)} vectors")
    coeffs = [_check_scale(c, f"coeffs[{i}]") for i, c in enumerate(coeffs)]
    total = sum(c * tv for c, tv in zip(coeffs, vectors))
    return total.apply_to(base, scale=1.0)
