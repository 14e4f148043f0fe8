"""Surrogate behaviour: a swap model that generates unlimited responses for the training of
the RNNs (the paper fits a Bayesian non-parametric swap model to real data for this).

Per trial an item is selected (the cued one, or another one: a *swap*), and the response is
``x_0 = r [(cos theta_sel, sin theta_sel) + noise N(0, I)]``. Selection: ``"flat"`` (cued item
with ``p_correct``, the others share the rest), ``"probe_distance"`` (softmax over items of
``-0.5 dphi_k^2 / (0.5 w + eps)``: items whose probe is closer to the cued probe are swapped
more often) or ``"fitted"`` (from :meth:`SwapSurrogate.fit_nonparametric`)."""

from __future__ import annotations

import numpy as np
import torch

from iclr26 import validation as V

from .task import Trials, check_angles, wrap_angle

__all__ = ["SwapSurrogate", "responses_to_angles"]

MODES = ("flat", "probe_distance")
_EPS = 1e-6


def responses_to_angles(responses, name: str = "responses") -> np.ndarray:
    """Angles in (-pi, pi] of planar responses ``(..., 2)``, or angles passed through."""
    arr = V.check_array(responses, name, dtype=np.float64)
    if arr.ndim >= 2 and arr.shape[-1] == 2:
        return wrap_angle(np.arctan2(arr[..., 1], arr[..., 0]))
    return check_angles(arr, name)


def _vm_kernel(d: np.ndarray, kappa: float) -> np.ndarray:
    return np.exp(kappa * (np.cos(d) - 1.0))


