"""Tabular Q-learning with any step-size schedule, vectorised over replications and copies.

Synchronous (generative-model) updates refresh every (s, a) each step:
Q_{t+1}(s,a) = Q_t(s,a) + eta_t [r_t(s,a) + gamma max_a' Q_t(s'_t(s,a), a') - Q_t(s,a)].
Asynchronous updates follow one trajectory per replication and refresh only (s_t, a_t).
The state of all chains is one array (kept as [R, S, A, C] so that gathers move rows of C
values; results are returned as [R, C, S, A]): R independent replications, and C chains
per replication that see the *same* samples -- multiplier-bootstrap copies (whose increments
are scaled by i.i.d. weights w_t with mean 1 and variance 1) or rival schedules run on common
random numbers. Running means (full Polyak-Ruppert, tail Polyak-Ruppert over the last
m = ceil(kappa n) iterates, batch means of the tail) are accumulated online.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V
from iclr26.sklearn_contract import expected_failed_checks

from .inference import confidence_intervals
from .mdp import TabularMDP, check_mdp, check_q
from .schedules import SCHEDULE_KINDS, make_schedule

WEIGHT_KINDS = ("exp", "rademacher")
_FITS_AN_MDP = "fit takes a TabularMDP, not a data matrix X"
# scikit-learn checks that fit the estimator on arrays; they cannot pass (see the docstring)
SKLEARN_EXPECTED_FAILED_CHECKS = expected_failed_checks(_FITS_AN_MDP)


def draw_weights(rng: np.random.Generator, kind: str, size) -> np.ndarray:
    """Bootstrap multipliers with mean 1 and variance 1: Exp(1) or Rademacher + 1."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    V.check_choice(kind, "kind", WEIGHT_KINDS)
    if kind == "exp":
        return rng.exponential(1.0, size=size)
    if kind == "rademacher":
        return 2.0 * rng.integers(0, 2, size=size)
    raise ValueError(f"unknown bootstrap weights {kind!r}; choose one of {WEIGHT_KINDS}")


@dataclass
class QLearningTrace:
    """What one lock-step run of R x C chains leaves behind (arrays lead with [R, C])."""

    q_last: np.ndarray
    q_pr: np.ndarray
    q_tail: np.ndarray
    tail_sq_mean: np.ndarray  # mean of Q_t^2 over the tail window
    batch_means: np.ndarray  # [n_batches, R, C, S, A] means of consecutive tail batches
    tail_length: int
    extra_tails: dict[float, np.ndarray] = field(default_factory=dict)  # other windows kappa
    error_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    error_curve: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    elapsed_s: float = 0.0
    n_updates: int = 0

    @property
    def updates_per_second(self) -> float:
        return self.n_updates / max(self.elapsed_s, 1e-12)


def _check_mdp(mdp: TabularMDP) -> TabularMDP:
    return check_mdp(mdp)


def _check_q_init(q_init, S: int, A: int) -> np.ndarray | float:
    """A finite number or a finite table broadcastable to [R, C, S, A]."""
    if np.ndim(q_init) == 0:
        return V.check_scalar(q_init, "q_init")
    arr = V.check_array(q_init, "q_init", dtype=np.float64)
    if arr.shape[-2:] != (S, A) or arr.ndim > 4:
        raise ValueError(f"q_init must be a number or end with [S, A] = {(S, A)}, got {arr.shape}")
    return arr


