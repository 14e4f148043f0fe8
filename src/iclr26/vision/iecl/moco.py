"""MoCo v2 (He et al., 2020; Chen et al., 2020): the third base framework IE-CL plugs into.

A query network (encoder + MoCo v2's Linear-ReLU-Linear projection head) is trained by
InfoNCE (eq. 1 of MoCo) of each query against the key of the other view and a FIFO queue
of ``queue_size`` negative keys. The key network is a copy of the query network that never
receives gradients; after every optimiser step it moves by the momentum update (eq. 2)
``theta_k <- m theta_k + (1 - m) theta_q`` (parameters only, as in the official code; its
BatchNorm statistics follow its own forward passes), and the keys of that step are
enqueued, replacing the oldest ones.

Order within a step, as in the official code: the loss is computed against the queue as it
was *before* the step, then the step's keys are enqueued. The official code applies the
momentum update at the start of the next forward pass; doing it right after the optimiser
step, as here, gives the same key network for every forward pass.

``pair_loss(v_q, v_k)`` is asymmetric (the official loss: the first view is the query, the
second the key) unless ``symmetric=True`` (the official CIFAR demo's option: both views are
queries, the losses of the two directions are summed and both sets of keys are enqueued).
The keys of the last ``pair_loss`` call are the ones enqueued by :meth:`after_step`, so a
caller that evaluates the loss several times per step (IE-CL's transform step) enqueues
one batch per step.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision.iecl.losses import _queue_infonce
from iclr26.vision.iecl.simclr import TwoViewFramework, encoder_dim


class MoCo(TwoViewFramework):
    """MoCo v2 with any encoder returning (B, feat_dim) features.

    Defaults are the small-scale ones: ``queue_size=4096`` and ``momentum=0.99`` (the
    official CIFAR-10 demo's; ImageNet uses 65536 and 0.999), ``temperature=0.2`` (MoCo
    v2) and a projection head whose hidden width is the encoder's (``hidden_dim=None``).
    ``queue_size`` must be a multiple of the keys enqueued per step (the batch size, twice
    it when ``symmetric``) and at least that many.
    """

    def __init__(
        self,
        encoder: nn.Module,
        feat_dim: int | None = None,
        proj_dim: int = 128,
        temperature: float = 0.2,
        queue_size: int = 4096,
        momentum: float = 0.99,
        hidden_dim: int | None = None,
        symmetric: bool = False,
        seed: int = 0,
    ):
        feat_dim = encoder_dim(encoder, feat_dim)
        hidden_dim = feat_dim if hidden_dim is None else hidden_dim
        super().__init__(encoder, feat_dim, proj_dim, hidden_dim, seed)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        self.queue_size = V.check_int(queue_size, "queue_size", low=1)
        self.momentum = V.check_scalar(momentum, "momentum", low=0.0, high=1.0, high_open=True)
        self.symmetric = V.check_bool(symmetric, "symmetric")
        # the key network starts as an exact copy and is never trained by gradients
        self.key_encoder = copy.deepcopy(self.encoder)
        self.key_projector = copy.deepcopy(self.projector)
        for p in self.key_parameters():
            p.requires_grad_(False)
        # the queue starts as random unit vectors (as in the official code), stored (K, d)
        init = torch.randn(
            self.queue_size, self.proj_dim, generator=torch.Generator().manual_seed(seed)
        )
        self.register_buffer("queue", F.normalize(init, dim=1))
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))
        self._pending_keys: torch.Tensor | None = None
        self.last_keys: torch.Tensor | None = None

    def build_projector(self, feat_dim: int, hidden_dim: int, proj_dim: int) -> nn.Module:
        """MoCo v2's head: Linear - ReLU - Linear (no BatchNorm)."""
        return nn.Sequential(
            nn.Linear(feat_dim, hidden_dim), nn.ReLU(inplace=True), nn.Linear(hidden_dim, proj_dim)
        )

    # ------------------------------------------------------------------ networks
    def query_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.parameters()) + list(self.projector.parameters())

    def key_parameters(self) -> list[nn.Parameter]:
        return list(self.key_encoder.parameters()) + list(self.key_projector.parameters())

    def keys(self, v: torch.Tensor) -> torch.Tensor:
        """L2-normalised keys (B, proj_dim) of images ``v``. The key network's parameters
        never need gradients; a graph through it is built only when ``v`` itself requires
        grad (IE-CL's transform step, whose consistency term must reach the transform)."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and v.requires_grad):
            return F.normalize(self.key_projector(self.key_encoder(v)), dim=1)

    def queries(self, v: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.embed(v), dim=1)

    def embed_second(self, v: torch.Tensor) -> torch.Tensor:
        return self.queries(v) if self.symmetric else self.keys(v)

    # ------------------------------------------------------------------ objective
    def pair_loss(self, v1: torch.Tensor, v2: torch.Tensor):
        """``(loss, z1, z2)``. Asymmetric: InfoNCE of queries of ``v1`` against keys of
        ``v2`` and the queue; ``z1`` the queries, ``z2`` the keys. Symmetric: the sum of both
        directions; ``z1``, ``z2`` the queries of the two views. The queue is not changed
        here: the keys wait for :meth:`after_step`."""
        q1, k2 = self.queries(v1), self.keys(v2)
        loss = _queue_infonce(q1, k2, self.queue, self.temperature)
        if not self.symmetric:
            self._pending_keys = k2.detach()
            return loss, q1, k2
        q2, k1 = self.queries(v2), self.keys(v1)
        loss = loss + _queue_infonce(q2, k1, self.queue, self.temperature)
        self._pending_keys = torch.cat([k1, k2]).detach()
        return loss, q1, q2

    # ------------------------------------------------------------------ updates
    def keys_per_step(self, batch_size: int) -> int:
        return batch_size * (2 if self.symmetric else 1)

    def check_batch(self, x) -> torch.Tensor:
        super().check_batch(x)
        n = self.keys_per_step(x.shape[0])
        if self.queue_size % n or self.queue_size < n:
            per = "batch size" if not self.symmetric else "2 x batch size (symmetric)"
            raise ValueError(
                f"queue_size={self.queue_size} must be a multiple of the keys enqueued per step "
                f"({per} = {n}) and at least that many"
            )
        return x

    @torch.no_grad()
    def momentum_update(self) -> None:
        """``theta_k <- m theta_k + (1 - m) theta_q`` over the encoder and the head."""
        m = self.momentum
        for pk, pq in zip(self.key_parameters(), self.query_parameters()):
            pk.mul_(m).add_(pq.detach(), alpha=1.0 - m)

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> None:
        """Replace the oldest ``len(keys)`` entries of the queue by ``keys`` (FIFO ring)."""
        V.check_tensor(keys, "keys", shape=(None, self.proj_dim), floating=True)
        n = len(keys)
        if self.queue_size % n or self.queue_size < n:
            raise ValueError(
                f"queue_size={self.queue_size} must be a multiple of the {n} keys enqueued"
            )
        ptr = int(self.queue_ptr)
        self.queue[ptr : ptr + n] = keys.to(self.queue.dtype)
        self.queue_ptr.fill_((ptr + n) % self.queue_size)
        self.last_keys = keys

    def queue_in_order(self) -> torch.Tensor:
        """The queue from its oldest to its newest key (K, proj_dim)."""
        ptr = int(self.queue_ptr)
        return torch.cat([self.queue[ptr:], self.queue[:ptr]])

    def after_step(self) -> None:
        self.momentum_update()
        if self._pending_keys is not None:
            self.enqueue(self._pending_keys)
            self._pending_keys = None
