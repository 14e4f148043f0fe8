"""The contrastive objectives of the base frameworks: SimCLR's NT-Xent over the 2B views and
MoCo's InfoNCE of a query against its positive key and a queue of negative keys."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision import nt_xent


class InfoNCELoss(nn.Module):
    """NT-Xent over the 2B views of a batch: L = mean over views of
    ``-log exp(s(z_i, z_i+) / tau) / sum_{k != i} exp(s(z_i, z_k) / tau)`` with cosine
    similarity ``s``; symmetric in its two arguments."""

    def __init__(self, temperature: float = 0.2):
        super().__init__()
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)

    def forward(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        V.check_tensor(z1, "z1", ndim=2, floating=True)
        V.check_tensor(z2, "z2", shape=tuple(z1.shape), floating=True)
        if z1.shape[0] < 2:
            raise ValueError(f"z1 needs at least 2 rows (one negative per view), got {z1.shape[0]}")
        return nt_xent(z1, z2, self.temperature)


def queue_infonce(
    q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, temperature: float = 0.2
) -> torch.Tensor:
    """MoCo's InfoNCE (He et al., 2020, eq. 1): mean over the batch of
    ``-log exp(q.k+ / tau) / (exp(q.k+ / tau) + sum_j exp(q.n_j / tau))`` for queries ``q``
    (B, d), their positive keys ``k`` (B, d) and the negatives ``queue`` (K, d), all
    L2-normalised here: a (1 + K)-way classification whose label is always the positive.
    No gradient reaches the queue."""
    V.check_tensor(q, "q", ndim=2, floating=True)
    V.check_tensor(k, "k", shape=tuple(q.shape), floating=True)
    V.check_tensor(queue, "queue", shape=(None, q.shape[1]), floating=True)
    if queue.shape[0] < 1:
        raise ValueError("queue must hold at least one negative key, got 0 rows")
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    return _queue_infonce(q, k, queue, temperature)


def _queue_infonce(q, k, queue, temperature: float) -> torch.Tensor:
    q, k = F.normalize(q, dim=1), F.normalize(k, dim=1)
    positive = (q * k).sum(dim=1, keepdim=True)
    negative = q @ F.normalize(queue.detach().to(q.dtype), dim=1).t()
    logits = torch.cat([positive, negative], dim=1) / temperature
    labels = torch.zeros(len(q), dtype=torch.long, device=q.device)
    return F.cross_entropy(logits, labels)