class SwapSurrogate:
    """Swap-model generator of behavioural responses (see the module docstring).

    ``p_correct`` (flat mode), ``swap_width`` (probe-distance mode), ``radius`` r and
    ``noise`` (std of the isotropic planar noise, relative to r)."""

    def __init__(
        self,
        mode: str = "flat",
        p_correct: float = 0.7,
        swap_width: float = 1.0,
        radius: float = 2.5,
        noise: float = 0.05,
    ) -> None:
        self.mode = V.check_choice(mode, "mode", MODES)
        self.p_correct = V.check_probability(p_correct, "p_correct")
        self.swap_width = V.check_scalar(swap_width, "swap_width", low=0.0, low_open=True)
        self.radius = V.check_scalar(radius, "radius", low=0.0, low_open=True)
        self.noise = V.check_scalar(noise, "noise", low=0.0)
        self._fit: dict | None = None

    # ------------------------------------------------------------- selection
    def selection_probabilities(self, trials: Trials) -> np.ndarray:
        """``(n, K)`` probability that each item is reported (rows sum to 1; a fitted model
        has a further guess probability, returned by :meth:`guess_probability`)."""
        if not isinstance(trials, Trials):
            raise TypeError(f"trials must be a Trials record, got {type(trials).__name__}")
        n, k = trials.n_trials, trials.n_items
        cued_mask = np.zeros((n, k), dtype=bool)
        cued_mask[np.arange(n), trials.cued] = True
        if self._fit is not None:
            s = self._swap_function(np.abs(trials.probe_distance))
            s = np.where(cued_mask, 0.0, s)
            total_swap = s.sum(1, keepdims=True)
            scale = np.minimum(1.0, (1.0 - self._fit["p_guess"]) / np.maximum(total_swap, _EPS))
            s = s * scale
            p = np.where(cued_mask, (1.0 - self._fit["p_guess"] - s.sum(1, keepdims=True)), s)
            return p / p.sum(1, keepdims=True)
        if k == 1:
            return np.ones((n, 1))
        if self.mode == "flat":
            return np.where(cued_mask, self.p_correct, (1.0 - self.p_correct) / (k - 1))
        logits = -0.5 * trials.probe_distance**2 / (0.5 * self.swap_width + _EPS)
        logits -= logits.max(1, keepdims=True)
        w = np.exp(logits)
        return w / w.sum(1, keepdims=True)

    def guess_probability(self) -> float:
        return 0.0 if self._fit is None else float(self._fit["p_guess"])

    # ------------------------------------------------------------- sampling
    def sample(
        self, trials: Trials, n_samples: int = 32, seed: int | None = None, rng=None
    ) -> np.ndarray:
        """Responses ``(n, n_samples, 2)`` (:meth:`sample_with_items` also gives the selected
        items)."""
        return self.sample_with_items(trials, n_samples, seed=seed, rng=rng)[0]

    def sample_with_items(self, trials: Trials, n_samples: int = 32, seed=None, rng=None):
        """``(responses (n, M, 2), selected item (n, M), -1 for a guess)``."""
        n_samples = V.check_int(n_samples, "n_samples", low=1)
        if rng is None:
            rng = np.random.default_rng(V.check_int(seed, "seed", low=0, allow_none=True))
        p = self.selection_probabilities(trials)
        n, k = p.shape
        g = self.guess_probability()
        cum = np.cumsum(p * (1.0 - g), axis=1)
        u = rng.random((n, n_samples))
        item = (u[..., None] > cum[:, None, :]).sum(-1)
        guess = item >= k
        item = np.minimum(item, k - 1)
        angle = trials.report[np.arange(n)[:, None], item]
        if self._fit is not None:
            angle = angle + self._sample_error(rng, (n, n_samples))
        angle = np.where(guess, rng.uniform(-np.pi, np.pi, (n, n_samples)), angle)
        xy = np.stack([np.cos(angle), np.sin(angle)], -1)
        xy = self.radius * (xy + self.noise * rng.standard_normal(xy.shape))
        return xy, np.where(guess, -1, item)

    def sample_torch(self, trials: Trials, n_samples: int, rng) -> torch.Tensor:
        return torch.from_numpy(self.sample(trials, n_samples, rng=rng)).float()

    def moments(self, trials: Trials) -> tuple[np.ndarray, np.ndarray]:
        """Exact per-trial mean ``(n, 2)`` and covariance ``(n, 2, 2)`` of the responses
        (flat and probe-distance modes: a mixture of isotropic Gaussians)."""
        if self._fit is not None:
            raise ValueError(
                "moments: exact moments are only defined for the flat and "
                "probe_distance modes; estimate them from samples instead"
            )
        p = self.selection_probabilities(trials)
        mu = self.radius * np.stack([np.cos(trials.report), np.sin(trials.report)], -1)
        mean = np.einsum("nk,nkd->nd", p, mu)
        second = np.einsum("nk,nkd,nke->nde", p, mu, mu)
        cov = second - mean[:, :, None] * mean[:, None, :]
        cov = cov + (self.radius * self.noise) ** 2 * np.eye(2)
        return mean, cov

    # ------------------------------------------------------------- fit to data
    @classmethod
    def fit_nonparametric(
        cls,
        stimuli: Trials,
        responses,
        *,
        radius: float = 2.5,
        noise: float = 0.05,
        kernel_kappa: float = 4.0,
        error_kappa: float = 20.0,
    ) -> SwapSurrogate:
        """A surrogate fitted to behaviour a user has: ``stimuli`` (a :class:`Trials`, one
        per response) and ``responses`` (angles ``(n,)`` in (-pi, pi] or planar ``(n, 2)``).

        Responsibilities of the target, non-target and guess components come from the
        3-component mixture model; the swap function ``s(|dphi|)`` is their Nadaraya-Watson
        regression on probe distance (von Mises kernel ``kernel_kappa``); the response error
        around the selected item is a von Mises kernel density (``error_kappa``) over the
        responsibility-weighted errors. A simple stand-in for the paper's Bayesian
        non-parametric swap model."""
        from .analysis import mixture_responsibilities

        if not isinstance(stimuli, Trials):
            raise TypeError(f"stimuli must be a Trials record, got {type(stimuli).__name__}")
        angles = responses_to_angles(responses)
        if angles.ndim != 1:
            raise ValueError(f"responses must be one response per trial, got shape {angles.shape}")
        V.check_same_length(stimuli=stimuli.report, responses=angles)
        kernel_kappa = V.check_scalar(kernel_kappa, "kernel_kappa", low=0.0, low_open=True)
        error_kappa = V.check_scalar(error_kappa, "error_kappa", low=0.0, low_open=True)
        if stimuli.n_items < 2:
            raise ValueError("stimuli must have at least 2 items per trial to fit swaps")
        fit = mixture_responsibilities(angles[:, None], stimuli)
        w_t, w_nt, w_u = fit["target"][:, 0], fit["nontarget"][:, 0], fit["guess"][:, 0]
        dist = np.abs(stimuli.probe_distance)
        keep = np.ones(dist.shape, dtype=bool)
        keep[np.arange(stimuli.n_trials), stimuli.cued] = False
        nt_dist = dist[keep].reshape(stimuli.n_trials, -1)  # (n, K - 1), same order as w_nt
        out = cls(mode="flat", radius=radius, noise=noise)
        errors = np.concatenate(
            [
                wrap_angle(angles - stimuli.target),
                wrap_angle(angles[:, None] - stimuli.nontargets).ravel(),
            ]
        )
        weights = np.concatenate([w_t, w_nt.ravel()])
        out._fit = {
            "nt_dist": nt_dist.ravel(),
            "nt_resp": w_nt.ravel(),
            "kernel_kappa": kernel_kappa,
            "error_kappa": error_kappa,
            "errors": errors,
            "error_weights": weights / max(weights.sum(), _EPS),
            "p_guess": float(np.clip(w_u.mean(), 0.0, 1.0)),
        }
        return out

    def _swap_function(self, distance: np.ndarray) -> np.ndarray:
        f = self._fit
        k = _vm_kernel(distance[..., None] - f["nt_dist"], f["kernel_kappa"])
        k = k + _vm_kernel(distance[..., None] + f["nt_dist"], f["kernel_kappa"])  # |dphi| folds
        return (k * f["nt_resp"]).sum(-1) / np.maximum(k.sum(-1), _EPS)

    def swap_function(self, distance) -> np.ndarray:
        """Fitted swap probability of one non-cued item at probe distance ``|dphi|``."""
        if self._fit is None:
            raise ValueError("swap_function: this surrogate was not fitted to data")
        distance = V.check_array(distance, "distance", low=0.0, high=np.pi)
        return self._swap_function(distance)

    def _sample_error(self, rng, shape) -> np.ndarray:
        f = self._fit
        idx = rng.choice(len(f["errors"]), size=shape, p=f["error_weights"])
        return wrap_angle(f["errors"][idx] + rng.vonmises(0.0, f["error_kappa"], size=shape))