def run_q_learning(
    mdp: TabularMDP,
    step_sizes: np.ndarray,
    *,
    n_replications: int = 1,
    q_init: float | np.ndarray = 0.0,
    rng: np.random.Generator | int | None = None,
    bootstrap_mask: np.ndarray | None = None,
    bootstrap_weights: str = "exp",
    tail_frac: float = 0.5,
    n_batches: int | None = None,
    q_star: np.ndarray | None = None,
    log_every: int = 0,
    sampling: str = "synchronous",
    behaviour_epsilon: float = 1.0,
    extra_tail_fracs: tuple[float, ...] = (),
    track_averages: bool = True,
    dtype: type = np.float64,
) -> QLearningTrace:
    """Run R x C Q-learning chains in lock-step on shared samples.

    ``step_sizes`` is [n] (one chain) or [n, C] (C chains, e.g. rival schedules).
    ``bootstrap_mask`` [C] marks chains whose increments are multiplied by fresh bootstrap
    weights each step (one scalar per step, replication and chain, shared by all (s, a)).
    ``extra_tail_fracs`` adds tail averages over other windows (``trace.extra_tails``).
    ``track_averages=False`` skips the running means (only the last iterate is needed);
    ``dtype`` may be ``np.float32`` to halve memory traffic.
    """
    mdp = _check_mdp(mdp)
    steps = V.check_array(step_sizes, "step_sizes", ndim=(1, 2), dtype=np.float64, low=0.0)
    if steps.ndim == 1:
        steps = steps[:, None]
    V.check_choice(sampling, "sampling", ("synchronous", "asynchronous"))
    tail_frac = V.check_scalar(tail_frac, "tail_frac", low=0.0, high=1.0, low_open=True)
    n_replications = V.check_int(n_replications, "n_replications", low=1)
    behaviour_epsilon = V.check_probability(behaviour_epsilon, "behaviour_epsilon")
    log_every = V.check_int(log_every, "log_every", low=0)
    track_averages = V.check_bool(track_averages, "track_averages")
    V.check_choice(bootstrap_weights, "bootstrap_weights", WEIGHT_KINDS)
    q_init = _check_q_init(q_init, mdp.n_states, mdp.n_actions)
    if q_star is not None:
        q_star = check_q(q_star, mdp)
    if not (rng is None or isinstance(rng, np.random.Generator)):
        rng = V.check_int(rng, "rng", low=0)
    n, C = steps.shape
    R, S, A, K = n_replications, mdp.n_states, mdp.n_actions, mdp.n_outcomes
    SA = S * A
    rng = np.random.default_rng(rng)
    if bootstrap_mask is None:
        boot = np.zeros(C, dtype=bool)
    else:
        boot = V.check_array(bootstrap_mask, "bootstrap_mask", shape=(C,), dtype=None)
        if boot.dtype.kind != "b":
            raise TypeError(f"bootstrap_mask must hold booleans, got {boot.dtype}")
    if boot.any():
        # one draw before the run: kept so that seeded runs reproduce the recorded numbers
        draw_weights(rng, bootstrap_weights, 1)
    extra_tail_fracs = tuple(
        V.check_scalar(k, "extra_tail_fracs", low=0.0, high=1.0, low_open=True)
        for k in extra_tail_fracs
    )
    m = math.ceil(tail_frac * n)
    extra_starts = {float(k): n - math.ceil(k * n) for k in extra_tail_fracs}
    tail_start = n - m  # iterates Q_{t+1} with t >= tail_start are averaged
    if n_batches is None:
        n_batches = max(1, int(math.isqrt(m)))
    n_batches = V.check_int(n_batches, "n_batches", low=1, high=m)

    # chains on the last axis: gathers then move whole rows of C values at once
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    q = np.empty((R, S, A, C), dtype=dtype)
    q[...] = np.moveaxis(np.broadcast_to(q_init, (R, C, S, A)), 1, -1)
    flat = q.reshape(R, SA, C)
    pr_sum = np.zeros(q.shape)  # sums stay float64 whatever the chain dtype
    tail_sum = np.zeros(q.shape)
    tail_sq = np.zeros(q.shape)
    batch_sum = np.zeros((n_batches, R, S, A, C))
    batch_count = np.zeros(n_batches)
    extra_sums = {k: np.zeros(q.shape) for k in extra_starts}

    cum = np.cumsum(mdp.prob, axis=-1).reshape(SA, K)
    cum[:, -1] = np.inf  # guards against rounding in the last bin
    nxt_flat = mdp.next_state.reshape(-1)
    rew_flat = mdp.reward.reshape(-1).astype(dtype)
    cont_flat = (mdp.gamma * (~mdp.terminal).reshape(-1)).astype(dtype)
    row_offset = (np.arange(R) * S)[:, None]  # row of V[r, 0, :] in the [R*S, C] view
    v = np.empty((R, S, C), dtype=dtype)

    log_steps: list[int] = []
    log_errors: list[np.ndarray] = []
    q_star_c = None if q_star is None else np.asarray(q_star, dtype=float)[..., None]

    def log(t: int) -> None:
        if q_star_c is not None and log_every:
            log_steps.append(t)
            log_errors.append(np.abs(q - q_star_c).max(axis=(1, 2)))

    def state_values(out: np.ndarray) -> np.ndarray:
        # elementwise maxima over the few actions beat a reduction along a short axis
        np.copyto(out, q[:, :, 0, :])
        for a in range(1, A):
            np.maximum(out, q[:, :, a, :], out=out)
        return out

    log(0)
    started = time.perf_counter()
    if sampling == "synchronous":
        sa_offset = np.arange(SA) * K
        for t in range(n):
            u = rng.random((R, SA, 1))
            k = (u >= cum).sum(-1)  # [R, SA] outcome index
            idx = sa_offset + k
            nxt, rew, cont = nxt_flat[idx], rew_flat[idx], cont_flat[idx]
            state_values(v)
            v_next = np.take(v.reshape(R * S, C), row_offset + nxt, axis=0)  # [R, SA, C]
            target = rew[:, :, None] + cont[:, :, None] * v_next
            gain = np.broadcast_to(steps[t], (R, C)).astype(dtype)
            if boot.any():
                gain[:, boot] *= draw_weights(rng, bootstrap_weights, (R, int(boot.sum())))
            target -= flat
            target *= gain[:, None, :]
            flat += target
            if track_averages:
                _accumulate(
                    q,
                    t,
                    tail_start,
                    m,
                    n_batches,
                    pr_sum,
                    tail_sum,
                    tail_sq,
                    batch_sum,
                    batch_count,
                )
                for kappa, start in extra_starts.items():
                    if t >= start:
                        extra_sums[kappa] += q
            if log_every and (t + 1) % log_every == 0:
                log(t + 1)
        n_updates = n * R * C * SA
    else:
        init_cum = np.cumsum(mdp.initial)
        term_flat = mdp.terminal.reshape(-1)

        def initial_states() -> np.ndarray:
            draw = np.searchsorted(init_cum, rng.random(R) * init_cum[-1], side="right")
            return np.minimum(draw, S - 1)

        state = initial_states()
        rr = np.arange(R)
        for t in range(n):
            explore = rng.random(R) < behaviour_epsilon
            greedy = q[rr, state, :, 0].argmax(-1)
            action = np.where(explore, rng.integers(0, A, R), greedy)
            sa = state * A + action
            k = (rng.random((R, 1)) >= cum[sa]).sum(-1)
            idx = sa * K + k
            nxt, rew, cont = nxt_flat[idx], rew_flat[idx], cont_flat[idx]
            v_next = q[rr, nxt].max(axis=1)  # [R, C]
            target = rew[:, None] + cont[:, None] * v_next
            gain = np.broadcast_to(steps[t], (R, C)).astype(dtype)
            if boot.any():
                gain[:, boot] *= draw_weights(rng, bootstrap_weights, (R, int(boot.sum())))
            current = flat[rr, sa]  # [R, C]
            flat[rr, sa] = current + gain * (target - current)
            if track_averages:
                _accumulate(
                    q,
                    t,
                    tail_start,
                    m,
                    n_batches,
                    pr_sum,
                    tail_sum,
                    tail_sq,
                    batch_sum,
                    batch_count,
                )
                for kappa, start in extra_starts.items():
                    if t >= start:
                        extra_sums[kappa] += q
            restart = initial_states()
            state = np.where(term_flat[idx], restart, nxt)
            if log_every and (t + 1) % log_every == 0:
                log(t + 1)
        n_updates = n * R * C
    elapsed = time.perf_counter() - started

    def chains_second(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(x, -1, -3))

    return QLearningTrace(
        q_last=chains_second(q),
        q_pr=chains_second(pr_sum / n),
        q_tail=chains_second(tail_sum / m),
        tail_sq_mean=chains_second(tail_sq / m),
        batch_means=chains_second(
            batch_sum / np.maximum(batch_count, 1)[:, None, None, None, None]
        ),
        tail_length=m,
        extra_tails={
            k: chains_second(extra_sums[k] / (n - start)) for k, start in extra_starts.items()
        },
        error_steps=np.asarray(log_steps, dtype=int),
        error_curve=np.asarray(log_errors) if log_errors else np.zeros((0, R, C)),
        elapsed_s=elapsed,
        n_updates=n_updates,
    )


