"""Group-relative advantages (GRPO, Shao et al. 2024, eq. 3 of the GRPO objective).

For one prompt with ``G`` sampled completions and scalar rewards ``R_1..R_G`` the advantage of
completion ``i`` is ``(R_i - mean R) / (std R + eps)`` with the unbiased standard deviation, the
same value on every response token. A group whose rewards are all equal gets exactly zero
advantage: it carries no policy gradient (the "gradient stagnation" ReVisual-R1 targets).
"""

from __future__ import annotations

import torch

from iclr26 import validation as V


def check_rewards(rewards, n: int | None = None) -> torch.Tensor:
    """``rewards`` as a finite 1-D float tensor (a NaN reward is an error, never a silent zero)."""
    if not isinstance(rewards, torch.Tensor):
        rewards = torch.as_tensor(V.check_array(rewards, "rewards", ndim=1), dtype=torch.float32)
    V.check_tensor(rewards, "rewards", ndim=1)
    if not rewards.is_floating_point():
        rewards = rewards.float()
    if n is not None and rewards.numel() != n:
        raise ValueError(f"rewards must have one value per completion ({n}), got {rewards.numel()}")
    return rewards


def check_group_size(group_size, n: int | None = None) -> int:
    """A group size >= 2 (one completion has no group baseline) that divides ``n``."""
    g = V.check_int(group_size, "group_size", low=2)
    if n is not None and n % g:
        raise ValueError(f"group_size {g} must divide the number of completions {n}")
    return g


def grpo_advantages(
    rewards, group_size: int, eps: float = 1e-6, normalize_std: bool = True
) -> torch.Tensor:
    """Per-completion GRPO advantages ``(R - mean_g R) / (std_g R + eps)``.

    ``rewards`` has ``n_prompts * group_size`` entries laid out group by group (completion ``j``
    of prompt ``p`` at ``p * group_size + j``). ``normalize_std=False`` gives the mean-centred
    variant (Dr. GRPO). Returns a float tensor of the same length."""
    rewards = check_rewards(rewards)
    g = check_group_size(group_size, rewards.numel())
    V.check_scalar(eps, "eps", low=0.0, low_open=True)
    V.check_bool(normalize_std, "normalize_std")
    grouped = rewards.reshape(-1, g).double()
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if normalize_std:
        centred = centred / (grouped.std(dim=1, unbiased=True, keepdim=True) + eps)
    return centred.reshape(-1).to(rewards.dtype)


def zero_advantage_fraction(advantages, threshold: float = 0.0) -> float:
    """Share of completions whose |advantage| <= ``threshold`` (they carry no/little gradient)."""
    adv = V.check_tensor(torch.as_tensor(advantages), "advantages", min_ndim=1)
    V.check_scalar(threshold, "threshold", low=0.0)
    per_seq = adv if adv.dim() == 1 else adv.reshape(adv.shape[0], -1)[:, 0]
    return float((per_seq.abs() <= threshold).float().mean())
