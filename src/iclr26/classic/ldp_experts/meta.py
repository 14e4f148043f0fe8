"""RW-Meta: choosing among data-dependent learners that all read the same noisy reports.

m learners map the history of privatised reports to actions X_t in R^{m x n} (rows are
distributions over experts). The learners' estimated gains G~_{t-1} = sum_{s<t} X_s g~_s are
unbiased and carry correlated noise with covariance Sigma_{t-1} = eta^2 sum_{s<t} X_s X_s^T.
RW-Meta removes the common component, Sigma* = Sigma - (1^T Sigma 1 / m^2) 11^T, and adds an
extra perturbation y_t ~ N(0, c_t I - Sigma*_{t-1}), c_t = max(2t, lambda_max(Sigma*_{t-1})), so
that the total perturbation is isotropic up to the all-ones direction (which leaves the argmax
unchanged): an FTPL over learners with regret O(sqrt(T n m log m)/mu) against the best learner
(paper's Theorem 3) and no privacy cost beyond the reports.
"""

from __future__ import annotations

import math

import numpy as np

from iclr26 import validation as V
from iclr26.classic.ldp_experts.ftpl import OnlineExpertAlgorithm


class RollingRidgeLearner:
    """Forecast each expert's next gain by a ridge-penalised local linear trend.

    Per expert, fit y = a + b s to its last ``window`` noisy reports (ridge ``ridge`` on the
    slope b only, i.e. a Gaussian prior on the trend), forecast the next round and play the
    argmax one-hot. Before any report it plays the uniform distribution.
    """

    def __init__(self, window: int = 8, ridge: float = 1.0):
        self.window = V.check_int(window, "window", low=1)
        self.ridge = V.check_scalar(ridge, "ridge", low=0.0)

    def reset(self, n: int, T: int, eta: float | None = None) -> None:
        # prefix sums of y_r and r * y_r give every window's regression in O(n)
        self.prefix_ = np.zeros((T + 1, n))
        self.weighted_prefix_ = np.zeros((T + 1, n))
        self.count_ = 0
        self.n_ = n

    def forecast(self) -> np.ndarray:
        c = self.count_
        w = min(self.window, c)
        sum_y = self.prefix_[c] - self.prefix_[c - w]
        sum_ry = self.weighted_prefix_[c] - self.weighted_prefix_[c - w]
        sum_sy = sum_ry - (c - w) * sum_y  # s = r - (c - w) runs over 0 .. w-1
        s_mean = (w - 1) / 2.0
        y_mean = sum_y / w
        s_var = w * (w * w - 1) / 12.0  # sum (s - s_mean)^2
        slope = (sum_sy - s_mean * sum_y) / (s_var + self.ridge) if w > 1 else 0.0
        return y_mean + slope * (w - s_mean)

    def distribution(self, t: int) -> np.ndarray:
        if self.count_ == 0:
            return np.full(self.n_, 1.0 / self.n_)
        x = np.zeros(self.n_)
        x[int(np.argmax(self.forecast()))] = 1.0
        return x

    def update(self, g_noisy: np.ndarray) -> None:
        c = self.count_
        self.prefix_[c + 1] = self.prefix_[c] + g_noisy
        self.weighted_prefix_[c + 1] = self.weighted_prefix_[c] + c * g_noisy
        self.count_ = c + 1

    def __repr__(self) -> str:
        return f"RollingRidgeLearner(window={self.window}, ridge={self.ridge})"


def decorrelate(sigma: np.ndarray) -> np.ndarray:
    """Sigma* = Sigma - (1^T Sigma 1 / m^2) 11^T (symmetrised)."""
    sigma = V.check_square(sigma, "sigma", dtype=np.float64)
    sigma = 0.5 * (sigma + sigma.T)
    m = sigma.shape[0]
    return sigma - sigma.sum() / m**2 * np.ones((m, m))


def meta_perturbation_cov(sigma: np.ndarray, t: int) -> tuple[np.ndarray, float]:
    """(c_t I - Sigma*, c_t) with c_t = max(2t, lambda_max(Sigma*)); t is the 1-based round."""
    star = decorrelate(sigma)
    lam_max = float(np.linalg.eigvalsh(star)[-1])
    c = max(2.0 * t, lam_max)
    return c * np.eye(star.shape[0]) - star, c


