"""The TopK sparse autoencoder that disentangles the image embeddings (DIAL step 2).

``a = ReLU(TopK(W_e (e - b_d) + b_e))`` keeps the ``k`` largest pre-activations of each row
(TopK SAE of Gao et al., 2024), ``e_hat = W_d a + b_d`` decodes with unit-norm dictionary
atoms (the columns of ``W_d``, renormalised after every step, their gradient's radial part
removed). Training minimises the reconstruction MSE plus the auxiliary dead-latent loss
(AuxK): the latents that have not fired for ``dead_after`` steps reconstruct the residual with
their own top-``k_aux``, which revives them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


class TopKSAE(nn.Module):
    """``TopKSAE(d, n_latents=8 * d, k=16)``; ``forward(e) -> (e_hat, codes)``."""

    def __init__(self, d: int, n_latents: int | None = None, k: int = 16, seed: int = 0):
        super().__init__()
        d = V.check_int(d, "d", low=1)
        n_latents = V.check_int(8 * d if n_latents is None else n_latents, "n_latents", low=1)
        k = V.check_int(k, "k", low=1)
        if k > n_latents:
            raise ValueError(f"k must be <= n_latents ({n_latents}), got {k}")
        self.d, self.n_latents, self.k = d, n_latents, k
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        atoms = F.normalize(torch.randn(d, n_latents, generator=gen), dim=0)
        self.W_d = nn.Parameter(atoms)  # (d, n_latents): column j is atom u_j
        self.W_e = nn.Parameter(atoms.T.clone())  # tied initialisation (Gao et al.)
        self.b_e = nn.Parameter(torch.zeros(n_latents))
        self.b_d = nn.Parameter(torch.zeros(d))

    @property
    def atoms(self) -> torch.Tensor:
        """The dictionary atoms u_j as rows (n_latents, d), unit norm."""
        return self.W_d.detach().T

    def preactivations(self, e: torch.Tensor) -> torch.Tensor:
        return (e - self.b_d) @ self.W_e.T + self.b_e

    def encode(self, e: torch.Tensor) -> torch.Tensor:
        """Sparse codes (n, n_latents): the top-k pre-activations (ReLU'd), zeros elsewhere."""
        e = V.check_tensor(e, "e", ndim=2, floating=True, shape=(None, self.d))
        pre = self.preactivations(e)
        top = pre.topk(self.k, dim=1)
        return torch.zeros_like(pre).scatter_(1, top.indices, F.relu(top.values))

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        return codes @ self.W_d.T + self.b_d

    def forward(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes = self.encode(e)
        return self.decode(codes), codes

    @torch.no_grad()
    def normalize_atoms(self) -> None:
        self.W_d.data = F.normalize(self.W_d.data, dim=0)

    @torch.no_grad()
    def _project_atom_grads(self) -> None:
        # remove the gradient component parallel to each unit atom (it only changes its norm)
        if self.W_d.grad is not None:
            parallel = (self.W_d.grad * self.W_d.data).sum(0, keepdim=True)
            self.W_d.grad -= parallel * self.W_d.data


def auxk_loss(
    sae: TopKSAE, e: torch.Tensor, e_hat: torch.Tensor, dead: torch.Tensor, k_aux: int
) -> torch.Tensor:
    """AuxK: reconstruct the residual ``e - e_hat`` from the top-``k_aux`` dead latents,
    normalised by the residual's variance (zero when no latent is dead)."""
    e = V.check_tensor(e, "e", ndim=2, floating=True, shape=(None, sae.d))
    V.check_tensor(e_hat, "e_hat", ndim=2, floating=True, shape=tuple(e.shape))
    n_dead = int(dead.sum())
    if n_dead == 0:
        return e.new_zeros(())
    pre = sae.preactivations(e).masked_fill(~dead[None, :], float("-inf"))
    top = pre.topk(min(k_aux, n_dead), dim=1)
    codes = torch.zeros_like(pre).scatter_(1, top.indices, F.relu(top.values))
    residual = (e - e_hat).detach()
    recon = codes @ sae.W_d.T
    return ((recon - residual) ** 2).sum(1).mean() / residual.pow(2).sum(1).mean().clamp_min(1e-12)


def train_sae(
    embeddings,
    n_latents: int | None = None,
    k: int = 16,
    steps: int = 2000,
    lr: float = 1e-3,
    batch_size: int = 256,
    aux_coef: float = 1 / 32,
    dead_after: int = 200,
    seed: int = 0,
    sae: TopKSAE | None = None,
    device: str = "cpu",
) -> TopKSAE:
    """Fit a :class:`TopKSAE` on ``embeddings`` (n, d) with Adam (MSE + ``aux_coef`` AuxK).

    ``b_d`` starts at the data mean. The loss curve is kept in ``sae.history_`` and the count
    of multiply-adds per step in ``sae.flops_per_step_``."""
    X = V.check_array(embeddings, "embeddings", ndim=2, dtype=np.float32, min_rows=2)
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    aux_coef = V.check_scalar(aux_coef, "aux_coef", low=0.0)
    dead_after = V.check_int(dead_after, "dead_after", low=1)
    if sae is None:
        sae = TopKSAE(X.shape[1], n_latents, k, seed=seed)
    elif not isinstance(sae, TopKSAE):
        raise TypeError(f"sae must be a TopKSAE, got {type(sae).__name__}")
    if sae.d != X.shape[1]:
        raise ValueError(f"embeddings must have {sae.d} columns (the SAE's d), got {X.shape[1]}")
    data = torch.from_numpy(X).to(device)
    sae.to(device)
    with torch.no_grad():
        sae.b_d.copy_(data.mean(0))
    k_aux = min(2 * sae.k, sae.n_latents)
    optimizer = torch.optim.Adam(sae.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    since_fired = torch.zeros(sae.n_latents, dtype=torch.long, device=device)
    history = []
    batch = min(batch_size, len(data))
    sae.train()
    for _ in range(steps):
        idx = torch.randint(0, len(data), (batch,), generator=gen).to(device)
        e = data[idx]
        e_hat, codes = sae(e)
        mse = ((e_hat - e) ** 2).sum(1).mean()
        fired = (codes > 0).any(0)
        since_fired = torch.where(fired, 0, since_fired + 1)
        loss = mse
        if aux_coef > 0:
            loss = loss + aux_coef * auxk_loss(sae, e, e_hat, since_fired > dead_after, k_aux)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        sae._project_atom_grads()
        optimizer.step()
        sae.normalize_atoms()
        history.append(float(mse.detach()))
    sae.eval()
    sae.history_ = history
    sae.dead_fraction_ = float((since_fired > dead_after).float().mean())
    # forward + backward ~ 3x the forward's two dense matmuls (encoder and decoder)
    sae.flops_per_step_ = float(3 * 2 * 2 * batch * sae.d * sae.n_latents)
    return sae
