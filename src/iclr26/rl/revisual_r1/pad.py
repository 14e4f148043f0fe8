"""Prioritized Advantage Distillation (PAD, ReVisual-R1 section 3.2) and the efficient-length
reward.

PAD scores every completion by the magnitude of its (length-normalised) advantage, keeps the
*effective set* ``E = {i : T_low < s_i < T_high}`` — dropping the zero-advantage rows of
all-right/all-wrong groups that carry no gradient, and extreme ones — and re-samples
``floor(ratio * N)`` rows from ``E`` with probabilities rising with ``s_i``: a temperature
softmax ``p_i ∝ exp(s_i / tau)`` (the paper's text) or a power law ``p_i ∝ (s_i + 1e-8)^alpha``
(the released code, default). When ``E`` is empty the original batch is kept."""

from __future__ import annotations

import numpy as np
import torch

from iclr26 import validation as V

WEIGHTINGS = ("power", "softmax")


def sequence_scores(advantages, response_mask=None, normalize_by_length: bool = True):
    """``s_i = |mean (or sum) of the token advantages over the response|`` (``[N]``); 1-D
    ``advantages`` are taken as sequence values directly."""
    if not isinstance(advantages, torch.Tensor):
        advantages = torch.as_tensor(V.check_array(advantages, "advantages", dtype=np.float32))
    adv = V.check_tensor(advantages, "advantages", ndim=(1, 2), floating=True)
    V.check_bool(normalize_by_length, "normalize_by_length")
    if adv.dim() == 1:
        return adv.abs()
    if response_mask is None:
        raise ValueError("response_mask is required for token-level advantages")
    mask = V.check_tensor(torch.as_tensor(response_mask), "response_mask", shape=tuple(adv.shape))
    mask = mask.to(adv.dtype)
    if torch.any((mask != 0) & (mask != 1)):
        raise ValueError("response_mask must hold 0/1 values")
    total = (adv * mask).sum(-1)
    if normalize_by_length:
        total = total / (mask.sum(-1) + 1e-8)
    return total.abs()


def pad_select(
    advantages,
    response_mask=None,
    low: float = 0.03,
    high: float | None = 0.97,
    alpha: float = 1.5,
    ratio: float = 1.5,
    weighting: str = "power",
    temperature: float = 1.0,
    replacement: bool = True,
    normalize_by_length: bool = True,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PAD: indices of the rows to train on and diagnostics.

    ``advantages``: token advantages ``[N, T]`` (with ``response_mask``) or sequence
    advantages ``[N]``. ``low``/``high``: the effective-set thresholds on ``s_i`` (``high=None``
    keeps every row above ``low``). Draws ``floor(ratio * N)`` rows from the effective set
    (without replacement: at most ``|E|``). Returns ``(indices, info)`` with ``effective``
    (|E|), ``effective_frac`` (|E| / N), ``selected``, ``kept_original`` (1 when E was empty),
    ``dropped_high`` (rows above ``high``) and the mean score of the batch and of the selection."""
    scores = sequence_scores(advantages, response_mask, normalize_by_length)
    n = scores.shape[0]
    low = V.check_scalar(low, "low", low=0.0)
    if high is not None:
        high = V.check_scalar(high, "high", low=low, low_open=True, allow_inf=True)
    alpha = V.check_scalar(alpha, "alpha", low=0.0)
    ratio = V.check_scalar(ratio, "ratio", low=0.0, low_open=True)
    V.check_choice(weighting, "weighting", WEIGHTINGS)
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    V.check_bool(replacement, "replacement")
    effective = scores > low
    dropped_high = 0
    if high is not None:
        dropped_high = int((scores >= high).sum())
        effective &= scores < high
    idx_e = torch.nonzero(effective).flatten()
    info: dict[str, float] = {
        "effective": int(idx_e.numel()),
        "effective_frac": float(idx_e.numel() / n),
        "dropped_high": dropped_high,
        "mean_score": float(scores.mean()),
    }
    n_draw = int(np.floor(ratio * n))
    if not replacement:
        n_draw = min(n_draw, int(idx_e.numel()))
    if idx_e.numel() == 0 or n_draw == 0:
        info.update(selected=n, kept_original=1, mean_selected_score=info["mean_score"])
        return torch.arange(n, device=scores.device), info
    s = scores[idx_e].double().cpu()  # drawn with a CPU generator on any device
    if weighting == "power":
        weights = (s + 1e-8) ** alpha
    else:
        weights = torch.softmax(s / temperature, dim=0)
    pick = torch.multinomial(weights / weights.sum(), n_draw, replacement, generator=generator)
    chosen = idx_e[pick.to(idx_e.device)]
    info.update(
        selected=int(chosen.numel()),
        kept_original=0,
        mean_selected_score=float(scores[chosen].mean()),
    )
    return chosen, info


class PADSelector:
    """:func:`pad_select` with fixed settings, as a ``batch_selector`` for
    :class:`iclr26.rl.grpo.GRPOTrainer`; keeps a log of every call's diagnostics."""

    def __init__(
        self,
        low: float = 0.03,
        high: float | None = 0.97,
        alpha: float = 1.5,
        ratio: float = 1.5,
        weighting: str = "power",
        temperature: float = 1.0,
        replacement: bool = True,
        normalize_by_length: bool = True,
    ):
        self.kwargs = dict(
            low=low,
            high=high,
            alpha=alpha,
            ratio=ratio,
            weighting=weighting,
            temperature=temperature,
            replacement=replacement,
            normalize_by_length=normalize_by_length,
        )
        # validate once, on a dummy batch, so a bad setting fails at construction
        pad_select(torch.tensor([0.5, 0.1]), **self.kwargs)
        self.log: list[dict[str, float]] = []

    def __call__(self, advantages, response_mask, generator=None):
        index, info = pad_select(advantages, response_mask, generator=generator, **self.kwargs)
        self.log.append(info)
        return index, info


def efficient_length_reward(n_tokens, budget, alpha: float = 0.005, delta: float = 0.5):
    """``clip(alpha * (budget - n_tokens) + delta, 0, 1)`` per completion (the release's
    length term: shorter than the budget earns more, longer earns less)."""
    n = V.check_array(n_tokens, "n_tokens", ndim=(0, 1), low=0.0).astype(np.float64)
    budget = V.check_scalar(budget, "budget", low=0.0, low_open=True)
    alpha = V.check_scalar(alpha, "alpha", low=0.0)
    delta = V.check_scalar(delta, "delta")
    return np.clip(alpha * (budget - n) + delta, 0.0, 1.0)