def sample_meta_perturbation(sigma: np.ndarray, t: int, rng: np.random.Generator) -> np.ndarray:
    """y_t ~ N(0, c_t I - Sigma*): one eigen-decomposition of Sigma* serves both c_t and the
    square root (c_t I - Sigma* has the same eigenvectors); tiny negative values are clipped."""
    vals, vecs = np.linalg.eigh(decorrelate(sigma))
    c = max(2.0 * t, float(vals[-1]))
    return vecs @ (np.sqrt(np.clip(c - vals, 0.0, None)) * rng.standard_normal(len(vals)))


def sample_gaussian(cov: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of N(0, cov) through an eigen square root (tiny negative eigenvalues clipped)."""
    vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))
    return vecs @ (np.sqrt(np.clip(vals, 0.0, None)) * rng.standard_normal(len(vals)))


class RWMeta(OnlineExpertAlgorithm):
    """Select among ``learners`` with a de-correlated FTPL on their noisy estimated gains.

    Learners follow ``reset(n, T, eta)``, ``distribution(t) -> (n,)``, ``update(g_noisy)``
    and see only privatised reports, so RW-Meta is mu-GDP at no extra cost. After ``play``:
    ``learner_picks_`` (T,), ``learner_actions_`` (T, m, n), ``sigma_`` (final noise covariance).
    """

    def __init__(
        self,
        learners,
        mu: float | None = None,
        sensitivity: str | float | None = None,
        random_state=None,
    ):
        try:
            learners = list(learners)
        except TypeError:
            raise TypeError(
                f"learners must be an iterable of learners, got {type(learners).__name__}"
            ) from None
        if len(learners) < 1:
            raise ValueError("learners: RWMeta needs at least one learner")
        for i, learner in enumerate(learners):
            V.check_module_attrs(learner, f"learners[{i}]", ("reset", "distribution", "update"))
        super().__init__(mu, sensitivity, random_state)
        self.learners = learners

    def reset(self, n: int, T: int, eta: float | None = None) -> None:
        self.eta_ = self._eta(n, eta)
        m = len(self.learners)
        for learner in self.learners:
            learner.reset(n, T, self.eta_)
        self.rng_ = np.random.default_rng(self.random_state)
        self.gains_ = np.zeros(m)
        self.sigma_ = np.zeros((m, m))
        self.learner_picks_ = np.zeros(T, dtype=int)
        self.learner_actions_ = np.zeros((T, m, n))
        self.n_ = n

    def act(self, t: int) -> int:
        X = np.stack([learner.distribution(t) for learner in self.learners])
        y = sample_meta_perturbation(self.sigma_, t + 1, self.rng_)
        j = int(np.argmax(self.gains_ + y))
        self._X, self._t = X, t
        self.learner_picks_[t] = j
        self.learner_actions_[t] = X
        x = X[j]
        if np.max(x) == 1.0:
            return int(np.argmax(x))
        return int(self.rng_.choice(self.n_, p=x / x.sum()))

    def update(self, g_noisy: np.ndarray) -> None:
        X = self._X
        self.gains_ = self.gains_ + X @ g_noisy
        self.sigma_ = self.sigma_ + self.eta_**2 * (X @ X.T)
        for learner in self.learners:
            learner.update(g_noisy)

    def regret_bound(self, T: int) -> float:
        """Theorem 3: [max(sqrt2, sqrt(lambda_max(Sigma*_T) / T)) + sqrt2] sqrt(2 T log m)."""
        T = V.check_int(T, "T", low=1)
        if not hasattr(self, "sigma_"):
            raise ValueError("regret_bound needs the noise covariance of a run: call play first")
        m = len(self.learners)
        lam = float(np.linalg.eigvalsh(decorrelate(self.sigma_))[-1])
        lead = max(math.sqrt(2.0), math.sqrt(max(lam, 0.0) / T))
        return (lead + math.sqrt(2.0)) * math.sqrt(2.0 * T * math.log(max(m, 2)))
