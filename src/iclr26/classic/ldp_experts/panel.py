"""Synthetic gain sequences: a hospital-occupancy stand-in and simple stochastic/adversarial ones.

The paper's hospital data (weekly US facility reports) are not available offline.
:func:`make_hospital_panel` keeps the features that matter for the claim: densities in [0, 1],
four epidemic waves, sub-regions with their own timing and per-wave intensity (so the hottest
hospital changes between waves), hospital size, baseline occupancy, reporting lag, AR(1) noise
and missing reports carried forward.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

WAVE_CENTRES = (20.0, 45.0, 75.0, 105.0)
# Regional per-wave intensity spread (log-normal sigma). Set once so that the noise-free dynamic
# oracle earns 1.6-2.2x the best static hospital for the three panel sizes (seeds 0-9); frozen.
REGION_SPREAD = 0.4
HOSPITAL_WAVE_SPREAD = 1.3


def make_hospital_panel(
    n_hospitals: int = 20,
    n_weeks: int = 148,
    n_regions: int = 4,
    region_spread: float = REGION_SPREAD,
    hospital_wave_spread: float = HOSPITAL_WAVE_SPREAD,
    random_state=0,
    return_clean: bool = False,
):
    """A (n_weeks, n_hospitals) panel of bed-occupancy densities in [0, 1].

    With ``return_clean`` also returns the noise-free panel (no AR noise, lag or missing
    reports), scaled by the same maximum.
    """
    n_hospitals = V.check_int(n_hospitals, "n_hospitals", low=2)
    n_weeks = V.check_int(n_weeks, "n_weeks", low=2)
    n_regions = V.check_int(n_regions, "n_regions", low=1)
    region_spread = V.check_scalar(region_spread, "region_spread", low=0.0)
    hospital_wave_spread = V.check_scalar(hospital_wave_spread, "hospital_wave_spread", low=0.0)
    rng = np.random.default_rng(random_state)
    n_waves = len(WAVE_CENTRES)
    centres = np.asarray(WAVE_CENTRES) + rng.uniform(-4, 4, n_waves)
    amplitudes = rng.uniform(0.1, 0.35, n_waves)
    widths = rng.uniform(3, 8, n_waves)
    region = rng.integers(0, n_regions, n_hospitals)
    region_shift = rng.uniform(-3, 3, n_regions)
    region_mult = rng.lognormal(0.0, region_spread, (n_regions, n_waves))
    size = rng.lognormal(0.0, 0.3, n_hospitals)
    baseline = rng.uniform(0.0, 0.03, n_hospitals)
    lag = rng.integers(0, 3, n_hospitals)
    hospital_mult = rng.lognormal(0.0, hospital_wave_spread, (n_hospitals, n_waves))

    weeks = np.arange(n_weeks, dtype=float)[:, None, None]  # (T, 1, 1)

    def occupancy(delay: np.ndarray) -> np.ndarray:
        t = weeks - region_shift[region][None, :, None] - delay[None, :, None]
        bumps = amplitudes * np.exp(-0.5 * ((t - centres) / widths) ** 2)  # (T, n, W)
        waves = np.sum(bumps * (region_mult[region] * hospital_mult)[None], axis=2)
        return baseline + size * waves

    clean = occupancy(np.zeros(n_hospitals))
    ar = np.zeros((n_weeks, n_hospitals))
    shocks = rng.normal(0.0, 0.01, (n_weeks, n_hospitals))
    for t in range(1, n_weeks):  # AR(1), phi = 0.7: a short recursion over weeks, not samples
        ar[t] = 0.7 * ar[t - 1] + shocks[t]
    panel = np.clip(occupancy(lag.astype(float)) + ar, 0.0, None)
    missing = rng.random((n_weeks, n_hospitals)) < 0.02
    missing[0] = False
    last = np.where(~missing, np.arange(n_weeks)[:, None], 0)
    last = np.maximum.accumulate(last, axis=0)
    panel = panel[last, np.arange(n_hospitals)]
    scale = panel.max()
    panel = panel / scale
    if return_clean:
        return panel, np.clip(clean / scale, 0.0, 1.0)
    return panel


def oracle_ratio(panel: np.ndarray) -> float:
    """Gain of the dynamic oracle (hottest expert each round) over the best static expert."""
    panel = V.check_array(panel, "panel", ndim=2, dtype=np.float64, min_cols=2, low=0.0, high=1.0)
    if not panel.sum(axis=0).max() > 0:
        raise ValueError("panel: every expert's total gain is 0; the ratio is undefined")
    return float(panel.max(axis=1).sum() / panel.sum(axis=0).max())


def bernoulli_gains(n: int, T: int, means, random_state=None) -> np.ndarray:
    """i.i.d. Bernoulli gains with per-expert means."""
    n = V.check_int(n, "n", low=1)
    T = V.check_int(T, "T", low=1)
    means = V.check_array(
        np.atleast_1d(means), "means", ndim=1, dtype=np.float64, low=0.0, high=1.0
    )
    if means.shape[0] not in (1, n):
        raise ValueError(
            f"means must be a number or one mean per expert ({n}), got {means.shape[0]}"
        )
    means = np.broadcast_to(means, (n,))
    rng = np.random.default_rng(random_state)
    return (rng.random((T, n)) < means).astype(float)


def alternating_leader_gains(n: int, T: int, block: int = 250, random_state=None) -> np.ndarray:
    """Oblivious adversary: blocks in which one random expert earns 1 and the rest earn 0."""
    n = V.check_int(n, "n", low=1)
    T = V.check_int(T, "T", low=1)
    block = V.check_int(block, "block", low=1)
    rng = np.random.default_rng(random_state)
    leaders = rng.integers(0, n, -(-T // block))
    gains = np.zeros((T, n))
    gains[np.arange(T), np.repeat(leaders, block)[:T]] = 1.0
    return gains
