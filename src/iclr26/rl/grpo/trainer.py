"""A framework-agnostic GRPO trainer (DeepSeekMath's group-relative PPO without a critic).

One :meth:`GRPOTrainer.step`: sample ``group_size`` completions per prompt with the
``generate(prompts, n)`` callable, score them with ``reward_fn``, turn the rewards into
group-normalised advantages (``advantage_fn``), let ``batch_selector`` pick the rows to train on
(identity by default; ReVisual-R1's PAD re-samples by advantage), then minimise

    L = policy_loss(clipped surrogate, dual clip) + kl_coef * mean k3(pi || pi_ref)
        - entropy_coef_t * mean entropy

averaged over the valid tokens of each minibatch, with AdamW and gradient-norm clipping.
Defaults follow the EasyR1/veRL configuration released with ReVisual-R1.

Interfaces (all plain callables, so any policy that returns ``.logits`` works):

- ``generate(prompts, n) -> Rollouts`` (:class:`~iclr26.rl.grpo.rollout.HFGenerator` for a
  Hugging Face LM); if it accepts ``generator=``, the trainer passes its seeded
  ``torch.Generator`` so a run is reproducible and resumes exactly.
- ``reward_fn(prompts, completions, **columns) -> sequence of N floats`` where ``prompts`` and
  every column are repeated ``group_size`` times (TRL's reward-function convention).
- ``advantage_fn(rewards [N], group_size) -> advantages [N]`` (default :func:`grpo_advantages`).
- ``batch_selector(token_advantages [N, T], response_mask [N, T], generator) ->
  (indices, info)``; indices may repeat.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from iclr26 import validation as V
from iclr26.rl.grpo.advantages import check_group_size, check_rewards, grpo_advantages
from iclr26.rl.grpo.losses import k3_kl, masked_mean, policy_loss
from iclr26.rl.grpo.rollout import Rollouts, token_logprobs


@dataclass
class GRPOConfig:
    """Hyperparameters of :class:`GRPOTrainer` (validated on construction).

    Defaults are the released ReVisual-R1/EasyR1 values: G = 8, AdamW lr 1e-6 with weight
    decay 1e-2, clip range [1 - 0.2, 1 + 0.25], dual clip 3, k3 KL loss with coefficient 1e-2,
    gradient norm clipped to 1, entropy bonus 0.02 decayed x0.985 per update after 20 updates.
    """

    group_size: int = 8
    lr: float = 1e-6
    weight_decay: float = 1e-2
    betas: tuple[float, float] = (0.9, 0.999)
    clip_low: float = 0.2
    clip_high: float = 0.25
    dual_clip: float | None = 3.0
    kl_coef: float = 1e-2
    kl_clamp: float = 10.0
    entropy_coef: float = 0.02
    entropy_decay: float = 0.985
    entropy_warmup: int = 20
    entropy_floor: float = 0.0
    max_grad_norm: float | None = 1.0
    ppo_epochs: int = 1
    minibatches: int = 1
    adv_eps: float = 1e-6
    normalize_std: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        check_group_size(self.group_size)
        V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        V.check_scalar(self.weight_decay, "weight_decay", low=0.0)
        if not isinstance(self.betas, Sequence) or len(self.betas) != 2:
            raise ValueError(f"betas must be a pair of numbers, got {self.betas!r}")
        for b in self.betas:
            V.check_scalar(b, "betas", low=0.0, high=1.0, high_open=True)
        self.betas = (float(self.betas[0]), float(self.betas[1]))
        V.check_scalar(self.clip_low, "clip_low", low=0.0, high=1.0, high_open=True)
        V.check_scalar(self.clip_high, "clip_high", low=0.0)
        V.check_scalar(self.dual_clip, "dual_clip", low=1.0, low_open=True, allow_none=True)
        V.check_scalar(self.kl_coef, "kl_coef", low=0.0)
        V.check_scalar(self.kl_clamp, "kl_clamp", low=0.0, low_open=True)
        V.check_scalar(self.entropy_coef, "entropy_coef", low=0.0)
        V.check_scalar(self.entropy_decay, "entropy_decay", low=0.0, high=1.0)
        V.check_int(self.entropy_warmup, "entropy_warmup", low=0)
        V.check_scalar(self.entropy_floor, "entropy_floor", low=0.0)
        V.check_scalar(self.max_grad_norm, "max_grad_norm", low=0.0, low_open=True, allow_none=True)
        V.check_int(self.ppo_epochs, "ppo_epochs", low=1)
        V.check_int(self.minibatches, "minibatches", low=1)
        V.check_scalar(self.adv_eps, "adv_eps", low=0.0, low_open=True)
        V.check_bool(self.normalize_std, "normalize_std")
        V.check_int(self.seed, "seed", low=0)

    def entropy_coef_at(self, update: int) -> float:
        """Entropy coefficient of update ``update`` (0-based): constant for ``entropy_warmup``
        updates, then multiplied by ``entropy_decay`` per update, never below the floor."""
        decays = max(0, int(update) - self.entropy_warmup)
        return max(self.entropy_floor, self.entropy_coef * self.entropy_decay**decays)


def identity_selector(token_advantages: torch.Tensor, response_mask: torch.Tensor, generator=None):
    """The vanilla batch: every row once."""
    V.check_tensor(token_advantages, "token_advantages", ndim=2, floating=True)
    n = token_advantages.shape[0]
    return torch.arange(n), {"selected": n, "effective": n}


def _accepts(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _repeat(values: Sequence[Any], g: int) -> list[Any]:
    return [v for v in values for _ in range(g)]


def policy_update(
    policy: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rollouts: Rollouts,
    advantages: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    config: GRPOConfig,
    entropy_coef: float = 0.0,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """``ppo_epochs`` passes over ``minibatches`` shuffled chunks of ``rollouts`` (rows already
    selected; duplicates allowed), one optimizer step per chunk. Returns mean diagnostics.

    ``old_logp=None`` takes the update's own log-probabilities, detached, as the old ones
    (ratio exactly 1, as TRL does with one iteration per batch): allowed only when the update
    is a single optimizer step (``ppo_epochs == 1`` and ``minibatches == 1``), where the
    parameters that sampled the old values are the ones being updated."""
    for name, value, kind in (
        ("policy", policy, torch.nn.Module),
        ("optimizer", optimizer, torch.optim.Optimizer),
        ("rollouts", rollouts, Rollouts),
        ("config", config, GRPOConfig),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    n = len(rollouts)
    width = tuple(rollouts.response_mask.shape)
    V.check_tensor(advantages, "advantages", shape=(n,), floating=True)
    if old_logp is None:
        if config.ppo_epochs != 1 or config.minibatches != 1:
            raise ValueError(
                "old_logp may be None only for a single optimizer step (ppo_epochs == 1 and "
                f"minibatches == 1), got ppo_epochs={config.ppo_epochs}, "
                f"minibatches={config.minibatches}"
            )
    else:
        V.check_tensor(old_logp, "old_logp", shape=width, floating=True)
    if ref_logp is not None:
        V.check_tensor(ref_logp, "ref_logp", shape=width, floating=True)
    entropy_coef = V.check_scalar(entropy_coef, "entropy_coef", low=0.0)
    policy.train()
    params = [p for p in policy.parameters() if p.requires_grad]
    totals: dict[str, float] = {}
    count = 0
    for _ in range(config.ppo_epochs):
        order = (
            torch.randperm(n, generator=generator) if config.minibatches > 1 else torch.arange(n)
        )
        for chunk in order.chunk(min(config.minibatches, n)):
            mb = rollouts.select(chunk)
            mask = mb.response_mask.float()
            logp, entropy = token_logprobs(policy, mb, with_entropy=entropy_coef > 0)
            chunk = chunk.to(logp.device)
            loss, stats = policy_loss(
                logp,
                logp.detach() if old_logp is None else old_logp[chunk],
                advantages[chunk],
                mask,
                config.clip_low,
                config.clip_high,
                config.dual_clip,
            )
            stats["pg_loss"] = float(loss.detach())
            if ref_logp is not None and config.kl_coef > 0:
                kl = masked_mean(k3_kl(logp, ref_logp[chunk], config.kl_clamp), mask)
                loss = loss + config.kl_coef * kl
                stats["kl_ref"] = float(kl.detach())
            if entropy is not None:
                ent = masked_mean(entropy, mask)
                loss = loss - entropy_coef * ent
                stats["entropy"] = float(ent.detach())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.max_grad_norm is not None:
                norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                stats["grad_norm"] = float(norm)
            optimizer.step()
            stats["loss"] = float(loss.detach())
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + v
            count += 1
    return {k: v / max(count, 1) for k, v in totals.items()}


class GRPOTrainer:
    """GRPO over any torch policy (see the module docstring for the callables it takes).

    ``ref_policy`` defaults to a frozen copy of ``policy`` at construction when
    ``config.kl_coef > 0``; ``optimizer`` defaults to AdamW with the config's settings.
    :meth:`state_dict` / :meth:`load_state_dict` hold the policy, reference, optimizer, update
    counter and sampling RNG, so a resumed run continues bit for bit. After each step,
    ``last`` holds that step's ``rewards``, ``advantages`` (per completion) and the ``index``
    of the rows trained on."""

    def __init__(
        self,
        policy: torch.nn.Module,
        reward_fn: Callable[..., Sequence[float]],
        generate: Callable[..., Rollouts],
        config: GRPOConfig | None = None,
        ref_policy: torch.nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        advantage_fn: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
        batch_selector: Callable[..., tuple[torch.Tensor, dict]] | None = None,
    ):
        if not isinstance(policy, torch.nn.Module):
            raise TypeError(f"policy must be a torch.nn.Module, got {type(policy).__name__}")
        for name, fn in (("reward_fn", reward_fn), ("generate", generate)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        for name, fn in (("advantage_fn", advantage_fn), ("batch_selector", batch_selector)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")
        if config is None:
            config = GRPOConfig()
        if not isinstance(config, GRPOConfig):
            raise TypeError(f"config must be a GRPOConfig, got {type(config).__name__}")
        if ref_policy is not None and not isinstance(ref_policy, torch.nn.Module):
            raise TypeError("ref_policy must be a torch.nn.Module or None")
        self.policy, self.reward_fn, self.generate, self.config = (
            policy,
            reward_fn,
            generate,
            config,
        )
        if ref_policy is None and config.kl_coef > 0:
            ref_policy = copy.deepcopy(policy)
        if ref_policy is not None:
            ref_policy.eval()
            for p in ref_policy.parameters():
                p.requires_grad_(False)
        self.ref_policy = ref_policy
        self.optimizer = optimizer or torch.optim.AdamW(
            [p for p in policy.parameters() if p.requires_grad],
            lr=config.lr,
            betas=config.betas,
            weight_decay=config.weight_decay,
        )
        self.advantage_fn = advantage_fn or (
            lambda r, g: grpo_advantages(r, g, config.adv_eps, config.normalize_std)
        )
        self.batch_selector = batch_selector or identity_selector
        self.generator = torch.Generator().manual_seed(config.seed)
        self._generate_takes_rng = _accepts(generate, "generator")
        self.updates = 0
        self.history: list[dict[str, float]] = []
        self.last: dict[str, torch.Tensor] = {}

    # ------------------------------------------------------------------ one update
    def rollout(self, prompts: Sequence[Any]) -> Rollouts:
        g = self.config.group_size
        if self._generate_takes_rng:
            rollouts = self.generate(prompts, g, generator=self.generator)
        else:
            rollouts = self.generate(prompts, g)
        if not isinstance(rollouts, Rollouts):
            raise TypeError(f"generate must return Rollouts, got {type(rollouts).__name__}")
        if len(rollouts) != len(prompts) * g:
            raise ValueError(
                f"generate returned {len(rollouts)} rows for {len(prompts)} prompts x {g}"
            )
        return rollouts

    def score(self, prompts: Sequence[Any], rollouts: Rollouts, **columns) -> torch.Tensor:
        g = self.config.group_size
        reps = {k: _repeat(v, g) for k, v in columns.items()}
        raw = self.reward_fn(_repeat(prompts, g), list(rollouts.completions), **reps)
        return check_rewards(
            torch.as_tensor(
                V.check_array(raw, "rewards", ndim=1, n_rows=len(rollouts)), dtype=torch.float32
            )
        )

    def step(self, prompts: Sequence[Any], **columns: Sequence[Any]) -> dict[str, float]:
        """One GRPO update on ``prompts`` (``columns`` are per-prompt extras for ``reward_fn``,
        e.g. ``answer=[...]``). Returns the update's diagnostics."""
        if isinstance(prompts, str) or not isinstance(prompts, Sequence) or len(prompts) == 0:
            raise ValueError("prompts must be a non-empty sequence")
        for k, v in columns.items():
            if len(v) != len(prompts):
                raise ValueError(f"{k} must have one entry per prompt ({len(prompts)})")
        g = self.config.group_size
        rollouts = self.rollout(prompts)
        rewards = self.score(prompts, rollouts, **columns)
        adv = torch.as_tensor(self.advantage_fn(rewards, g), dtype=torch.float32)
        if adv.dim() != 1 or adv.shape[0] != len(rollouts):
            # a single value would broadcast over the batch without an error
            raise ValueError(
                f"advantage_fn must return one advantage per completion ({len(rollouts)}), "
                f"got shape {tuple(adv.shape)}"
            )
        V.check_tensor(adv, "advantages (from advantage_fn)", ndim=1)
        mask = rollouts.response_mask.float()
        # one optimizer step per batch: the update's own log-probabilities are the old ones
        single_step = self.config.ppo_epochs == 1 and self.config.minibatches == 1
        with torch.no_grad():
            old_logp = None if single_step else token_logprobs(self.policy, rollouts)[0]
            ref_logp = None
            if self.ref_policy is not None and self.config.kl_coef > 0:
                ref_logp, _ = token_logprobs(self.ref_policy, rollouts)
        adv = adv.to(mask.device)
        index, info = self.batch_selector(adv[:, None] * mask, mask, self.generator)
        index = torch.as_tensor(index, dtype=torch.long).to(mask.device)
        if index.numel() == 0:
            raise ValueError("batch_selector returned no rows")
        if int(index.min()) < 0 or int(index.max()) >= len(rollouts):
            raise ValueError("batch_selector returned an index outside the batch")
        chosen = rollouts.select(index)
        stats = policy_update(
            self.policy,
            self.optimizer,
            chosen,
            adv[index],
            None if old_logp is None else old_logp[index],
            None if ref_logp is None else ref_logp[index],
            self.config,
            self.config.entropy_coef_at(self.updates),
            self.generator,
        )
        grouped = rewards.reshape(-1, g)
        stats.update(
            reward_mean=float(rewards.mean()),
            reward_std=float(rewards.std()) if rewards.numel() > 1 else 0.0,
            zero_adv_frac=float((adv.abs() <= 1e-8).float().mean()),
            degenerate_group_frac=float(
                (grouped.max(1).values == grouped.min(1).values).float().mean()
            ),
            rollout_tokens=float(rollouts.n_response_tokens),
            train_rows=float(index.numel()),
            train_tokens=float(chosen.n_response_tokens),
            **{f"select_{k}": float(v) for k, v in info.items() if isinstance(v, int | float)},
        )
        self.last = {"rewards": rewards, "advantages": adv.detach().cpu(), "index": index.cpu()}
        self.updates += 1
        self.history.append(stats)
        return stats

    # ------------------------------------------------------------------ checkpointing
    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": copy.deepcopy(self.policy.state_dict()),
            "ref_policy": None
            if self.ref_policy is None
            else copy.deepcopy(self.ref_policy.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "generator": self.generator.get_state(),
            "updates": self.updates,
            "config": asdict(self.config),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        missing = {"policy", "optimizer", "generator", "updates"} - set(state)
        if missing:
            raise ValueError(f"state is missing {sorted(missing)}")
        self.policy.load_state_dict(state["policy"])
        if state.get("ref_policy") is not None and self.ref_policy is not None:
            self.ref_policy.load_state_dict(state["ref_policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.updates = int(state["updates"])


def grpo_step(
    policy: torch.nn.Module,
    ref: torch.nn.Module | None,
    prompts: Sequence[Any],
    reward_fn: Callable[..., Sequence[float]],
    generate: Callable[..., Rollouts],
    optimizer: torch.optim.Optimizer,
    group_size: int = 8,
    clip_eps: float = 0.2,
    kl_coef: float = 0.0,
    generator: torch.Generator | None = None,
    **columns: Sequence[Any],
) -> dict[str, float]:
    """A minimal on-policy GRPO update with a caller-owned optimizer (symmetric clip range,
    no dual clip, no entropy bonus): sample, score, normalise within groups, one step."""
    if not callable(generate):
        raise TypeError(
            "generate must be a callable generate(prompts, n) -> Rollouts (for a Hugging Face "
            f"LM: HFGenerator(policy, tokenizer)), got {type(generate).__name__}"
        )
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if kl_coef is not None and V.check_scalar(kl_coef, "kl_coef", low=0.0) > 0 and ref is None:
        raise ValueError("ref must be given when kl_coef > 0")
    cfg = GRPOConfig(
        group_size=group_size,
        clip_low=clip_eps,
        clip_high=clip_eps,
        dual_clip=None,
        kl_coef=kl_coef,
        entropy_coef=0.0,
    )
    trainer = GRPOTrainer(policy, reward_fn, generate, cfg, ref_policy=ref, optimizer=optimizer)
    if generator is not None:
        trainer.generator = generator
    return trainer.step(prompts, **columns)
