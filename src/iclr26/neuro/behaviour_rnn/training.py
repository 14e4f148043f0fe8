"""Trainers: the teacher-forced DDPM objective of the behaviour RNN, and the two baselines
(task-optimal and moment matching) on the same architecture and surrogate data.

Diffusion (the paper's method): per trial draw M surrogate responses ``x_0``, noise them
incrementally to ``x_1..x_T``, run the preparatory epochs (BPTT through them) and then the
reverse dynamics, where at every step the behavioural coordinates of ``h`` are *replaced* by
the teacher ``x_t`` (the null space evolves freely), and regress ``E eps_hat`` on the effective
one-shot noise ``(x_t - a_t x_0) / b_t``."""

from __future__ import annotations

import abc
import time

import numpy as np
import torch

from iclr26 import validation as V

from .analysis import energy_distance, mixture_model_fit, multimodality_fraction
from .diffusion import effective_noise, forward_trajectory
from .network import BehaviourRNN
from .surrogate import SwapSurrogate
from .task import Trials, VWMTask

__all__ = ["DiffusionTrainer", "MomentMatchingTrainer", "TaskOptimalTrainer", "evaluate_samples"]


def evaluate_samples(
    samples: np.ndarray, trials: Trials, surrogate: SwapSurrogate, seed: int = 0
) -> dict[str, float]:
    """Mixture-model swap rate, energy distance to surrogate samples (mean over trials) and
    multimodality fraction of model samples ``(n, M, 2)``."""
    samples = V.check_array(samples, "samples", ndim=3)
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials record, got {type(trials).__name__}")
    if not isinstance(surrogate, SwapSurrogate):
        raise TypeError(f"surrogate must be a SwapSurrogate, got {type(surrogate).__name__}")
    V.check_same_length(samples=samples, trials=trials.report)
    seed = V.check_int(seed, "seed", low=0)
    ref = surrogate.sample(trials, samples.shape[1], seed=seed)
    fit = mixture_model_fit(samples, trials)
    return {
        "p_target": fit["p_target"],
        "p_swap": fit["p_swap"],
        "p_guess": fit["p_guess"],
        "kappa": fit["kappa"],
        "energy_distance": float(np.mean(energy_distance(samples, ref))),
        "multimodality": multimodality_fraction(samples, trials, radius=surrogate.radius),
        "mean_radius": float(np.linalg.norm(samples, axis=-1).mean()),
    }


