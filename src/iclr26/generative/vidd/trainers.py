"""VIDD (value-guided iterative distillation) and the baselines it is compared with.

VIDD fine-tunes a masked diffusion model toward ``p*(x0) ∝ p_pre(x0) exp(r(x0)/alpha)`` by
distilling the soft-optimal denoising policy ``p*(x_s|x_t) ∝ p_old(x_s|x_t) exp(v(x_s)/alpha)``
into the student: roll in states ``x_t`` from the student (probability ``rollin_student_prob``)
or the pretrained model, draw ``x_s`` from a lagged teacher ``theta_old``, weight it by the soft
value ``exp(v(x_s)/alpha)`` (optionally divided by ``exp(v(x_t)/alpha)``) with
``v(x) = r(x_hat0_pre(x))`` and minimise the forward KL, i.e. ``-w * log p_theta(x_s|x_t)``
summed over newly unmasked positions. The teacher is refreshed every
``teacher_update_interval`` epochs. Every trainer counts its reward-oracle queries.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.generative.vidd.diffusion import MaskedDiffusionLM
from iclr26.generative.vidd.dna import RewardOracle

__all__ = [
    "BestOfN",
    "DDPOTrainer",
    "RWMLETrainer",
    "StandardFTTrainer",
    "VIDDTrainer",
    "normalise_rewards",
    "soft_value_weights",
]


def normalise_rewards(values: Any, mode: str = "normal") -> torch.Tensor:
    """Per-batch reward normalisation along the last axis: ``normal`` (zero mean, unit std),
    ``pos`` (minus the minimum) or ``none``."""
    v = torch.as_tensor(V.check_array(values, "values", ndim={1, 2}), dtype=torch.float64)
    V.check_choice(mode, "mode", ("normal", "pos", "none"))
    if mode == "normal":
        std = v.std(dim=-1, keepdim=True) if v.shape[-1] > 1 else torch.zeros_like(v[..., :1])
        return (v - v.mean(dim=-1, keepdim=True)) / (std + 1e-8)
    if mode == "pos":
        return v - v.min(dim=-1, keepdim=True).values
    return v


def soft_value_weights(
    v_s: Any,
    alpha: float,
    v_t: Any | None = None,
    clip_quantile: float | None = 0.99,
) -> torch.Tensor:
    """``exp(v_s/alpha)`` (divided by ``exp(v_t/alpha)`` when ``v_t`` is given), clipped at
    the ``clip_quantile`` quantile of the batch (``None``: no clipping)."""
    v_s = torch.as_tensor(V.check_array(v_s, "v_s", ndim={1, 2}), dtype=torch.float64)
    alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True, allow_inf=True)
    logw = v_s / alpha
    if v_t is not None:
        v_t = torch.as_tensor(V.check_array(v_t, "v_t", ndim={1, 2}), dtype=torch.float64)
        if v_t.shape != v_s.shape:
            raise ValueError(
                f"v_t must have the shape of v_s {tuple(v_s.shape)}, got {tuple(v_t.shape)}"
            )
        logw = logw - v_t / alpha
    w = torch.exp(logw)
    if clip_quantile is not None:
        q = V.check_probability(clip_quantile, "clip_quantile", open_low=True)
        w = torch.minimum(w, torch.quantile(w.reshape(-1), q))
    return w


def _check_model(model: Any, name: str = "pretrained") -> MaskedDiffusionLM:
    if not isinstance(model, MaskedDiffusionLM):
        raise TypeError(f"{name} must be a MaskedDiffusionLM, got {type(model).__name__}")
    return model


def _masked_mean_logp(logp: torch.Tensor, x0: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Mean over masked positions of ``log p(x0_i | x_t)`` per sequence (0 where none)."""
    picked = logp.gather(-1, x0.unsqueeze(-1)).squeeze(-1)
    return (picked * masked).sum(-1) / masked.sum(-1).clamp(min=1)


