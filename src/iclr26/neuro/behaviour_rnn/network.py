"""The behaviour RNN: a rate network whose preparatory epochs are leaky rate dynamics and
whose response epoch *is* the reverse process of a denoising diffusion model, run in the
network's own state space. The behavioural read-out ``x = E h`` (orthonormal rows ``E``) is
the diffusion variable; the rest of ``h`` (the null space) carries the memory and the
computation. Each step evaluates one drive ``f(h, e_t, u) = W2 softplus(W1 [h; e_t; u] + b1)
+ b2`` (one hidden layer of rate units), which in the response epoch is the noise prediction
``eps_hat`` of the DDPM step."""

from __future__ import annotations

import math

import torch
from torch import nn

from iclr26 import validation as V

from .diffusion import DiffusionSchedule
from .task import Trials

__all__ = ["BehaviourRNN", "time_embedding"]

RESPONSES = ("diffusion", "leaky")


def time_embedding(T: int, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of steps ``1..T``, shape ``(T, dim)`` (row ``t - 1`` is step t)."""
    T = V.check_int(T, "T", low=1)
    dim = V.check_int(dim, "dim", low=2)
    half = dim // 2
    t = torch.arange(1, T + 1, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(4.0 * T) * torch.arange(half, dtype=torch.float32) / half)
    emb = torch.cat([torch.sin(t * freq), torch.cos(t * freq)], dim=1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros(T, 1)], dim=1)
    return emb


class BehaviourRNN(nn.Module):
    """Rate RNN with a diffusion (or, for the baselines, a leaky noisy) response epoch.

    Parameters: ``n_units`` (N), ``input_size``, ``readout_dim`` (2 for colour on the plane),
    ``hidden`` rate units of the drive, ``time_embedding_dim``, the schedule ``beta`` and
    ``T``, the Euler leak ``alpha`` (dt / tau) of the preparatory (and null-space-stabilised)
    dynamics, ``stabilise_nullspace`` (null space decays like an Euler step with ``alpha``
    instead of being scaled by ``1 / sqrt(1 - beta_t)``), ``separate_output_neurons`` (E = the
    first coordinates instead of a random rotation), ``prep_noise`` (std of per-trial noise in
    the preparatory epochs; 0 = deterministic), ``response`` (``"diffusion"`` or ``"leaky"``)
    and ``leaky_noise`` (noise std per step of the leaky response)."""

    def __init__(
        self,
        n_units: int = 32,
        input_size: int = 80,
        readout_dim: int = 2,
        hidden: int = 64,
        time_embedding_dim: int = 16,
        beta: tuple[float, float] = (0.01, 0.30),
        T: int = 40,
        alpha: float = 0.1,
        stabilise_nullspace: bool = True,
        separate_output_neurons: bool = False,
        prep_noise: float = 0.0,
        response: str = "diffusion",
        leaky_noise: float = 0.285,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.n_units = V.check_int(n_units, "n_units", low=2)
        self.input_size = V.check_int(input_size, "input_size", low=1)
        self.readout_dim = V.check_int(readout_dim, "readout_dim", low=1, high=self.n_units)
        self.hidden = V.check_int(hidden, "hidden", low=1)
        self.time_embedding_dim = V.check_int(time_embedding_dim, "time_embedding_dim", low=2)
        self.schedule = DiffusionSchedule(beta, T)
        self.T = self.schedule.T
        self.alpha = V.check_scalar(alpha, "alpha", low=0.0, high=1.0, low_open=True)
        self.stabilise_nullspace = V.check_bool(stabilise_nullspace, "stabilise_nullspace")
        separate = V.check_bool(separate_output_neurons, "separate_output_neurons")
        self.prep_noise = V.check_scalar(prep_noise, "prep_noise", low=0.0)
        self.response = V.check_choice(response, "response", RESPONSES)
        self.leaky_noise = V.check_scalar(leaky_noise, "leaky_noise", low=0.0)
        seed = V.check_int(seed, "seed", low=0)

        g = torch.Generator().manual_seed(seed)
        if separate:
            basis = torch.eye(self.n_units)
        else:
            q, r = torch.linalg.qr(torch.randn(self.n_units, self.n_units, generator=g))
            basis = (q * torch.sign(torch.diagonal(r))).T  # rows orthonormal
        self.register_buffer("readout", basis[: self.readout_dim].clone())  # E
        self.register_buffer("null_basis", basis[self.readout_dim :].clone())
        self.register_buffer("time_emb", time_embedding(self.T, self.time_embedding_dim))
        self.prep_embedding = nn.Parameter(0.1 * torch.randn(self.time_embedding_dim, generator=g))
        n_in = self.n_units + self.time_embedding_dim + self.input_size
        self.layer_in = nn.Linear(n_in, self.hidden)
        self.layer_out = nn.Linear(self.hidden, self.n_units)
        with torch.no_grad():  # seeded initialisation, independent of the global torch seed
            for layer in (self.layer_in, self.layer_out):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=g)
                layer.bias.uniform_(-bound, bound, generator=g)
        for name in ("state_scale", "eps_scale", "sigma", "a", "b"):
            self.register_buffer(f"sched_{name}", getattr(self.schedule, name).float())

    # ------------------------------------------------------------------ dynamics
    def drive(self, h: torch.Tensor, emb: torch.Tensor, u: torch.Tensor | None) -> torch.Tensor:
        """``W2 softplus(W1 [h; e; u] + b1) + b2`` for states ``(..., N)``.

        Computed blockwise: the embedding term is shared by all rows, and a missing input
        (``u=None``, the response epoch) contributes nothing."""
        n, d = self.n_units, self.time_embedding_dim
        w = self.layer_in.weight
        z = h @ w[:, :n].T + (emb @ w[:, n : n + d].T + self.layer_in.bias)
        if u is not None:
            z = z + u @ w[:, n + d :].T
        return self.layer_out(nn.functional.softplus(z))

    def project_out(self, h: torch.Tensor) -> torch.Tensor:
        """The behavioural read-out ``E h``, ``(..., readout_dim)``."""
        return h @ self.readout.T

    def replace_behaviour(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``h`` with its behavioural coordinates replaced by ``x`` (null space untouched)."""
        return h - self.project_out(h) @ self.readout + x @ self.readout

    def prepare(
        self, inputs: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Preparatory epochs from ``h = 0``: ``h <- (1 - alpha) h + alpha f(h, e_prep, u_s)``
        (+ ``prep_noise`` per trial). Returns the states ``(n, prep_steps, N)``."""
        V.check_tensor(inputs, "inputs", ndim=3, floating=True)
        if inputs.shape[-1] != self.input_size:
            raise ValueError(
                f"inputs must have {self.input_size} input units, got {inputs.shape[-1]}"
            )
        inputs = inputs.to(self.readout.device)
        h = inputs.new_zeros((inputs.shape[0], self.n_units))
        states = []
        for s in range(inputs.shape[1]):
            h = (1 - self.alpha) * h + self.alpha * self.drive(h, self.prep_embedding, inputs[:, s])
            if self.prep_noise > 0:
                z = torch.randn(h.shape, generator=generator).to(h)
                h = h + self.prep_noise * math.sqrt(self.alpha) * z
            states.append(h)
        return torch.stack(states, dim=1)

    def reverse_step(
        self,
        h: torch.Tensor,
        t: int,
        eps_hat: torch.Tensor,
        noise: torch.Tensor | None,
    ) -> torch.Tensor:
        """One DDPM reverse step in the full state space, with the null-space correction."""
        i = t - 1
        out = self.sched_state_scale[i] * h - self.sched_eps_scale[i] * eps_hat
        if self.stabilise_nullspace:
            null = h - self.project_out(h) @ self.readout
            out = out - (self.sched_state_scale[i] - (1 - self.alpha)) * null
        if noise is not None:
            out = out + self.sched_sigma[i] * noise
        return out

    def leaky_step(
        self, h: torch.Tensor, t: int, u: torch.Tensor | None, noise: torch.Tensor | None
    ) -> torch.Tensor:
        """One step of the baselines' response dynamics: a noisy leaky rate update."""
        out = (1 - self.alpha) * h + self.alpha * self.drive(h, self.time_emb[t - 1], u)
        if noise is not None:
            out = out + self.leaky_noise * noise
        return out

    # ------------------------------------------------------- split coordinates
    def split_weights(self) -> dict[str, torch.Tensor]:
        """The drive's weights in behavioural (``x = E h``) and null-space (``n = P h``)
        coordinates, so that a response step needs no projections of the full state."""
        n, d = self.n_units, self.time_embedding_dim
        w_h = self.layer_in.weight[:, :n]
        w_out, b_out = self.layer_out.weight, self.layer_out.bias
        return {
            "in_x": w_h @ self.readout.T,  # (hidden, 2)
            "in_n": w_h @ self.null_basis.T,  # (hidden, N - 2)
            "emb": self.time_emb @ self.layer_in.weight[:, n : n + d].T + self.layer_in.bias,
            "out_x": self.readout @ w_out,  # (2, hidden)
            "out_n": self.null_basis @ w_out,  # (N - 2, hidden)
            "bias_x": self.readout @ b_out,
            "bias_n": self.null_basis @ b_out,
        }

    def split_step(self, x, n, t: int, w: dict, z_x=None, z_n=None):
        """One response step on ``(x, n)``; returns ``(x', n', eps_hat_x)``. Identical to
        :meth:`reverse_step` / :meth:`leaky_step` on ``h = E^T x + P^T n`` with noise
        ``z = E^T z_x + P^T z_n``."""
        i = t - 1
        a = nn.functional.softplus(x @ w["in_x"].T + n @ w["in_n"].T + w["emb"][i])
        f_x = a @ w["out_x"].T + w["bias_x"]
        f_n = a @ w["out_n"].T + w["bias_n"]
        if self.response == "diffusion":
            k, c, s = self.sched_state_scale[i], self.sched_eps_scale[i], self.sched_sigma[i]
            x_new = k * x - c * f_x
            keep_n = (1 - self.alpha) if self.stabilise_nullspace else k
            n_new = keep_n * n - c * f_n
        else:
            s = self.leaky_noise
            x_new = (1 - self.alpha) * x + self.alpha * f_x
            n_new = (1 - self.alpha) * n + self.alpha * f_n
        if z_x is not None:
            x_new = x_new + s * z_x
        if z_n is not None:
            n_new = n_new + s * z_n
        return x_new, n_new, f_x

    def initial_response_state(
        self, prep_last: torch.Tensor, n_samples: int, generator: torch.Generator | None
    ) -> torch.Tensor:
        """``(n, M, N)``: the end-of-delay state, its behavioural coordinates drawn from the
        forward marginal ``b_T N(0, I)``."""
        h = prep_last.unsqueeze(1).expand(-1, n_samples, -1)
        x_T = torch.randn((*h.shape[:-1], self.readout_dim), generator=generator).to(h)
        return self.replace_behaviour(h, self.sched_b[-1] * x_T)

    def respond(
        self,
        h: torch.Tensor,
        generator: torch.Generator | None = None,
        return_trajectory: bool = False,
    ):
        """Run the response epoch (steps T..1) from states ``(n, M, N)``; returns ``h_0`` (and
        the trajectory ``(n, M, T, N)`` in reverse time when asked)."""
        w = self.split_weights()
        x, nul = self.project_out(h), h @ self.null_basis.T
        traj = []
        for t in range(self.T, 0, -1):
            z = torch.randn(h.shape, generator=generator).to(h)
            x, nul, _ = self.split_step(
                x, nul, t, w, z[..., : self.readout_dim], z[..., self.readout_dim :]
            )
            if return_trajectory:
                traj.append(x @ self.readout + nul @ self.null_basis)
        h = x @ self.readout + nul @ self.null_basis
        return (h, torch.stack(traj, dim=2)) if return_trajectory else h

    def forward(self, inputs: torch.Tensor, n_samples: int = 1, generator=None) -> torch.Tensor:
        """Samples ``(n, n_samples, readout_dim)`` for preparatory inputs ``(n, S, I)``."""
        n_samples = V.check_int(n_samples, "n_samples", low=1)
        prep = self.prepare(inputs, generator)
        h0 = self.respond(self.initial_response_state(prep[:, -1], n_samples, generator), generator)
        return self.project_out(h0)

    @torch.no_grad()
    def sample(
        self,
        trials: Trials,
        n_samples: int = 128,
        seed: int | None = None,
        return_states: bool = False,
    ):
        """Draw ``n_samples`` responses per trial without teacher forcing: ``(n, M, 2)``
        numpy. ``return_states=True`` also returns the preparatory states ``(n, S, N)`` and the
        response trajectories ``(n, M, T, N)``."""
        if not isinstance(trials, Trials):
            raise TypeError(f"trials must be a Trials record, got {type(trials).__name__}")
        n_samples = V.check_int(n_samples, "n_samples", low=1)
        seed = V.check_int(seed, "seed", low=0, allow_none=True)
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        prep = self.prepare(trials.inputs, g)
        h = self.initial_response_state(prep[:, -1], n_samples, g)
        h0, traj = self.respond(h, g, return_trajectory=True)
        out = self.project_out(h0).cpu().numpy()
        if return_states:
            return out, prep.cpu().numpy(), traj.cpu().numpy()
        return out