class _Trainer(abc.ABC):
    response = "diffusion"

    def __init__(
        self,
        rnn: BehaviourRNN,
        task: VWMTask,
        surrogate: SwapSurrogate | None,
        *,
        samples_per_trial: int,
        batch_size: int,
        lr: float,
        prep_l2: float = 1e-3,
        activity_l2: float = 1e-5,
        seed: int = 0,
    ) -> None:
        if not isinstance(rnn, BehaviourRNN):
            raise TypeError(f"rnn must be a BehaviourRNN, got {type(rnn).__name__}")
        if not isinstance(task, VWMTask):
            raise TypeError(f"task must be a VWMTask, got {type(task).__name__}")
        if surrogate is not None and not isinstance(surrogate, SwapSurrogate):
            raise TypeError(f"surrogate must be a SwapSurrogate, got {type(surrogate).__name__}")
        if rnn.input_size != task.input_size:
            raise ValueError(
                f"rnn: input_size {rnn.input_size} does not match the task's {task.input_size}"
            )
        if rnn.T != task.T:
            raise ValueError(f"rnn: T = {rnn.T} does not match the task's T = {task.T}")
        self.rnn, self.task, self.surrogate = rnn, task, surrogate
        self.samples_per_trial = V.check_int(samples_per_trial, "samples_per_trial", low=1)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.prep_l2 = V.check_scalar(prep_l2, "prep_l2", low=0.0)
        self.activity_l2 = V.check_scalar(activity_l2, "activity_l2", low=0.0)
        self.seed = V.check_int(seed, "seed", low=0)
        rnn.response = self.response
        self.optimizer = torch.optim.Adam(rnn.parameters(), lr=self.lr)
        self.rng = np.random.default_rng(self.seed)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.history_: list[float] = []
        self.fit_seconds_ = 0.0

    @property
    def device(self):
        return self.rnn.readout.device

    def _batch(self) -> Trials:
        return self.task.make_trials(self.batch_size, seed=int(self.rng.integers(2**31)))

    def _regulariser(self, prep: torch.Tensor, response_states: torch.Tensor | None):
        reg = self.prep_l2 * prep[:, -1].pow(2).mean()
        if response_states is not None and self.activity_l2 > 0:
            reg = reg + self.activity_l2 * response_states.pow(2).mean()
        return reg

    @abc.abstractmethod
    def loss(self, trials: Trials) -> torch.Tensor:
        """The training loss of one batch of trials."""

    def step(self) -> float:
        """One optimisation step on a fresh batch of trials; returns the loss."""
        self.rnn.train()
        loss = self.loss(self._batch())
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.rnn.parameters(), 1.0)
        self.optimizer.step()
        value = float(loss.detach())
        if not np.isfinite(value):
            raise FloatingPointError(
                f"training diverged: loss {value} at step {len(self.history_)}"
            )
        self.history_.append(value)
        return value

    def fit(self, n_iters: int = 1500, progress=None):
        """``n_iters`` steps (``progress(fraction)`` called every 50); returns self."""
        n_iters = V.check_int(n_iters, "n_iters", low=1)
        start = time.perf_counter()
        for i in range(n_iters):
            self.step()
            if progress is not None and i % 50 == 0:
                progress(i / n_iters)
        self.fit_seconds_ += time.perf_counter() - start
        self.rnn.eval()
        return self

    def evaluate(self, trials: Trials, n_samples: int = 128, seed: int = 0) -> dict[str, float]:
        """Metrics of the RNN's samples on held-out ``trials`` against the surrogate."""
        if self.surrogate is None:
            raise ValueError("evaluate needs a surrogate to compare with")
        samples = self.rnn.sample(trials, n_samples, seed=seed)
        return evaluate_samples(samples, trials, self.surrogate, seed=seed + 1)

    def network_evaluations_per_step(self) -> int:
        """Rows through the drive network per training step (load-free cost count):
        ``batch x prep_steps`` preparatory plus ``batch x samples x T`` response rows."""
        b, m = self.batch_size, self.samples_per_trial
        return b * self.task.prep_steps + b * m * self.task.T

    def flops_per_step(self) -> float:
        """FLOPs of one training step: 2 x multiply-adds of the drive per row (preparatory
        rows see the input, response rows do not), times 3 for forward + backward."""
        r = self.rnn
        out = r.hidden * r.n_units
        prep = (r.n_units + r.time_embedding_dim + r.input_size) * r.hidden + out
        resp = r.n_units * r.hidden + out
        b, m = self.batch_size, self.samples_per_trial
        rows_prep, rows_resp = b * self.task.prep_steps, b * m * self.task.T
        return 3.0 * 2.0 * (prep * rows_prep + resp * rows_resp)


class DiffusionTrainer(_Trainer):
    """Teacher-forced DDPM training of a :class:`BehaviourRNN` on surrogate behaviour."""

    response = "diffusion"

    def __init__(
        self,
        rnn: BehaviourRNN,
        task: VWMTask,
        surrogate: SwapSurrogate,
        *,
        beta: tuple[float, float] | None = None,
        samples_per_trial: int = 32,
        batch_size: int = 32,
        lr: float = 5e-3,
        prep_l2: float = 1e-3,
        activity_l2: float = 1e-5,
        seed: int = 0,
    ) -> None:
        if surrogate is None:
            raise TypeError("surrogate must be a SwapSurrogate, got None")
        super().__init__(
            rnn,
            task,
            surrogate,
            samples_per_trial=samples_per_trial,
            batch_size=batch_size,
            lr=lr,
            prep_l2=prep_l2,
            activity_l2=activity_l2,
            seed=seed,
        )
        if beta is not None:
            lo, hi = float(rnn.schedule.beta[0]), float(rnn.schedule.beta[-1])
            if not np.allclose(beta, (lo, hi)):
                raise ValueError(f"beta {beta} differs from the rnn's schedule ({lo}, {hi})")

    def loss(self, trials: Trials) -> torch.Tensor:
        rnn = self.rnn
        x0 = self.surrogate.sample_torch(trials, self.samples_per_trial, self.rng).to(self.device)
        x_t = forward_trajectory(x0, rnn.schedule, self.generator)  # (n, M, T, 2)
        target = effective_noise(x_t, x0, rnn.schedule)
        prep = rnn.prepare(trials.inputs, self.generator)
        w = rnn.split_weights()
        nul = (prep[:, -1] @ rnn.null_basis.T).unsqueeze(1).expand(-1, self.samples_per_trial, -1)
        noise = torch.randn((rnn.T, *nul.shape), generator=self.generator, dtype=nul.dtype).to(nul)
        eps_hat, states = [], []
        for t in range(rnn.T, 0, -1):
            # teacher forcing: the behavioural coordinates are the teacher's x_t; only the
            # null space carries the network's own state from step to step
            _, nul, f_x = rnn.split_step(x_t[:, :, t - 1], nul, t, w, None, noise[t - 1])
            eps_hat.append(f_x)
            states.append(nul)
        eps_hat = torch.stack(eps_hat[::-1], dim=2)  # forward time, like the target
        loss = (eps_hat - target).pow(2).sum(-1).mean()
        return loss + self._regulariser(prep, torch.stack(states))