class _FineTuner(abc.ABC):
    """Shared bookkeeping: frozen pretrained copy, trainable student, counted oracle,
    Adam with gradient clipping, epoch loop under an epoch or reward-query budget. A subclass
    gives the reward queries one epoch spends and the epoch itself."""

    def __init__(
        self,
        pretrained: MaskedDiffusionLM,
        reward_fn: Callable | RewardOracle,
        *,
        alpha: float = 1.0,
        lr: float = 1e-4,
        batch_size: int = 32,
        steps: int = 16,
        grad_clip: float = 1.0,
        reward_norm: str = "normal",
        seed: int = 0,
    ) -> None:
        _check_model(pretrained)
        self.alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True, allow_inf=True)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.batch_size = V.check_int(batch_size, "batch_size", low=2)
        self.steps = V.check_int(steps, "steps", low=1)
        self.grad_clip = V.check_scalar(grad_clip, "grad_clip", low=0.0, low_open=True)
        self.reward_norm = V.check_choice(reward_norm, "reward_norm", ("normal", "pos", "none"))
        self.seed = V.check_int(seed, "seed", low=0)
        self.oracle = reward_fn if isinstance(reward_fn, RewardOracle) else RewardOracle(reward_fn)
        self.pretrained = copy.deepcopy(pretrained).eval().requires_grad_(False)
        self.model = copy.deepcopy(pretrained).train()
        self.model.forward_sequences = 0
        self.opt = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.epoch = 0
        self.history: list[dict[str, float]] = []
        grid = self.model.time_grid(self.steps)
        self._t = torch.tensor(grid[:-1], dtype=torch.float32)
        self._s = torch.tensor(grid[1:], dtype=torch.float32)

    @property
    def queries(self) -> int:
        """Reward-oracle queries spent so far (sequences scored)."""
        return self.oracle.queries

    @property
    @abc.abstractmethod
    def queries_per_epoch(self) -> int:
        """Reward-oracle queries one call of :meth:`_epoch` spends (the budget check)."""

    @abc.abstractmethod
    def _epoch(self) -> dict[str, float]:
        """One epoch of the method: spend ``queries_per_epoch`` queries, take its gradient
        steps and return its statistics."""

    def _step(self, loss: torch.Tensor) -> None:
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.opt.step()

    def _rollout(self, model: MaskedDiffusionLM) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch_size`` trajectories: final x0 (B, L) and states (steps, B, L) at t_k."""
        x0, traj = model.sample(self.batch_size, self.steps, self.gen, return_trajectory=True)
        return x0, traj[:-1]

    def fit(
        self,
        epochs: int | None = None,
        budget: int | None = None,
        callback: Callable[[Any], Any] | None = None,
    ):
        """Run epochs until ``epochs`` more epochs are done or the next epoch would exceed
        ``budget`` total reward queries (at least one of the two is required).
        ``callback(self)`` runs after every epoch."""
        epochs = V.check_int(epochs, "epochs", low=1, allow_none=True)
        budget = V.check_int(budget, "budget", low=1, allow_none=True)
        if epochs is None and budget is None:
            raise ValueError("epochs or budget must be given")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable")
        done = 0
        while epochs is None or done < epochs:
            if budget is not None and self.queries + self.queries_per_epoch > budget:
                break
            self.model.train()
            stats = self._epoch()
            self.epoch += 1
            done += 1
            stats.update(epoch=self.epoch, queries=self.queries)
            self.history.append(stats)
            if callback is not None:
                callback(self)
        self.model.eval()
        return self

    def sample(self, n: int, steps: int | None = None) -> torch.Tensor:
        """Samples of the fine-tuned model (no reward queries)."""
        return self.model.sample(n, self.steps if steps is None else steps, self.gen)


class VIDDTrainer(_FineTuner):
    """Value-guided iterative distillation (see the module docstring)."""

    def __init__(
        self,
        pretrained: MaskedDiffusionLM,
        reward_fn: Callable | RewardOracle,
        alpha: float = 1.0,
        rollin_student_prob: float = 1.0,
        teacher_update_interval: int | None = 5,
        use_value_xt: bool = True,
        reward_norm: str = "normal",
        lr: float = 1e-4,
        batch_size: int = 32,
        steps: int = 16,
        batches_per_epoch: int = 1,
        weight_clip_quantile: float | None = 0.99,
        grad_clip: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            pretrained, reward_fn, alpha=alpha, lr=lr, batch_size=batch_size, steps=steps,
            grad_clip=grad_clip, reward_norm=reward_norm, seed=seed,
        )  # fmt: skip
        self.rollin_student_prob = V.check_probability(rollin_student_prob, "rollin_student_prob")
        self.teacher_update_interval = V.check_int(
            teacher_update_interval, "teacher_update_interval", low=1, allow_none=True
        )
        self.use_value_xt = V.check_bool(use_value_xt, "use_value_xt")
        self.batches_per_epoch = V.check_int(batches_per_epoch, "batches_per_epoch", low=1)
        if weight_clip_quantile is not None:
            V.check_probability(weight_clip_quantile, "weight_clip_quantile", open_low=True)
        self.weight_clip_quantile = weight_clip_quantile
        self.teacher = copy.deepcopy(self.pretrained)
        self.teacher_refresh_epochs: list[int] = []

    @property
    def queries_per_epoch(self) -> int:
        per_state = 2 if self.use_value_xt else 1
        return self.batches_per_epoch * self.batch_size * self.steps * per_state

    def _value(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised soft value per step row: ``r(x_hat0_pre(x))`` for x of (steps, B, L)."""
        flat = x.reshape(-1, x.shape[-1])
        r = self.oracle(self.pretrained.denoise_argmax(flat)).reshape(x.shape[0], x.shape[1])
        return normalise_rewards(r, self.reward_norm)

    def _batch(self) -> dict[str, float]:
        roll_student = self.rng.random() < self.rollin_student_prob
        with torch.no_grad():
            _, states = self._rollout(self.model if roll_student else self.pretrained)
            S, B, L = states.shape
            x_t = states.reshape(S * B, L)
            t = self._t.repeat_interleave(B).to(x_t.device)
            s = self._s.repeat_interleave(B).to(x_t.device)
            x_s = self.teacher.reverse_step(x_t, t, s, self.gen, logp_x0=self.teacher(x_t))
            v_s = self._value(x_s.view(S, B, L))
            v_t = self._value(states) if self.use_value_xt else None
            w = soft_value_weights(v_s, self.alpha, v_t, self.weight_clip_quantile)
            w = w.reshape(-1).float().to(x_t.device)
        logp = self.model(x_t)
        new = (x_t == self.model.mask_index) & (x_s != self.model.mask_index)
        picked = logp.gather(-1, x_s.clamp(max=self.model.vocab - 1).unsqueeze(-1)).squeeze(-1)
        loss = -(w * (picked * new).sum(-1)).mean()
        self._step(loss)
        return {
            "loss": float(loss.detach()),
            "weight_mean": float(w.mean()),
            "student_rollin": roll_student,
        }

    def _epoch(self) -> dict[str, float]:
        stats = [self._batch() for _ in range(self.batches_per_epoch)]
        if self.teacher_update_interval is not None and (
            (self.epoch + 1) % self.teacher_update_interval == 0
        ):
            self.teacher.load_state_dict(self.model.state_dict())
            self.teacher_refresh_epochs.append(self.epoch + 1)
        return {k: float(np.mean([st[k] for st in stats])) for k in stats[0]}


