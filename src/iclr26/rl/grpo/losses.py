"""The GRPO/PPO token losses: clipped surrogate with an asymmetric ("clip-higher") range and
dual clip, the k3 ("low-variance") KL estimator to a frozen reference, and token entropy.

Policy loss per response token (PPO, Schulman et al. 2017; dual clip, Ye et al. 2020):
``l = -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A)`` and, where ``A < 0``, the loss is
further capped at ``-c A`` (``c`` = ``dual_clip``) so a huge ratio on a bad token cannot blow up
the update. ``rho = exp(logp - logp_old)``, its log pre-clamped to ``[log 1e-3, log 1e3]`` as in
the EasyR1/veRL release. Losses are averaged over all valid tokens of the batch ("token-mean").
"""

from __future__ import annotations

import math

import torch

from iclr26 import validation as V

LOG_RATIO_MIN, LOG_RATIO_MAX = math.log(1e-3), math.log(1e3)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is set (0 when the mask is empty)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def _check_pair(logp, other, name_other, mask):
    V.check_tensor(logp, "logp", floating=True, min_ndim=1)
    V.check_tensor(other, name_other, floating=True, shape=tuple(logp.shape))
    if mask is not None:
        V.check_tensor(torch.as_tensor(mask), "mask", shape=tuple(logp.shape))


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.25,
    dual_clip: float | None = 3.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-surrogate loss (token-mean over ``mask``) and its diagnostics.

    ``logp``/``old_logp``/``mask``: ``[batch, T]``; ``advantages``: ``[batch]`` (broadcast to
    the tokens) or ``[batch, T]``. Returns ``(loss, {"clip_frac_high", "clip_frac_low",
    "approx_kl_old"})``."""
    _check_pair(logp, old_logp, "old_logp", mask)
    V.check_tensor(advantages, "advantages", floating=True)
    if advantages.dim() == 1:
        if advantages.shape[0] != logp.shape[0]:
            raise ValueError(
                f"advantages must have one value per sequence ({logp.shape[0]}), "
                f"got {advantages.shape[0]}"
            )
        advantages = advantages[:, None].expand_as(logp)
    elif tuple(advantages.shape) != tuple(logp.shape):
        raise ValueError(f"advantages must have shape {tuple(logp.shape)} or [{logp.shape[0]}]")
    V.check_scalar(clip_low, "clip_low", low=0.0, high=1.0, high_open=True)
    V.check_scalar(clip_high, "clip_high", low=0.0)
    if dual_clip is not None:
        V.check_scalar(dual_clip, "dual_clip", low=1.0, low_open=True)
    log_ratio = (logp - old_logp).clamp(LOG_RATIO_MIN, LOG_RATIO_MAX)
    ratio = log_ratio.exp()
    clipped = log_ratio.clamp(
        math.log(1.0 - clip_low) if clip_low < 1 else -math.inf, math.log(1.0 + clip_high)
    ).exp()
    loss_plain = -advantages * ratio
    loss_clip = -advantages * clipped
    loss = torch.maximum(loss_plain, loss_clip)
    clip_frac_high = (loss_plain < loss_clip).float()
    if dual_clip is not None:
        capped = torch.minimum(loss, -advantages * dual_clip)
        negative = advantages < 0
        clip_frac_low = ((loss > -advantages * dual_clip) & negative).float()
        loss = torch.where(negative, capped, loss)
    else:
        clip_frac_low = torch.zeros_like(loss)
    stats = {
        "clip_frac_high": float(masked_mean(clip_frac_high, mask)),
        "clip_frac_low": float(masked_mean(clip_frac_low, mask)),
        "approx_kl_old": float(masked_mean(-log_ratio.detach(), mask)),
    }
    return masked_mean(loss, mask), stats


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor, clamp: float = 10.0) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || pi_ref): ``exp(d) - d - 1`` with ``d = ref - logp``,
    clamped to ``[-clamp, clamp]``. Non-negative, zero where the policies agree."""
    _check_pair(logp, ref_logp, "ref_logp", None)
    V.check_scalar(clamp, "clamp", low=0.0, low_open=True)
    d = ref_logp - logp
    return (d.exp() - d - 1.0).clamp(-clamp, clamp)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the next-token distribution at every position (``[..., vocab] -> [...]``).

    Logits of ``-inf`` (tokens masked out, e.g. by top-k or a forbidden-token mask) carry zero
    probability and add nothing (``0 log 0 = 0``), instead of turning the entropy into NaN."""
    V.check_tensor(logits, "logits", floating=True, min_ndim=1, allow_inf=True)
    if bool(torch.isposinf(logits).any()):
        raise ValueError("logits contains +infinity")
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp.exp()
    # zero the -inf log-probabilities before the product: 0 * -inf would be NaN, in the value
    # and in the gradient
    return -(p * logp.masked_fill(p == 0, 0.0)).sum(-1)