class TaskOptimalTrainer(_Trainer):
    """Baseline: the response epoch is ordinary noisy leaky dynamics and the loss is the squared
    error between the read-out at the last step and the *cued* item's report (no swaps)."""

    response = "leaky"

    def __init__(
        self,
        rnn: BehaviourRNN,
        task: VWMTask,
        surrogate: SwapSurrogate | None = None,
        *,
        radius: float = 2.5,
        samples_per_trial: int = 4,
        batch_size: int = 32,
        lr: float = 1e-3,
        prep_l2: float = 1e-3,
        activity_l2: float = 1e-5,
        seed: int = 0,
    ) -> None:
        super().__init__(
            rnn,
            task,
            surrogate,
            samples_per_trial=samples_per_trial,
            batch_size=batch_size,
            lr=lr,
            prep_l2=prep_l2,
            activity_l2=activity_l2,
            seed=seed,
        )
        self.radius = V.check_scalar(radius, "radius", low=0.0, low_open=True)

    def loss(self, trials: Trials) -> torch.Tensor:
        rnn = self.rnn
        prep = rnn.prepare(trials.inputs, self.generator)
        h = rnn.initial_response_state(prep[:, -1], self.samples_per_trial, self.generator)
        h = rnn.respond(h, self.generator)
        target = (
            torch.from_numpy(
                self.radius * np.stack([np.cos(trials.target), np.sin(trials.target)], -1)
            )
            .float()
            .to(self.device)
        )
        out = rnn.project_out(h)
        return (out - target[:, None]).pow(2).sum(-1).mean() + self._regulariser(prep, h)


class MomentMatchingTrainer(_Trainer):
    """Baseline: the same noisy leaky sampler, trained so that the per-trial mean and covariance
    of its samples match those of the surrogate (``||mu_hat - mu||^2 + ||S_hat - S||_F^2``)."""

    response = "leaky"

    def __init__(
        self,
        rnn: BehaviourRNN,
        task: VWMTask,
        surrogate: SwapSurrogate,
        *,
        samples_per_trial: int = 32,
        batch_size: int = 32,
        lr: float = 1e-3,
        prep_l2: float = 1e-3,
        activity_l2: float = 1e-5,
        seed: int = 0,
    ) -> None:
        if surrogate is None:
            raise TypeError("surrogate must be a SwapSurrogate, got None")
        super().__init__(
            rnn,
            task,
            surrogate,
            samples_per_trial=samples_per_trial,
            batch_size=batch_size,
            lr=lr,
            prep_l2=prep_l2,
            activity_l2=activity_l2,
            seed=seed,
        )
        if self.samples_per_trial < 2:
            raise ValueError("samples_per_trial must be >= 2 to estimate a covariance")

    def _target_moments(self, trials: Trials):
        try:
            mean, cov = self.surrogate.moments(trials)
        except ValueError:  # a fitted surrogate: moments of a large sample instead
            s = self.surrogate.sample(trials, 512, rng=self.rng)
            mean = s.mean(1)
            d = s - mean[:, None]
            cov = np.einsum("nmi,nmj->nij", d, d) / (s.shape[1] - 1)
        return (
            torch.from_numpy(mean).float().to(self.device),
            torch.from_numpy(cov).float().to(self.device),
        )

    def loss(self, trials: Trials) -> torch.Tensor:
        rnn = self.rnn
        prep = rnn.prepare(trials.inputs, self.generator)
        h = rnn.initial_response_state(prep[:, -1], self.samples_per_trial, self.generator)
        h = rnn.respond(h, self.generator)
        out = rnn.project_out(h)  # (n, M, 2)
        mu_hat = out.mean(1)
        d = out - mu_hat[:, None]
        cov_hat = torch.einsum("nmi,nmj->nij", d, d) / (out.shape[1] - 1)
        mu, cov = self._target_moments(trials)
        loss = (mu_hat - mu).pow(2).sum(-1).mean() + (cov_hat - cov).pow(2).sum((-1, -2)).mean()
        return loss + self._regulariser(prep, h)