class StandardFTTrainer(VIDDTrainer):
    """Standard fine-tuning: the same value-weighted distillation loss, but roll-in from the
    pretrained model (lambda = 0) and a frozen teacher (the pretrained model, never refreshed)."""

    def __init__(self, pretrained, reward_fn, alpha: float = 1.0, **kwargs: Any) -> None:
        for fixed in ("rollin_student_prob", "teacher_update_interval"):
            if fixed in kwargs:
                raise TypeError(f"{fixed} is fixed in StandardFTTrainer")
        super().__init__(
            pretrained, reward_fn, alpha, rollin_student_prob=0.0,
            teacher_update_interval=None, **kwargs,
        )  # fmt: skip


class DDPOTrainer(_FineTuner):
    """DDPO-style on-policy RL: trajectories from the current policy, normalised advantages of
    ``r(x0)``, PPO-clip on the per-state log-probability of the final sample,
    ``mean_{masked i} log p_theta(x0_i | x_t)``, against the sampling policy; ``ppo_epochs``
    gradient steps per batch."""

    def __init__(
        self,
        pretrained: MaskedDiffusionLM,
        reward_fn: Callable | RewardOracle,
        clip: float = 0.2,
        ppo_epochs: int = 2,
        adv_norm: bool = True,
        alpha: float = 1.0,
        lr: float = 1e-4,
        batch_size: int = 32,
        steps: int = 16,
        grad_clip: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            pretrained, reward_fn, alpha=alpha, lr=lr, batch_size=batch_size, steps=steps,
            grad_clip=grad_clip, seed=seed,
        )  # fmt: skip
        self.clip = V.check_scalar(clip, "clip", low=0.0, high=1.0, low_open=True)
        self.ppo_epochs = V.check_int(ppo_epochs, "ppo_epochs", low=1)
        self.adv_norm = V.check_bool(adv_norm, "adv_norm")

    @property
    def queries_per_epoch(self) -> int:
        return self.batch_size

    def _epoch(self) -> dict[str, float]:
        with torch.no_grad():
            x0, states = self._rollout(self.model)
            r = torch.as_tensor(self.oracle(x0), dtype=torch.float32, device=x0.device)
            adv = normalise_rewards(r).float().to(x0.device) if self.adv_norm else r / self.alpha
            S, B, L = states.shape
            x_t = states.reshape(S * B, L)
            target = x0.repeat(S, 1)
            masked = x_t == self.model.mask_index
            old = _masked_mean_logp(self.model(x_t), target, masked)
            adv = adv.repeat(S)
        losses = []
        for _ in range(self.ppo_epochs):
            new = _masked_mean_logp(self.model(x_t), target, masked)
            ratio = torch.exp(new - old)
            clipped = ratio.clamp(1 - self.clip, 1 + self.clip)
            loss = torch.maximum(-adv * ratio, -adv * clipped).mean()
            self._step(loss)
            losses.append(float(loss.detach()))
        return {"loss": float(np.mean(losses)), "reward_mean": float(r.mean())}


