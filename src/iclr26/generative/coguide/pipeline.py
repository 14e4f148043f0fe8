"""CoGuide end to end: fit the prior and the contrastive surrogate on plans and their walks,
then reconstruct plans from new walks with the guided sampler."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.generative.coguide.likelihood import ContrastiveLikelihood
from iclr26.generative.coguide.prior import FloorplanPrior
from iclr26.generative.coguide.sampler import CoGuideSampler


class CoGuide:
    """Fit-predict wrapper: ``fit(X, Y)`` trains a :class:`FloorplanPrior` for
    ``prior_steps`` and a :class:`ContrastiveLikelihood` for ``likelihood_steps`` on plans
    ``X`` (n, s, s) and per-plan lists of trajectories ``Y``; ``predict(ys)`` returns one
    reconstructed plan per trajectory. ``sampler_kwargs`` go to :class:`CoGuideSampler`."""

    def __init__(
        self,
        prior_steps: int = 1500,
        likelihood_steps: int = 800,
        steps: int = 25,
        seed: int = 0,
        prior_kwargs: dict | None = None,
        likelihood_kwargs: dict | None = None,
        sampler_kwargs: dict | None = None,
    ):
        self.prior_steps = prior_steps
        self.likelihood_steps = likelihood_steps
        self.steps = steps
        self.seed = seed
        self.prior_kwargs = prior_kwargs
        self.likelihood_kwargs = likelihood_kwargs
        self.sampler_kwargs = sampler_kwargs

    def fit(self, X, Y) -> CoGuide:
        X = V.check_array(X, "X", ndim=3, dtype=np.float32, low=-1.0, high=1.0)
        V.check_int(self.prior_steps, "prior_steps", low=1)
        V.check_int(self.likelihood_steps, "likelihood_steps", low=1)
        V.check_int(self.steps, "steps", low=1)
        self.prior_ = FloorplanPrior(**(self.prior_kwargs or {})).fit(
            X, steps=self.prior_steps, seed=self.seed
        )
        self.likelihood_ = ContrastiveLikelihood(**(self.likelihood_kwargs or {})).fit(
            X, Y, steps=self.likelihood_steps, seed=self.seed
        )
        self.sampler_ = CoGuideSampler(
            self.prior_, self.likelihood_, steps=self.steps, **(self.sampler_kwargs or {})
        )
        return self

    def predict(self, ys, n: int = 1, seed: int = 0) -> np.ndarray:
        if not hasattr(self, "sampler_"):
            raise ValueError("CoGuide must be fitted before predict")
        return self.sampler_.sample(ys, n=n, seed=seed)
