"""VIDD (value-guided iterative distillation) and the baselines it is compared with.

VIDD fine-tunes a masked diffusion model toward ``p*(x0) ∝ p_pre(x0) exp(r(x0)/alpha)`` by
distilling the soft-optimal denoising policy ``p*(x_s|x_t) ∝ p_old(x_s|x_t) exp(v(x_s)/alpha)``
into the student: roll in states ``x_t`` from the student (probability ``rollin_student_prob``)
or the pretrained model, draw ``x_s`` from a lagged teacher ``theta_old``, weight it by the soft
value ``exp(v(x_s)/alpha)`` (optionally divided by ``exp(v(x_t)/alpha)``) with
``v(x) = r(x_hat0_pre(x))`` and minimise the forward KL, i.e. ``-w * log p_theta(x_s|x_t)``
summed over newly unmasked positions. The teacher is refreshed every
``teacher_update_interval`` epochs. Every trainer counts its reward-oracle queries.

The baseline DDPP (discrete denoising posterior prediction, Rector-Brooks et al. 2024) is the
single-step DDPP-LB variant: the student's mean-field denoiser ``q_theta(x0|x_t)`` regresses onto
the reward-tilted posterior ``p_pre(x0|x_t) exp(r(x0)/alpha) / Z(x_t)`` (their Eq. 11) with a
learned ``log Z_phi(x_t)``, on forward-masked replays of on-policy samples.
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
    "DDPPTrainer",
    "LogPartitionNet",
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


def _masked_sum_logp(logp: torch.Tensor, x0: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Mean-field ``log q(x0 | x_t) = sum over masked positions of log q(x0_i | x_t)``."""
    return (logp.gather(-1, x0.unsqueeze(-1)).squeeze(-1) * masked).sum(-1)


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


class LogPartitionNet(nn.Module):
    """Amortised log partition function ``log Z_phi(x_t)`` of DDPP-LB, one number per partially
    masked sequence: token and position embeddings, a residual local convolution, one
    bidirectional transformer block, mean pooling, then a linear head on the pooled features
    and the masked fraction. The head starts at zero, so ``log Z`` starts at 0."""

    def __init__(
        self, vocab: int, length: int, d: int = 32, heads: int = 4, seed: int | None = 0
    ) -> None:
        super().__init__()
        self.vocab = V.check_int(vocab, "vocab", low=2)
        self.length = V.check_int(length, "length", low=1)
        self.d = V.check_int(d, "d", low=1)
        heads = V.check_int(heads, "heads", low=1)
        if self.d % heads:
            raise ValueError(f"d must be divisible by heads, got d={self.d}, heads={heads}")
        seed = V.check_int(seed, "seed", low=0, allow_none=True)
        if seed is not None:
            torch.manual_seed(seed)
        self.mask_index = self.vocab
        self.embed = nn.Embedding(self.vocab + 1, self.d)
        self.pos = nn.Parameter(torch.randn(1, self.length, self.d) * 0.02)
        self.local = nn.Conv1d(self.d, self.d, kernel_size=5, padding=2)
        self.block = nn.TransformerEncoderLayer(
            self.d, heads, 2 * self.d, 0.0, batch_first=True, norm_first=True
        )
        self.norm = nn.LayerNorm(self.d)
        self.head = nn.Linear(self.d + 1, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x_t: torch.Tensor) -> torch.Tensor:
        h = self.embed(x_t) + self.pos
        h = h + torch.relu(self.local(h.transpose(1, 2))).transpose(1, 2)
        h = self.norm(self.block(h)).mean(1)
        frac = (x_t == self.mask_index).float().mean(1, keepdim=True)
        return self.head(torch.cat([h, frac], dim=-1)).squeeze(-1)


