"""``CAPCompressor``: RPCA pools, global probabilistic allocation, finalisation, module swap.

``fit(model, calib_input_ids)`` runs RPCA on every target matrix (pools cached by the weights'
hash), trains the keep-probabilities of all candidates under one parameter budget with forward
passes only (the sampled weights are written into the model in place and the dense originals
restored afterwards), and finalises hard masks by a cost-aware global top-K. ``transform(model)``
swaps every target ``nn.Linear`` for a :class:`LowRankSparseLinear`, all or none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.llm.lrs_compression.allocator import (
    BASELINES,
    INITS,
    Masks,
    ProbabilisticAllocator,
    finalize,
)
from iclr26.llm.lrs_compression.candidates import RPCACandidates
from iclr26.llm.lrs_compression.layers import LowRankSparseLinear
from iclr26.llm.lrs_compression.targets import (
    DEFAULT_TARGETS,
    Target,
    check_calibration,
    check_model,
    check_targets,
    find_targets,
    swap_modules,
)
from iclr26.models import hf_compat

__all__ = ["CAPCompressor", "OBJECTIVES"]

OBJECTIVES = ("lm_ce", "kl_to_dense", "hidden_mse")


def _weights_hash(targets: Sequence[Target]) -> str:
    digest = hashlib.sha256()
    for t in targets:
        digest.update(t.name.encode())
        digest.update(t.module.weight.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def build_module(
    pool: RPCACandidates, keep_lowrank: torch.Tensor, keep_sparse: torch.Tensor, linear: nn.Linear
) -> LowRankSparseLinear:
    """The :class:`LowRankSparseLinear` of one pool under hard masks (factors carry sqrt(sigma))."""
    keep_l = keep_lowrank.bool()
    keep_s = keep_sparse.bool()
    root = pool.sigma[keep_l].sqrt()
    dtype = linear.weight.dtype
    index = pool.sparse_index[keep_s]
    n = pool.shape[1]
    bias = linear.bias.detach() if linear.bias is not None else None
    module = LowRankSparseLinear(
        in_features=n,
        out_features=pool.shape[0],
        U=(pool.U[:, keep_l] * root).to(dtype),
        V_factor=(pool.V[:, keep_l] * root).to(dtype),
        sparse_rows=index // n,
        sparse_cols=index % n,
        sparse_values=pool.sparse_values[keep_s].to(dtype),
        bias=bias,
    )
    return module.to(linear.weight.device)


class CAPCompressor:
    """Compress the target linears of a causal LM into low-rank + sparse parts under one budget.

    ``ratio`` is the fraction of the target matrices' dense parameters removed (0.5 keeps half;
    ``budget=`` in :meth:`fit` gives the kept count directly). The allocator runs
    ``steps`` policy-gradient steps (default ``iterations`` passes over the calibration
    sequences in batches of ``batch_size``), learning rate ``lr``, baseline ``"ema"`` (``beta``)
    or ``"window"`` (``window``), ``n_samples`` masks per step, starting from ``init``, on the
    loss ``objective`` (``"lm_ce"``: next-token cross-entropy; ``"kl_to_dense"``: KL from the
    dense model's next-token distribution; ``"hidden_mse"``: MSE of the last hidden states).
    RPCA: ``lam`` (default 1/sqrt(max(m, n))), ``rho``, ``tol``, ``max_iter``, ``svd``
    (``"auto"``: full SVD up to 1024 columns/rows, ``svd_lowrank`` beyond), ``rpca_device``
    (where RPCA runs; default the weights' device), ``cache_dir`` (pools on disk).
    ``cost_sparse`` is the cost of one sparse entry (1 as in the paper; 2 counts its index).

    After ``fit``: ``pools_``, ``masks_``, ``budget_``, ``allocator_``, ``allocation_`` (one dict
    per module: name, layer, shape, rank, nnz, params, dense, kept_fraction, rpca_rank,
    rpca_density). :meth:`compress` is ``fit`` then ``transform``."""

    def __init__(
        self,
        model: nn.Module | str | None = None,
        *,
        ratio: float = 0.5,
        target_modules: Sequence[str] = DEFAULT_TARGETS,
        iterations: int = 3,
        steps: int | None = None,
        batch_size: int = 1,
        lr: float = 0.05,
        baseline: str = "ema",
        beta: float = 0.9,
        window: int = 5,
        objective: str = "lm_ce",
        n_samples: int = 1,
        init: str = "energy",
        cost_sparse: float = 1.0,
        lam: float | None = None,
        rho: float = 1.5,
        tol: float = 1e-7,
        max_iter: int = 500,
        svd: str = "auto",
        rpca_device: str | torch.device | None = None,
        cache_dir: str | Path | None = None,
        seed: int = 0,
    ):
        self.model = None if model is None else check_model(model)
        self.ratio = V.check_scalar(ratio, "ratio", low=0.0, high=1.0, high_open=True)
        self.target_modules = check_targets(target_modules)
        self.iterations = V.check_int(iterations, "iterations", low=0)
        self.steps = V.check_int(steps, "steps", low=0, allow_none=True)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.baseline = V.check_choice(baseline, "baseline", BASELINES)
        self.beta = V.check_scalar(beta, "beta", low=0.0, high=1.0, high_open=True)
        self.window = V.check_int(window, "window", low=1)
        self.objective = V.check_choice(objective, "objective", OBJECTIVES)
        self.n_samples = V.check_int(n_samples, "n_samples", low=1)
        self.init = V.check_choice(init, "init", INITS)
        self.cost_sparse = V.check_scalar(cost_sparse, "cost_sparse", low=0.0, low_open=True)
        self.lam = V.check_scalar(lam, "lam", low=0.0, low_open=True, allow_none=True)
        self.rho = V.check_scalar(rho, "rho", low=1.0, low_open=True)
        self.tol = V.check_scalar(tol, "tol", low=0.0, low_open=True, high=1.0)
        self.max_iter = V.check_int(max_iter, "max_iter", low=1)
        self.svd = V.check_choice(svd, "svd", ("auto", "full", "lowrank"))
        self.rpca_device = None if rpca_device is None else torch.device(rpca_device)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.seed = V.check_int(seed, "seed")

    # ------------------------------------------------------------------ stage 1

    def build_pools(
        self, model: nn.Module, progress: Callable[[int, int], None] | None = None
    ) -> list[RPCACandidates]:
        """RPCA pools of every target matrix of ``model`` (cached per weights)."""
        model = check_model(model)
        targets = find_targets(model, self.target_modules)
        pools = []
        for i, t in enumerate(targets):
            W = t.module.weight.detach()
            if self.rpca_device is not None:
                W = W.to(self.rpca_device)
            svd = (
                self.svd if self.svd != "auto" else ("full" if min(W.shape) <= 1024 else "lowrank")
            )
            pools.append(
                RPCACandidates.from_matrix(
                    W,
                    lam=self.lam,
                    rho=self.rho,
                    tol=self.tol,
                    max_iter=self.max_iter,
                    svd=svd,
                    cost_sparse=self.cost_sparse,
                    name=t.name,
                    cache_dir=self.cache_dir,
                )
            )
            if progress is not None:
                progress(i + 1, len(targets))
        return pools

    def budget_for(self, model: nn.Module) -> int:
        """The kept parameter count ``(1 - ratio) x`` the dense size of the targets."""
        model = check_model(model)
        dense = sum(t.module.weight.numel() for t in find_targets(model, self.target_modules))
        return int((1.0 - self.ratio) * dense)

    # ------------------------------------------------------------------ stage 2

    def _loss_function(
        self,
        model: nn.Module,
        targets: list[Target],
        pools: list[RPCACandidates],
        calib: torch.Tensor,
    ):
        batches = list(torch.split(calib, self.batch_size))
        device = targets[0].module.weight.device
        reference: dict[int, torch.Tensor] = {}
        if self.objective != "lm_ce":
            with torch.no_grad():
                for i, b in enumerate(batches):
                    reference[i] = self._reference(model, b.to(device))
        state = {"step": 0}

        def loss_fn(masks: Masks) -> float:
            i = state["step"] % len(batches)
            state["step"] += 1
            with torch.no_grad():
                for t, pool, (ml, ms) in zip(targets, pools, masks):
                    w = pool.reconstruct(ml, ms)
                    t.module.weight.copy_(w.to(t.module.weight))
                return self._loss(model, batches[i].to(device), reference.get(i))

        return loss_fn

    def _reference(self, model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        if self.objective == "kl_to_dense":
            return torch.log_softmax(hf_compat.causal_lm_logits(model, ids)[:, :-1].float(), -1)
        out = model(input_ids=ids, output_hidden_states=True)
        return out.hidden_states[-1].float()

    def _loss(self, model: nn.Module, ids: torch.Tensor, reference: torch.Tensor | None) -> float:
        if self.objective == "hidden_mse":
            hidden = model(input_ids=ids, output_hidden_states=True).hidden_states[-1].float()
            return float(F.mse_loss(hidden, reference))
        logits = hf_compat.causal_lm_logits(model, ids)[:, :-1].float()
        if self.objective == "lm_ce":
            return float(
                F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            )
        logp = torch.log_softmax(logits, -1)
        return float(
            F.kl_div(logp, reference, log_target=True, reduction="batchmean") / ids.shape[1]
        )

    def fit(
        self,
        model: nn.Module | str,
        calib_input_ids: Any,
        budget: float | None = None,
        progress: Callable[[float, str], None] | None = None,
    ) -> CAPCompressor:
        """RPCA pools, allocator and hard masks for ``model`` on the calibration ids
        (``[n_sequences, seq_len]``). The model's weights are unchanged afterwards."""
        model = check_model(model)
        calib = check_calibration(calib_input_ids, model)
        targets = find_targets(model, self.target_modules)
        dense = sum(t.module.weight.numel() for t in targets)
        if budget is None:
            budget = max(1, int((1.0 - self.ratio) * dense))
        budget = V.check_scalar(budget, "budget", low=0.0, low_open=True)
        if budget > dense:
            raise ValueError(
                f"budget must not exceed the dense size of the target matrices ({dense}), got {budget:g}"
            )
        report = progress or (lambda f, m: None)
        pools = self.build_pools(model, progress=lambda i, n: report(0.3 * i / n, f"RPCA {i}/{n}"))
        n_batches = -(-calib.shape[0] // self.batch_size)
        steps = self.iterations * n_batches if self.steps is None else self.steps
        allocator = ProbabilisticAllocator(
            steps=steps,
            lr=self.lr,
            baseline=self.baseline,
            beta=self.beta,
            window=self.window,
            n_samples=self.n_samples,
            init=self.init,
            seed=self.seed,
        )
        originals = [t.module.weight.detach().clone() for t in targets]
        was_training = model.training
        model.eval()
        try:
            loss_fn = self._loss_function(model, targets, pools, calib)
            allocator.fit(
                pools,
                budget,
                loss_fn,
                progress=lambda i, n, loss: report(
                    0.3 + 0.7 * i / max(n, 1), f"allocator {i}/{n} loss {loss:.3f}"
                ),
            )
        finally:  # the dense weights come back whatever happened
            with torch.no_grad():
                for t, w in zip(targets, originals):
                    t.module.weight.copy_(w)
            model.train(was_training)
        self.pools_ = pools
        self.budget_ = budget
        self.allocator_ = allocator
        self.masks_ = allocator.masks_
        self.target_names_ = [t.name for t in targets]
        self.weights_hash_ = _weights_hash(targets)
        self.target_layers_ = [t.layer for t in targets]
        self.allocation_ = allocation_table(
            self.target_names_, self.target_layers_, pools, self.masks_
        )
        return self

    def refinalize(self, probabilities: Any) -> Masks:
        """Hard masks for other probabilities over the fitted pools (e.g. the initial ones, the
        ablation without allocator steps); sets ``masks_`` and ``allocation_``."""
        self._check_fitted()
        self.masks_ = finalize(self.pools_, probabilities, self.budget_)
        self.allocation_ = allocation_table(
            self.target_names_, self.target_layers_, self.pools_, self.masks_
        )
        return self.masks_

    def _check_fitted(self) -> None:
        if not hasattr(self, "masks_"):
            raise RuntimeError(
                "CAPCompressor is not fitted: call fit(model, calib_input_ids) first"
            )

    # ------------------------------------------------------------------ swap

    def transform(self, model: nn.Module | str | None = None) -> nn.Module:
        """Swap the fitted targets of ``model`` (the one fitted, or one with identical target
        weights) for :class:`LowRankSparseLinear` modules in place; returns the model."""
        self._check_fitted()
        model = check_model(self.model if model is None else model)
        targets = find_targets(model, self.target_modules)
        if [t.name for t in targets] != self.target_names_ or _weights_hash(
            targets
        ) != self.weights_hash_:
            raise ValueError(
                "model: its target weights differ from the ones this compressor was fitted on"
            )
        replacements = {
            t.name: build_module(pool, ml, ms, t.module)
            for t, pool, (ml, ms) in zip(targets, self.pools_, self.masks_)
        }
        return swap_modules(model, replacements)

    def compress(
        self,
        calib_input_ids: Any,
        budget: float | None = None,
        *,
        model: nn.Module | str | None = None,
        progress: Callable[[float, str], None] | None = None,
    ) -> nn.Module:
        """``fit`` then ``transform`` on ``model`` (default: the model given to the constructor)."""
        model = self.model if model is None else check_model(model)
        if model is None:
            raise ValueError(
                "model: pass a model to CAPCompressor(model) or to compress(model=...)"
            )
        self.fit(model, calib_input_ids, budget=budget, progress=progress)
        return self.transform(model)


def allocation_table(
    names: Sequence[str], layers: Sequence[int], pools: Sequence[RPCACandidates], masks: Masks
) -> list[dict[str, Any]]:
    """One row per target matrix: kept rank, nnz and parameters, and RPCA's split."""
    rows = []
    for name, layer, pool, (ml, ms) in zip(names, layers, pools, masks):
        rank, nnz = int(ml.sum()), int(ms.sum())
        params = int(rank * pool.cost_lowrank + nnz)
        rows.append(
            dict(
                name=name,
                layer=int(layer),
                shape=list(pool.shape),
                rank=rank,
                nnz=nnz,
                params=params,
                dense=pool.dense_size,
                kept_fraction=params / pool.dense_size,
                rpca_rank=pool.rank,
                rpca_density=pool.nnz / pool.dense_size,
                rpca_iterations=int(pool.info.get("iterations", 0)),
            )
        )
    return rows


def allocation_summary(allocation: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Kept fraction per layer and its coefficient of variation (how non-uniform it is)."""
    if not isinstance(allocation, Sequence) or isinstance(allocation, str) or not allocation:
        raise ValueError("allocation must be a non-empty list of per-module rows (allocation_)")
    need = ("layer", "params", "dense", "kept_fraction", "rank", "nnz")
    for row in allocation:
        if not isinstance(row, dict) or any(k not in row for k in need):
            raise ValueError(f"allocation rows must be dicts with keys {', '.join(need)}")
        V.check_scalar(row["dense"], "allocation dense", low=0.0, low_open=True)
    layers: dict[int, list[int]] = {}
    for row in allocation:
        kept, dense = layers.setdefault(int(row["layer"]), [0, 0])
        layers[int(row["layer"])] = [kept + row["params"], dense + row["dense"]]
    fractions = np.array([k / d for k, d in layers.values()])
    per_module = np.array([row["kept_fraction"] for row in allocation])
    cv = float(fractions.std() / fractions.mean()) if fractions.mean() > 0 else 0.0
    return {
        "layer_kept_fraction": {str(k): v[0] / v[1] for k, v in sorted(layers.items())},
        "layer_cv": cv,
        "module_cv": float(per_module.std() / per_module.mean()) if per_module.mean() > 0 else 0.0,
        "total_rank": int(sum(r["rank"] for r in allocation)),
        "total_nnz": int(sum(r["nnz"] for r in allocation)),
    }
