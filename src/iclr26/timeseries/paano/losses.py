"""PaAno's training objectives (Sec. 3.3): a triplet loss and an early pretext loss.

Triplet: anchor patch i, positive i + delta (|delta| <= r, delta != 0); the negatives of an
anchor are the positives of the other anchors in the minibatch, and the one at the largest
cosine distance is used, so ``L = mean relu(d(z_i, z_i+) - max_j d(z_i, z_j+) + m)`` with
``d = 1 - cos``. Pretext: a binary classifier on [h_a, h_b] says whether patch b is the one
immediately preceding patch a (start w steps earlier) against U random other anchors of the
batch; its weight falls linearly from 1 to 0 over the first 10% of iterations.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V


def triplet_loss(z_anchor: torch.Tensor, z_positive: torch.Tensor, margin: float = 0.5):
    """Triplet loss with the farthest in-batch negative (cosine distance on unit vectors)."""
    V.check_tensor(z_anchor, "z_anchor", ndim=2, floating=True)
    V.check_tensor(z_positive, "z_positive", shape=tuple(z_anchor.shape), floating=True)
    margin = V.check_scalar(margin, "margin", low=0.0)
    sim = z_anchor @ z_positive.T  # (B, B); column j is anchor j's positive
    pos_dist = 1.0 - sim.diagonal()
    neg_dist = 1.0 - sim
    # an anchor's own positive is never its negative
    neg_dist = neg_dist.masked_fill(torch.eye(len(sim), dtype=torch.bool, device=sim.device), -2.0)
    farthest = neg_dist.max(dim=1).values
    return torch.relu(pos_dist - farthest + margin).mean()


def pretext_loss(
    model,
    h_anchor: torch.Tensor,
    h_previous: torch.Tensor,
    has_previous: torch.Tensor,
    n_negatives: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """BCE of 'is the immediately preceding patch' (positives) vs random batch partners.

    ``h_previous[i]`` embeds the patch starting w steps before anchor i; rows where
    ``has_previous`` is False (no such patch in the training data) are left out of the
    positives. Negatives pair each anchor with ``n_negatives`` other anchors of the batch.
    The loss is mean over positives + mean over negatives.
    """
    V.check_module_attrs(model, "model", ("pretext_logit",))
    V.check_tensor(h_anchor, "h_anchor", ndim=2, floating=True)
    V.check_tensor(h_previous, "h_previous", shape=tuple(h_anchor.shape), floating=True)
    V.check_tensor(has_previous, "has_previous", shape=(h_anchor.shape[0],))
    if has_previous.dtype != torch.bool:
        raise TypeError(f"has_previous must be a bool tensor, got {has_previous.dtype}")
    n_negatives = V.check_int(n_negatives, "n_negatives", low=0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    bce = nn.functional.binary_cross_entropy_with_logits
    batch = h_anchor.shape[0]
    terms = []
    if bool(has_previous.any()):
        logits = model.pretext_logit(h_anchor[has_previous], h_previous[has_previous])
        terms.append(bce(logits, torch.ones_like(logits)))
    if batch > 1 and n_negatives > 0:
        rows = torch.arange(batch).repeat_interleave(n_negatives)
        shift = torch.randint(1, batch, (batch * n_negatives,), generator=generator)
        partners = (rows + shift) % batch
        logits = model.pretext_logit(h_anchor[rows], h_anchor[partners])
        terms.append(bce(logits, torch.zeros_like(logits)))
    if not terms:
        return h_anchor.sum() * 0.0
    return torch.stack(terms).sum()


def pretext_weight(iteration: int, n_iters: int, warm_fraction: float = 0.1) -> float:
    """lambda(t): 1 at t = 0, falling linearly to 0 at t = warm_fraction * n_iters, then 0."""
    iteration = V.check_int(iteration, "iteration", low=0)
    n_iters = V.check_int(n_iters, "n_iters", low=1)
    warm_fraction = V.check_probability(warm_fraction, "warm_fraction")
    horizon = warm_fraction * n_iters
    if horizon <= 0:
        return 0.0
    return max(0.0, 1.0 - iteration / horizon)