class DDPPTrainer(_FineTuner):
    """DDPP-LB (single-step discrete denoising posterior prediction with a learned log
    partition function), Rector-Brooks et al. 2024, Eq. 11 and Algorithm 1. Each epoch draws
    ``batch_size`` on-policy samples ``x0`` from the student, scores them once (``batch_size``
    reward queries) and stores them with their rewards in a FIFO replay buffer of
    ``buffer_size``; each of ``updates_per_epoch`` gradient steps then takes ``batch_size``
    buffer entries, masks each one at ``masks_per_sample`` stratified noise levels
    ``x_t ~ p_t(x_t|x0)`` and minimises the squared residual

        log q_theta(x0|x_t) - log p_pre(x0|x_t) - r(x0)/alpha + log Z_phi(x_t),

    where both log-probabilities are mean-field sums over the masked positions of ``x_t``.
    ``theta`` and ``phi`` (``log_z``, a :class:`LogPartitionNet` by default, its own Adam
    with ``log_z_lr``) are trained jointly; during the first ``log_z_warmup`` epochs only
    ``phi`` is (the paper's warm-up). The target ``p_pre(x0) exp(r(x0)/alpha)`` uses the raw
    reward: a per-batch normalisation would change the target from batch to batch."""

    def __init__(
        self,
        pretrained: MaskedDiffusionLM,
        reward_fn: Callable | RewardOracle,
        alpha: float = 1.0,
        log_z: nn.Module | None = None,
        log_z_lr: float = 1e-3,
        log_z_warmup: int = 0,
        masks_per_sample: int = 1,
        updates_per_epoch: int = 1,
        buffer_size: int = 1024,
        lr: float = 1e-4,
        batch_size: int = 32,
        steps: int = 16,
        grad_clip: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            pretrained, reward_fn, alpha=alpha, lr=lr, batch_size=batch_size, steps=steps,
            grad_clip=grad_clip, reward_norm="none", seed=seed,
        )  # fmt: skip
        if log_z is not None and not isinstance(log_z, nn.Module):
            raise TypeError(f"log_z must be an nn.Module, got {type(log_z).__name__}")
        self.log_z_lr = V.check_scalar(log_z_lr, "log_z_lr", low=0.0, low_open=True)
        self.log_z_warmup = V.check_int(log_z_warmup, "log_z_warmup", low=0)
        self.masks_per_sample = V.check_int(masks_per_sample, "masks_per_sample", low=1)
        self.updates_per_epoch = V.check_int(updates_per_epoch, "updates_per_epoch", low=1)
        self.buffer_size = V.check_int(buffer_size, "buffer_size", low=self.batch_size)
        device = self.model.pos.device
        if log_z is None:
            log_z = LogPartitionNet(pretrained.vocab, pretrained.length, seed=self.seed)
        self.log_z = log_z.to(device).train()
        self.log_z_opt = torch.optim.Adam(self.log_z.parameters(), lr=self.log_z_lr)
        self._buffer_x = torch.empty(0, pretrained.length, dtype=torch.long, device=device)
        self._buffer_r = torch.empty(0, dtype=torch.float64, device=device)

    @property
    def queries_per_epoch(self) -> int:
        return self.batch_size

    def residual(self, x0: torch.Tensor, x_t: torch.Tensor, reward: torch.Tensor) -> torch.Tensor:
        """The DDPP residual per row (Eq. 11), with gradients to the student and ``log_z``:
        ``log q_theta(x0|x_t) - log p_pre(x0|x_t) - reward/alpha + log Z_phi(x_t)``. ``x0`` (n, L)
        clean tokens, ``x_t`` (n, L) the same sequences partially masked, ``reward`` (n,)."""
        mask = self.model.mask_index
        x0 = V.check_tensor(x0, "x0", ndim=2, shape=(None, self.model.length), integer=True)
        V.check_tensor(x0, "x0", low=0, high=self.model.vocab - 1)
        x_t = V.check_tensor(x_t, "x_t", ndim=2, shape=tuple(x0.shape), integer=True)
        if ((x_t != mask) & (x_t != x0)).any():
            raise ValueError("x_t must equal x0 wherever it is not masked")
        reward = V.check_tensor(reward, "reward", ndim=1, shape=(x0.shape[0],))
        masked = x_t == mask
        logq = _masked_sum_logp(self.model(x_t), x0, masked)
        with torch.no_grad():
            logp = _masked_sum_logp(self.pretrained(x_t), x0, masked)
        return logq - logp - reward.to(logq) / self.alpha + self.log_z(x_t)

    def _add_to_buffer(self, x0: torch.Tensor, r: torch.Tensor) -> None:
        self._buffer_x = torch.cat([self._buffer_x, x0])[-self.buffer_size :]
        self._buffer_r = torch.cat([self._buffer_r, r])[-self.buffer_size :]

    def _noised_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch_size`` buffer entries, each masked at ``masks_per_sample`` stratified noise
        levels ``t = (k + u)/K``."""
        idx = torch.randint(0, self._buffer_x.shape[0], (self.batch_size,), generator=self.gen)
        idx = idx.to(self._buffer_x.device)
        K, B = self.masks_per_sample, self.batch_size
        x0 = self._buffer_x[idx].repeat(K, 1)
        r = self._buffer_r[idx].repeat(K)
        u = torch.rand(B * K, generator=self.gen)
        t = (torch.arange(K).repeat_interleave(B) + u) / K
        return x0, self.model.add_noise(x0, t, self.gen), r

    def _epoch(self) -> dict[str, float]:
        with torch.no_grad():
            x0 = self.model.sample(self.batch_size, self.steps, self.gen)
            r = torch.as_tensor(self.oracle(x0), dtype=torch.float64, device=x0.device)
        self._add_to_buffer(x0, r)
        warm = self.epoch < self.log_z_warmup
        losses, log_z = [], []
        for _ in range(self.updates_per_epoch):
            xb, x_t, rb = self._noised_batch()
            res = self.residual(xb, x_t, rb)
            loss = res.pow(2).mean()
            self.opt.zero_grad(set_to_none=True)
            self.log_z_opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.log_z.parameters(), self.grad_clip)
            self.log_z_opt.step()
            if not warm:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
                self.opt.step()
            losses.append(float(loss.detach()))
            with torch.no_grad():
                log_z.append(float(self.log_z(x_t[: self.batch_size]).mean()))
        return {
            "loss": float(np.mean(losses)),
            "reward_mean": float(r.mean()),
            "log_z_mean": float(np.mean(log_z)),
            "log_z_warmup": float(warm),
        }


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