class RWMLETrainer(_FineTuner):
    """Reward-weighted MLE on final samples of the current model: weights
    ``exp(normalised r(x0)/alpha)``, loss ``-w * mean_{masked i} log p_theta(x0_i|x_t)`` over the
    sample's own trajectory states."""

    @property
    def queries_per_epoch(self) -> int:
        return self.batch_size

    def _epoch(self) -> dict[str, float]:
        with torch.no_grad():
            x0, states = self._rollout(self.model)
            r = self.oracle(x0)
            w = torch.exp(normalise_rewards(r, self.reward_norm) / self.alpha).float()
            w = w.to(x0.device)
            S, B, L = states.shape
            x_t = states.reshape(S * B, L)
            target = x0.repeat(S, 1)
            masked = x_t == self.model.mask_index
            w = w.repeat(S)
        loss = -(w * _masked_mean_logp(self.model(x_t), target, masked)).mean()
        self._step(loss)
        return {"loss": float(loss.detach()), "reward_mean": float(np.mean(r))}


class BestOfN:
    """Best-of-N sampling from the pretrained model: each returned sample is the highest-reward
    of ``n`` pretrained samples, costing ``n`` reward queries."""

    def __init__(
        self,
        pretrained: MaskedDiffusionLM,
        reward_fn: Callable | RewardOracle,
        n: int = 32,
        steps: int = 16,
        seed: int = 0,
    ) -> None:
        self.pretrained = _check_model(pretrained)
        self.n = V.check_int(n, "n", low=1)
        self.steps = V.check_int(steps, "steps", low=1)
        self.oracle = reward_fn if isinstance(reward_fn, RewardOracle) else RewardOracle(reward_fn)
        self.gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))

    @property
    def queries(self) -> int:
        return self.oracle.queries

    def sample(self, num: int) -> torch.Tensor:
        num = V.check_int(num, "num", low=1)
        x = self.pretrained.sample(num * self.n, self.steps, self.gen)
        r = torch.as_tensor(self.oracle(x)).view(num, self.n)
        best = r.argmax(1)
        return x.view(num, self.n, -1)[torch.arange(num, device=x.device), best.to(x.device)].cpu()
