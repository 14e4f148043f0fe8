"""Masked (absorbing-state) discrete diffusion language model in the MDLM style.

Forward process: each token is independently replaced by the mask token with probability
``m_t = t`` (the log-linear schedule, ``alpha_t = 1 - t``). The denoiser predicts
``p_theta(x0 | x_t)`` at every position; the reverse step from ``t`` to ``s < t`` keeps unmasked
tokens ("carry-over") and unmasks each masked position with probability ``(m_t - m_s) / m_t``,
drawing its value from ``p_theta(x0 | x_t)``. Training minimises the continuous-time NELBO,
``E_t [ 1/t * sum_{masked i} -log p_theta(x0_i | x_t) ]``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

__all__ = ["MaskedDiffusionLM"]


def _check_tokens(x: Any, name: str, vocab: int, length: int, *, allow_mask: bool) -> torch.Tensor:
    """Integer token tensor of shape (n, length) with values in [0, vocab] (vocab = mask)."""
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(V.check_array(x, name, ndim=2, dtype=None))
    V.check_tensor(x, name, ndim=2, shape=(None, length), integer=True)
    high = vocab if allow_mask else vocab - 1
    V.check_tensor(x, name, low=0, high=high)
    return x.long()


class MaskedDiffusionLM(nn.Module):
    """Absorbing-state discrete diffusion model over sequences of fixed ``length``.

    Tokens are ``0 .. vocab-1``; ``mask_index = vocab`` is the absorbing state. The denoiser is
    a small bidirectional transformer without time input (MDLM: the masked positions carry
    the noise level)."""

    def __init__(
        self,
        vocab: int = 4,
        length: int = 32,
        d: int = 64,
        layers: int = 2,
        heads: int = 4,
        dropout: float = 0.0,
        seed: int | None = 0,
    ) -> None:
        super().__init__()
        self.vocab = V.check_int(vocab, "vocab", low=2)
        self.length = V.check_int(length, "length", low=1)
        self.d = V.check_int(d, "d", low=1)
        self.layers = V.check_int(layers, "layers", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        if self.d % self.heads:
            raise ValueError(f"d must be divisible by heads, got d={self.d}, heads={self.heads}")
        self.dropout = V.check_scalar(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.seed = V.check_int(seed, "seed", low=0, allow_none=True)
        if self.seed is not None:
            torch.manual_seed(self.seed)
        self.mask_index = self.vocab
        self.embed = nn.Embedding(self.vocab + 1, self.d)
        self.pos = nn.Parameter(torch.randn(1, self.length, self.d) * 0.02)
        # a local convolution before attention: neighbouring-base statistics are learnt at
        # once (the official DNA denoiser is convolutional)
        self.local = nn.Conv1d(self.d, self.d, kernel_size=5, padding=2)
        block = nn.TransformerEncoderLayer(
            self.d, self.heads, 4 * self.d, self.dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(block, self.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(self.d)
        self.head = nn.Linear(self.d, self.vocab)
        self.forward_sequences = 0  # load-free count: sequences passed through the denoiser

    # ------------------------------------------------------------------ denoiser
    def forward(self, x_t: torch.Tensor) -> torch.Tensor:
        """Log-probabilities ``log p_theta(x0 | x_t)``, shape (n, length, vocab); unmasked
        positions are one-hot on their own token (carry-over parameterisation)."""
        self.forward_sequences += int(x_t.shape[0])
        h = self.embed(x_t) + self.pos
        h = h + torch.relu(self.local(h.transpose(1, 2))).transpose(1, 2)
        h = self.encoder(h)
        logp = F.log_softmax(self.head(self.norm(h)), dim=-1)
        unmasked = x_t != self.mask_index
        if unmasked.any():
            carry = torch.full_like(logp, -1e9)
            carry.scatter_(-1, x_t.clamp(max=self.vocab - 1).unsqueeze(-1), 0.0)
            logp = torch.where(unmasked.unsqueeze(-1), carry, logp)
        return logp

    # ------------------------------------------------------------------ forward process
    def add_noise(self, x0: torch.Tensor, t: torch.Tensor, generator=None) -> torch.Tensor:
        """Mask each token of ``x0`` with probability ``t`` (one ``t`` per row)."""
        u = torch.rand(x0.shape, generator=generator).to(x0.device)
        t = t.to(x0.device).view(-1, 1)
        return torch.where(u < t, torch.full_like(x0, self.mask_index), x0)

    def loss(self, x0: torch.Tensor, generator=None, t: torch.Tensor | None = None) -> torch.Tensor:
        """Per-sequence continuous-time NELBO estimate (one ``t`` per row, antithetic grid)."""
        n = x0.shape[0]
        if t is None:
            offset = torch.rand(1, generator=generator)
            t = ((torch.arange(n) + offset) / n) % 1.0
            t = t.clamp(min=1e-3)
        t = t.to(x0.device)
        x_t = self.add_noise(x0, t, generator)
        logp = self(x_t).gather(-1, x0.unsqueeze(-1)).squeeze(-1)
        masked = x_t == self.mask_index
        return -(logp * masked).sum(-1) / t

    def fit(
        self,
        seqs: Any,
        steps: int = 1500,
        batch_size: int = 128,
        lr: float = 1e-3,
        seed: int = 0,
        grad_clip: float = 1.0,
    ) -> MaskedDiffusionLM:
        """Pretrain on integer sequences ``seqs`` (n, length) by minimising the NELBO."""
        x = _check_tokens(seqs, "seqs", self.vocab, self.length, allow_mask=False)
        steps = V.check_int(steps, "steps", low=1)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        grad_clip = V.check_scalar(grad_clip, "grad_clip", low=0.0, low_open=True)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        x = x.to(self.pos.device)
        opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
        self.train()
        for _ in range(steps):
            idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen).to(x.device)
            loss = self.loss(x[idx], gen).mean() / self.length
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.parameters(), grad_clip)
            opt.step()
            sched.step()
        self.eval()
        return self

    # ------------------------------------------------------------------ reverse process
    @staticmethod
    def step_probs(logp_x0: torch.Tensor, m_t: float, m_s: float) -> torch.Tensor:
        """Reverse-step distribution over ``vocab + 1`` states (last = stay masked) for a
        masked position: ``(m_t - m_s)/m_t * p(x0|x_t)`` and ``m_s/m_t``."""
        m_t = torch.as_tensor(m_t, dtype=logp_x0.dtype, device=logp_x0.device)
        m_s = torch.as_tensor(m_s, dtype=logp_x0.dtype, device=logp_x0.device)
        if m_t.dim() == 1:  # one noise level per sequence
            m_t, m_s = m_t.view(-1, 1, 1), m_s.view(-1, 1, 1)
        move = (m_t - m_s) / m_t
        stay = torch.ones_like(logp_x0[..., :1]) * (m_s / m_t)
        return torch.cat([logp_x0.exp() * move, stay], dim=-1)

    def reverse_step(
        self,
        x_t: torch.Tensor,
        t: float | torch.Tensor,
        s: float | torch.Tensor,
        generator=None,
        logp_x0: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sample ``x_s ~ p_theta(x_s | x_t)``; unmasked tokens never change."""
        if logp_x0 is None:
            with torch.no_grad():
                logp_x0 = self(x_t)
        probs = self.step_probs(logp_x0, t, s)
        n, L, k = probs.shape
        flat = probs.reshape(-1, k)
        if generator is not None and generator.device != flat.device:
            flat = flat.cpu()  # a CPU generator keeps sampling reproducible on any device
        draw = torch.multinomial(flat, 1, generator=generator).view(n, L).to(x_t.device)
        return torch.where(x_t == self.mask_index, draw, x_t)

    def log_prob_step(
        self, x_t: torch.Tensor, x_s: torch.Tensor, t: float, s: float
    ) -> torch.Tensor:
        """``log p_theta(x_s | x_t)`` per sequence (with gradients). Positions unmasked in
        ``x_t`` contribute 0; a masked position contributes ``log(m_s/m_t)`` if it stays masked
        and ``log((m_t-m_s)/m_t) + log p_theta(x0 = x_s | x_t)`` if it is unmasked."""
        logp = self(x_t)
        new = (x_t == self.mask_index) & (x_s != self.mask_index)
        stay = (x_t == self.mask_index) & (x_s == self.mask_index)
        picked = logp.gather(-1, x_s.clamp(max=self.vocab - 1).unsqueeze(-1)).squeeze(-1)
        move = math.log((t - s) / t) if t > s else -math.inf
        stay_lp = math.log(s / t) if s > 0 else -math.inf
        out = (picked + move) * new
        out = out + torch.where(stay, torch.full_like(picked, stay_lp), torch.zeros_like(picked))
        return out.sum(-1)

    def time_grid(self, steps: int) -> list[float]:
        return [k / steps for k in range(steps, -1, -1)]

    @torch.no_grad()
    def sample(
        self,
        n: int,
        steps: int = 32,
        generator=None,
        return_trajectory: bool = False,
        batch_size: int = 4096,
    ):
        """Draw ``n`` sequences with ``steps`` reverse steps on the grid ``t_k = k/steps``.
        With ``return_trajectory`` also returns the states ``[x_{t_steps}=all masked, ...,
        x_0]`` as a tensor of shape (steps + 1, n, length)."""
        n = V.check_int(n, "n", low=1)
        steps = V.check_int(steps, "steps", low=1)
        V.check_bool(return_trajectory, "return_trajectory")
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {generator!r}")
        was_training = self.training
        self.eval()
        grid = self.time_grid(steps)
        outs, trajs = [], []
        for start in range(0, n, batch_size):
            m = min(batch_size, n - start)
            x = torch.full(
                (m, self.length), self.mask_index, dtype=torch.long, device=self.pos.device
            )
            states = [x]
            for t, s in zip(grid[:-1], grid[1:], strict=True):
                x = self.reverse_step(x, t, s, generator)
                states.append(x)
            outs.append(x)
            if return_trajectory:
                trajs.append(torch.stack(states))
        self.train(was_training)
        x0 = torch.cat(outs)
        if return_trajectory:
            return x0, torch.cat(trajs, dim=1)
        return x0

    @torch.no_grad()
    def denoise_argmax(self, x_t: torch.Tensor) -> torch.Tensor:
        """One-shot greedy denoising ``x_hat0(x_t)``: argmax of ``p_theta(x0|x_t)`` at masked
        positions, the token itself elsewhere."""
        pred = self(x_t).argmax(-1)
        return torch.where(x_t == self.mask_index, pred, x_t)

    @torch.no_grad()
    def elbo(self, x0: Any, n_t: int = 16, seed: int = 0) -> torch.Tensor:
        """Monte-Carlo evidence lower bound ``log p(x0) >= -NELBO`` per sequence (nats),
        averaged over ``n_t`` noise levels on a stratified grid."""
        x0 = _check_tokens(x0, "x0", self.vocab, self.length, allow_mask=False)
        n_t = V.check_int(n_t, "n_t", low=1)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        x0 = x0.to(self.pos.device)
        total = torch.zeros(x0.shape[0], device=x0.device)
        for k in range(n_t):
            t = torch.full((x0.shape[0],), (k + 0.5) / n_t, device=x0.device)
            total += self.loss(x0, gen, t=t)
        return (-total / n_t).cpu()

    # ------------------------------------------------------------------ persistence
    def config(self) -> dict[str, Any]:
        return dict(
            vocab=self.vocab, length=self.length, d=self.d, layers=self.layers, heads=self.heads
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        torch.save({"config": self.config(), "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path) -> MaskedDiffusionLM:
        """Load a checkpoint written by :meth:`save`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path {str(path)!r} is not a checkpoint file")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        model = cls(**blob["config"], seed=None)
        model.load_state_dict(blob["state_dict"])
        return model.eval()