def _accumulate(q, t, tail_start, m, n_batches, pr_sum, tail_sum, tail_sq, batch_sum, batch_count):
    """Add the new iterate Q_{t+1} to the online means."""
    pr_sum += q
    if t >= tail_start:
        tail_sum += q
        tail_sq += q * q
        batch = (t - tail_start) * n_batches // m
        batch_sum[batch] += q
        batch_count[batch] += 1


class SynchronousQLearning(BaseEstimator):
    """Tabular Q-learning with a constant, polynomial or PD2Z-nu schedule, its tail
    Polyak-Ruppert average and multiplier-bootstrap copies run on the same samples.

    Estimates carry a leading replication axis: ``q_tail_`` has shape [R, S, A].

    Inference and the tail window: ``confidence_intervals`` centres on the average of the
    last m = ceil(tail_frac n) iterates. With a window that is a fixed fraction of n, the
    step sizes inside it do not shrink as n grows (LD2Z: eta_t in (0, eta tail_frac]), so the
    iterates keep a spread of order sqrt(eta tail_frac) around Q*. Where an optimal action is
    near-tied -- its action gap max_a Q*(s, a) - second best is not large against that
    spread -- the max in the target overestimates by a bias of the order of the spread,
    which does not vanish, while the interval's width shrinks like 1/sqrt(m). Coverage then
    *falls* as n grows. The intervals are valid only when every action gap on the states the
    targets bootstrap through is large against that spread (a unique, well-separated optimal
    policy); a smaller ``tail_frac`` (smaller step sizes in the window, less bias) only delays
    the fall. The tests show both regimes on a two-action MDP.

    A scikit-learn estimator: ``get_params``/``set_params``/``clone`` work, hyperparameters
    are validated in :meth:`fit`, and ``fit`` returns ``self``. No scikit-learn mixin applies
    (it neither classifies, regresses, transforms nor clusters: it estimates Q* and its
    confidence intervals). ``fit`` takes a :class:`TabularMDP`, not a data matrix ``X``, so the
    checks of :func:`sklearn.utils.estimator_checks.check_estimator` that fit it on arrays
    cannot pass; they are listed, with this reason, in
    :data:`SKLEARN_EXPECTED_FAILED_CHECKS` (check_estimators_dtypes, check_fit_score_takes_y,
    check_estimators_fit_returns_self, check_readonly_memmap_input, check_n_features_in,
    check_positive_only_tag_during_fit, check_estimators_empty_data_messages,
    check_pipeline_consistency, check_estimators_nan_inf, check_estimators_overwrite_params,
    check_estimator_sparse_array, check_estimator_sparse_matrix, check_estimators_pickle,
    check_f_contiguous_array_estimator, check_fit2d_1sample, check_fit2d_1feature,
    check_fit1d, check_fit2d_predict1d, check_dict_unchanged, check_dont_overwrite_parameters,
    check_fit_idempotent, check_fit_check_is_fitted, check_n_features_in_after_fitting,
    check_complex_data, check_dtype_object, check_estimator_sparse_tag,
    check_methods_sample_order_invariance, check_methods_subset_invariance). The API checks
    (cloneable, repr, tags, no attributes set in ``__init__``, default-constructible
    parameters, get/set_params invariance) pass (tested).
    """

    sampling = "synchronous"

    def __init__(
        self,
        schedule: str = "pd2z",
        eta: float = 0.5,
        nu: float = 1.0,
        alpha: float = 0.6,
        n_steps: int = 20_000,
        tail_frac: float = 0.5,
        n_bootstrap: int = 0,
        bootstrap_weights: str = "exp",
        n_replications: int = 1,
        q_init: float = 0.0,
        log_every: int = 0,
        behaviour_epsilon: float = 1.0,
        seed: int | None = 0,
    ) -> None:
        self.schedule = schedule
        self.eta = eta
        self.nu = nu
        self.alpha = alpha
        self.n_steps = n_steps
        self.tail_frac = tail_frac
        self.n_bootstrap = n_bootstrap
        self.bootstrap_weights = bootstrap_weights
        self.n_replications = n_replications
        self.q_init = q_init
        self.log_every = log_every
        self.behaviour_epsilon = behaviour_epsilon
        self.seed = seed

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False  # fit(mdp) takes no target
        tags.non_deterministic = False  # seeded
        return tags

    def step_sizes(self) -> np.ndarray:
        V.check_choice(self.schedule, "schedule", SCHEDULE_KINDS)
        n_steps = V.check_int(self.n_steps, "n_steps", low=1)
        return make_schedule(self.schedule, self.eta, n_steps, nu=self.nu, alpha=self.alpha)

    def fit(self, mdp: TabularMDP, q_star: np.ndarray | None = None):
        """Run the chains on ``mdp``; returns self. Every hyperparameter is validated here."""
        mdp = _check_mdp(mdp)
        B = V.check_int(self.n_bootstrap, "n_bootstrap", low=0)
        V.check_choice(self.bootstrap_weights, "bootstrap_weights", WEIGHT_KINDS)
        V.check_int(self.seed, "seed", low=0, allow_none=True)
        if q_star is not None:
            q_star = check_q(q_star, mdp)
        eta = self.step_sizes()
        steps = np.repeat(eta[:, None], 1 + B, axis=1)
        mask = np.arange(1 + B) > 0
        trace = run_q_learning(
            mdp,
            steps,
            n_replications=self.n_replications,
            q_init=self.q_init,
            rng=self.seed,
            bootstrap_mask=mask,
            bootstrap_weights=self.bootstrap_weights,
            tail_frac=self.tail_frac,
            q_star=q_star,
            log_every=self.log_every,
            sampling=self.sampling,
            behaviour_epsilon=self.behaviour_epsilon,
        )
        self.trace_ = trace
        self.q_last_ = trace.q_last[:, 0]
        self.q_pr_ = trace.q_pr[:, 0]
        self.q_tail_ = trace.q_tail[:, 0]
        self.q_boot_tail_ = trace.q_tail[:, 1:]
        self.tail_length_ = trace.tail_length
        if q_star is not None and self.log_every:
            self.error_steps_ = trace.error_steps
            self.error_curve_ = trace.error_curve[:, :, 0]
        self.n_updates_ = trace.n_updates
        self.updates_per_second_ = trace.updates_per_second
        return self

    def confidence_intervals(
        self, level: float = 0.95, method: str = "multiplier_bootstrap", kind: str = "basic"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Entry-wise CIs for Q* around the tail average, each of shape [R, S, A] (see the
        class docstring for when the tail window gives valid coverage)."""
        check_is_fitted(self, "trace_")
        t = self.trace_
        return confidence_intervals(
            t.q_tail[:, 0],
            level=level,
            method=method,
            kind=kind,
            bootstrap_tails=t.q_tail[:, 1:],
            batch_means=t.batch_means[:, :, 0],
            tail_sq_mean=t.tail_sq_mean[:, 0],
            tail_length=t.tail_length,
        )


class AsynchronousQLearning(SynchronousQLearning):
    """On-trajectory Q-learning: one (s_t, a_t) per step from a behaviour policy
    (epsilon-greedy on the main chain, uniform when ``behaviour_epsilon`` = 1), restarting
    from the initial distribution after a terminated transition."""

    sampling = "asynchronous"
