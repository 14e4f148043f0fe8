"""The hospital-selection task as a Gymnasium environment (``iclr26/HospitalSelection-v0``).

Each week the agent picks one hospital (the expert) and earns that hospital's bed-occupancy
density. It is then shown the week's reports of every hospital, privatised by the Gaussian
mechanism (eta = Delta / mu per coordinate): the full-information expert setting under local
differential privacy. The panel is the synthetic stand-in of :func:`make_hospital_panel`, drawn
afresh at each reset unless a fixed panel is given.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from iclr26 import validation as V
from iclr26.classic.ldp_experts.panel import make_hospital_panel
from iclr26.classic.ldp_experts.privacy import (
    LDPReportStream,
    check_gains,
    check_mu,
    resolve_sensitivity,
)

REWARDS = ("density", "report")


class HospitalSelectionEnv(gym.Env):
    """Pick a hospital each week; observe all hospitals' privatised reports afterwards.

    Observation: the latest privatised report vector g~_t (zeros before the first week).
    Action: a hospital index. Reward: the chosen hospital's true density g_t[a]
    (``reward="density"``, the paper's evaluation gain) or its privatised report g~_t[a]
    (``reward="report"``, so that a learning agent touches only private data). The episode ends
    after the last week. ``info`` holds the week, the privacy level and the noise scale.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        n_hospitals: int = 20,
        n_weeks: int = 148,
        n_regions: int = 4,
        mu: float = 1.0,
        sensitivity: str | float = "coordinate",
        reward: str = "density",
        panel: np.ndarray | None = None,
    ):
        V.check_choice(reward, "reward", REWARDS)
        self.mu = check_mu(mu)
        if panel is not None:
            panel = check_gains(panel, "panel")
            n_weeks, n_hospitals = panel.shape
        else:
            n_hospitals = V.check_int(n_hospitals, "n_hospitals", low=2)
            n_weeks = V.check_int(n_weeks, "n_weeks", low=2)
            n_regions = V.check_int(n_regions, "n_regions", low=1)
        self.n_hospitals, self.n_weeks, self.n_regions = int(n_hospitals), int(n_weeks), n_regions
        self.sensitivity = sensitivity
        self.eta = resolve_sensitivity(sensitivity, self.n_hospitals) / self.mu
        self.reward_mode = reward
        self.fixed_panel = panel
        self.action_space = spaces.Discrete(self.n_hospitals)
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.n_hospitals,), np.float64)
        self.week = 0

    def _info(self) -> dict:
        return {"week": self.week, "mu": self.mu, "eta": self.eta, "sensitivity": self.sensitivity}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.fixed_panel is not None:
            self.panel_ = self.fixed_panel
        else:
            self.panel_ = make_hospital_panel(
                self.n_hospitals,
                self.n_weeks,
                self.n_regions,
                random_state=int(self.np_random.integers(2**31)),
            )
        self.stream_ = LDPReportStream(
            self.panel_, self.mu, self.sensitivity, int(self.np_random.integers(2**31))
        )
        self.week = 0
        return np.zeros(self.n_hospitals), self._info()

    def step(self, action):
        if not hasattr(self, "stream_"):
            raise RuntimeError("call reset before step")
        if self.week >= self.n_weeks:
            raise RuntimeError("the episode is over; call reset")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be a hospital index in [0, {self.n_hospitals})")
        a = int(action)
        report = np.array(self.stream_.noisy[self.week])
        reward = float(self.panel_[self.week, a] if self.reward_mode == "density" else report[a])
        self.week += 1
        terminated = self.week >= self.n_weeks
        return report, reward, terminated, False, self._info()


def _register() -> None:
    env_id = "iclr26/HospitalSelection-v0"
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point="iclr26.classic.ldp_experts.env:HospitalSelectionEnv")


_register()
