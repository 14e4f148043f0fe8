"""Random-walk FTPL and its adaptive-batching variant (RW-FTPL, RW-AdaBatch).

RW-FTPL (Devroye, Lugosi & Neu 2013) follows the leader on gains perturbed by an independent
Gaussian random walk. The paper's observation: the walk's increments can be the noise of
locally privatised reports g~_t = g_t + N(0, eta^2 I), so the learner is post-processing of
mu-GDP reports, mu = Delta / eta, with regret (eta + 2/eta) sqrt(2 T log n).

RW-AdaBatch freezes the prediction for a data-dependent batch of B_t rounds while the leader is
unlikely to change (the switching bound of the paper's Theorem 1), buffers the reports, and adds
them at the end of the batch; each report in a batch of size B enjoys an ex-post central
mu / sqrt(B) guarantee at a (1 + alpha/2) regret factor (Corollary 2).
"""

from __future__ import annotations

import math

import numpy as np

from iclr26 import validation as V
from iclr26.classic.ldp_experts.privacy import check_mu, noise_scale, resolve_sensitivity


def _phi(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _Phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def switching_probability_bound(gap: float, batch: int, eta: float, n: int) -> float:
    """Theorem 1's bound on the probability that a B-step Gaussian walk changes the leader.

    p(k, B) <= 2 Phi(-sqrt2 beta) + 2 sqrt(pi) phi(-beta) (Phi(beta) - Phi(-beta)),
    beta = k / (eta sqrt(2B)) - sqrt(log(2n - 2)); clipped to [0, 1] (beta <= 0 gives 1).
    """
    gap = V.check_scalar(gap, "gap")
    batch = V.check_int(batch, "batch", low=1)
    eta = V.check_scalar(eta, "eta", low=0.0, low_open=True)
    n = V.check_int(n, "n", low=2)
    beta = gap / (eta * math.sqrt(2.0 * batch)) - math.sqrt(math.log(2 * n - 2))
    if beta <= 0:
        return 1.0
    p = 2.0 * _Phi(-math.sqrt(2.0) * beta) + 2.0 * math.sqrt(math.pi) * _phi(-beta) * (
        _Phi(beta) - _Phi(-beta)
    )
    return min(1.0, max(0.0, p))


def compute_delay(
    gap: float,
    t: int,
    eta: float,
    n: int,
    alpha: float,
    max_batch: int,
    drift_correction: bool = False,
) -> int:
    """The largest B in [1, max_batch] with p(k, B) <= alpha sqrt(log n / (t + B)).

    ``t`` is the 1-based round at which the batch starts. Both sides are monotone in B (the
    bound grows, the budget shrinks), so the feasible set is a prefix and a binary search finds
    its end. With ``drift_correction`` the gap is reduced by B, the most the true gains can close
    it during the batch (a conservative option). Returns 1 when no B is feasible.
    """
    gap = V.check_scalar(gap, "gap")
    t = V.check_int(t, "t", low=1)
    eta = V.check_scalar(eta, "eta", low=0.0, low_open=True)
    n = V.check_int(n, "n", low=2)
    alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
    max_batch = V.check_int(max_batch, "max_batch", low=1)
    drift_correction = V.check_bool(drift_correction, "drift_correction")
    log_n = math.log(n)

    def feasible(b: int) -> bool:
        k = gap - b if drift_correction else gap
        if k <= 0:
            return False
        return switching_probability_bound(k, b, eta, n) <= alpha * math.sqrt(log_n / (t + b))

    if not feasible(1):
        return 1
    lo, hi = 1, max_batch  # feasible(lo) holds
    if feasible(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _check_reports(reports) -> np.ndarray:
    """A finite (T, n) block of privatised reports (any real values), T >= 1, n >= 2."""
    return V.check_array(reports, "reports", ndim=2, dtype=np.float64, min_cols=2)


class OnlineExpertAlgorithm:
    """Protocol of a local-DP online expert algorithm: it only ever sees privatised reports.

    ``reset(n, T)``, ``act(t) -> int`` (0-based round), ``update(g_noisy)``; ``play(reports)``
    runs the whole loop over a (T, n) block of reports (vectorised where the method allows).
    """

    trust = "local"

    def __init__(self, mu: float | None, sensitivity: str | float | None, random_state=None):
        if mu is not None:
            check_mu(mu)
        if sensitivity is not None:
            resolve_sensitivity(sensitivity, 2)
        self.mu = mu
        self.sensitivity = sensitivity
        self.random_state = random_state

    def _eta(self, n: int, eta: float | None) -> float:
        if eta is not None:
            return V.check_scalar(eta, "eta", low=0.0)
        if self.mu is None or self.sensitivity is None:
            raise ValueError(
                f"{type(self).__name__} needs mu and sensitivity (the privacy unit) to be set"
            )
        return noise_scale(self.mu, self.sensitivity, n)

    def play(self, reports: np.ndarray) -> np.ndarray:
        reports = _check_reports(reports)
        T, n = reports.shape
        self.reset(n, T)
        actions = np.empty(T, dtype=int)
        for t in range(T):
            actions[t] = self.act(t)
            self.update(reports[t])
        return actions


class RWFTPL(OnlineExpertAlgorithm):
    """Random-walk FTPL as post-processing of mu-GDP reports.

    Parameters: ``mu`` (GDP level of each report), ``sensitivity`` (the privacy unit:
    ``"coordinate"``, ``"vector"`` or a number). The initial perturbation z_0 ~ N(0, eta^2 I)
    is the algorithm's own randomness. Also usable as a learner inside :class:`RWMeta`, where
    it inherits the meta-algorithm's eta.
    """

    def __init__(
        self, mu: float | None = None, sensitivity: str | float | None = None, random_state=None
    ):
        super().__init__(mu, sensitivity, random_state)

    def reset(self, n: int, T: int, eta: float | None = None) -> None:
        self.eta_ = self._eta(n, eta)
        rng = np.random.default_rng(self.random_state)
        self.cumulative_ = self.eta_ * rng.standard_normal(n)  # g~_0 = z_0
        self.n_ = n

    def act(self, t: int) -> int:
        return int(np.argmax(self.cumulative_))

    def distribution(self, t: int) -> np.ndarray:
        x = np.zeros(self.n_)
        x[self.act(t)] = 1.0
        return x

    def update(self, g_noisy: np.ndarray) -> None:
        self.cumulative_ = self.cumulative_ + g_noisy

    def play(self, reports: np.ndarray) -> np.ndarray:
        reports = _check_reports(reports)
        T, n = reports.shape
        self.reset(n, T)
        z0 = self.cumulative_
        prefix = np.vstack([np.zeros((1, n)), np.cumsum(reports, axis=0)[:-1]])
        self.cumulative_ = z0 + reports.sum(axis=0)
        return np.argmax(z0 + prefix, axis=1)

    def regret_bound(self, T: int, n: int) -> float:
        """(eta + 2/eta) sqrt(2 T log n)."""
        eta = self.eta_ if hasattr(self, "eta_") else self._eta(n, None)
        return (eta + 2.0 / eta) * math.sqrt(2.0 * T * math.log(n))


class RWAdaBatch(RWFTPL):
    """RW-FTPL with adaptive batching (paper's Algorithm 2 / Corollary 2).

    ``alpha`` trades regret (factor 1 + alpha/2) for batch length. After ``play``:
    ``batch_sizes_`` (the size of the batch each round falls in) and ``amplified_mu_``
    (mu / sqrt(B), the ex-post *central* GDP of each report; the LDP level stays mu).
    """

    def __init__(
        self,
        alpha: float = 0.5,
        mu: float | None = None,
        sensitivity: str | float | None = None,
        drift_correction: bool = False,
        random_state=None,
    ):
        alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
        drift_correction = V.check_bool(drift_correction, "drift_correction")
        super().__init__(mu, sensitivity, random_state)
        self.alpha = alpha
        self.drift_correction = drift_correction

    def reset(self, n: int, T: int, eta: float | None = None) -> None:
        super().reset(n, T, eta)
        self.T_ = T
        self.batch_end_ = 0
        self.frozen_ = 0
        self.buffer_ = np.zeros(n)
        self.batch_sizes_ = np.zeros(T, dtype=int)

    def _start_batch(self, t: int) -> None:
        top2 = np.partition(self.cumulative_, -2)[-2:]
        gap = float(top2[1] - top2[0])
        if self.eta_ == 0:
            size = 1
        else:
            size = compute_delay(
                gap, t + 1, self.eta_, self.n_, self.alpha, self.T_ - t, self.drift_correction
            )
        self.frozen_ = int(np.argmax(self.cumulative_))
        self.batch_end_ = t + size
        self.batch_sizes_[t : t + size] = size

    def act(self, t: int) -> int:
        if t >= self.batch_end_:
            self._start_batch(t)
        self._t = t
        return self.frozen_

    def update(self, g_noisy: np.ndarray) -> None:
        self.buffer_ = self.buffer_ + g_noisy
        if self._t + 1 >= self.batch_end_:
            self.cumulative_ = self.cumulative_ + self.buffer_
            self.buffer_ = np.zeros(self.n_)

    def play(self, reports: np.ndarray) -> np.ndarray:
        reports = _check_reports(reports)
        T, n = reports.shape
        self.reset(n, T)
        actions = np.empty(T, dtype=int)
        t = 0
        while t < T:
            self._start_batch(t)
            end = self.batch_end_
            actions[t:end] = self.frozen_
            self.cumulative_ = self.cumulative_ + reports[t:end].sum(axis=0)
            t = end
        return actions

    @property
    def amplified_mu_(self) -> np.ndarray:
        if self.mu is None:
            raise ValueError("amplified_mu_ needs the algorithm's own mu")
        return float(self.mu) / np.sqrt(self.batch_sizes_)
