"""The delayed-recall visual working-memory task: items with a probe feature (location angle)
and a report feature (colour angle), presented as von Mises population codes over the epochs
stimulus -> delay -> cue -> post-cue delay, followed by the response (diffusion) epoch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

__all__ = ["Trials", "VWMTask", "check_angles", "von_mises_code", "wrap_angle"]


def wrap_angle(angle):
    """Wrap angles to (-pi, pi] (numpy arrays or torch tensors; NaN and inf are refused)."""
    if isinstance(angle, torch.Tensor):
        V.check_tensor(angle, "angle", floating=True, nonempty=False)
        out = torch.remainder(angle + torch.pi, 2 * torch.pi) - torch.pi
        return torch.where(out == -torch.pi, torch.full_like(out, torch.pi), out)
    angle = V.check_array(angle, "angle", dtype=np.float64) if np.ndim(angle) else angle
    V.check_finite(angle, "angle")
    out = np.mod(np.asarray(angle, dtype=float) + np.pi, 2 * np.pi) - np.pi
    return np.where(out == -np.pi, np.pi, out)


def check_angles(value, name: str, *, ndim=None, n_rows: int | None = None) -> np.ndarray:
    """Angles in radians on (-pi, pi]: finite, numeric, non-empty; -pi itself is refused
    (it is the same direction as pi, which is the representative this package uses)."""
    arr = V.check_array(value, name, ndim=ndim, dtype=np.float64, n_rows=n_rows)
    outside = (arr <= -np.pi) | (arr > np.pi)
    if outside.any():
        bad = arr[outside].ravel()[0]
        raise ValueError(
            f"{name} must hold angles in (-pi, pi] radians; {int(outside.sum())} value(s) lie "
            f"outside, e.g. {bad:g} (wrap them with wrap_angle)"
        )
    return arr


def von_mises_code(angles, n_tuning: int = 16, kappa: float = 5.0) -> np.ndarray:
    """Population code of ``angles`` (any shape) by ``n_tuning`` von Mises tuning curves with
    evenly spaced preferred angles and concentration ``kappa``, peak response 1:
    ``exp(kappa (cos(angle - mu_j) - 1))``. Returns shape ``angles.shape + (n_tuning,)``."""
    angles = check_angles(angles, "angles")
    n_tuning = V.check_int(n_tuning, "n_tuning", low=1)
    kappa = V.check_scalar(kappa, "kappa", low=0.0)
    preferred = wrap_angle(np.linspace(0.0, 2 * np.pi, n_tuning, endpoint=False))
    return np.exp(kappa * (np.cos(angles[..., None] - preferred) - 1.0))


@dataclass(frozen=True)
class Trials:
    """A batch of task trials: ``probe`` and ``report`` angles ``(n, K)`` in (-pi, pi], the
    ``cued`` item index ``(n,)`` and the network ``inputs`` ``(n, prep_steps, input_size)``
    over the preparatory epochs (built by :meth:`VWMTask.make_inputs`)."""

    probe: np.ndarray
    report: np.ndarray
    cued: np.ndarray
    inputs: torch.Tensor

    def __post_init__(self) -> None:
        probe = check_angles(self.probe, "probe", ndim=2)
        report = check_angles(self.report, "report", ndim=2)
        cued = V.check_array(self.cued, "cued", ndim=1, dtype=np.int64)
        V.check_same_length(probe=probe, report=report, cued=cued)
        if probe.shape[1] != report.shape[1]:
            raise ValueError(
                f"probe and report must have the same number of items, got {probe.shape[1]} "
                f"and {report.shape[1]}"
            )
        if cued.min() < 0 or cued.max() >= report.shape[1]:
            raise ValueError(f"cued must index items 0..{report.shape[1] - 1}")
        inputs = V.check_tensor(self.inputs, "inputs", ndim=3, floating=True)
        if inputs.shape[0] != probe.shape[0]:
            raise ValueError(
                f"inputs must have {probe.shape[0]} trials (rows), got {inputs.shape[0]}"
            )
        object.__setattr__(self, "probe", probe)
        object.__setattr__(self, "report", report)
        object.__setattr__(self, "cued", cued)

    @property
    def n_trials(self) -> int:
        return int(self.report.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.report.shape[1])

    @property
    def target(self) -> np.ndarray:
        """The cued item's report angle per trial, ``(n,)``."""
        return self.report[np.arange(self.n_trials), self.cued]

    @property
    def nontargets(self) -> np.ndarray:
        """The non-cued items' report angles, ``(n, K - 1)``."""
        keep = np.ones(self.report.shape, dtype=bool)
        keep[np.arange(self.n_trials), self.cued] = False
        return self.report[keep].reshape(self.n_trials, self.n_items - 1)

    @property
    def probe_distance(self) -> np.ndarray:
        """Wrapped probe distance of every item to the cued item, ``(n, K)`` (0 for the cued)."""
        cued_probe = self.probe[np.arange(self.n_trials), self.cued]
        return wrap_angle(self.probe - cued_probe[:, None])

    def subset(self, index) -> Trials:
        index = np.asarray(index)
        return Trials(self.probe[index], self.report[index], self.cued[index], self.inputs[index])


class VWMTask:
    """Delayed recall with ``n_items`` items (probe angle, report angle, both uniform).

    Epoch lengths ``epochs = (stimulus, delay, cue, post_cue)`` are the preparatory steps; the
    response epoch lasts ``T`` steps. ``input_mode="concat"``: per item the probe and report
    codes side by side (``K * 2 * n_tuning`` units) plus ``n_tuning`` cue units;
    ``"conjunctive"``: the sum over items of ``outer(probe_code, report_code)`` projected by a
    fixed random matrix to ``conjunctive_size`` units, plus the cue units. The cue epoch shows
    the cued item's probe code on the cue units; other epochs have zero input."""

    def __init__(
        self,
        n_items: int = 2,
        n_tuning: int = 16,
        kappa: float = 5.0,
        epochs: tuple[int, int, int, int] = (5, 15, 5, 1),
        T: int = 40,
        input_mode: str = "concat",
        conjunctive_size: int = 36,
        seed: int = 0,
    ) -> None:
        self.n_items = V.check_int(n_items, "n_items", low=1)
        self.n_tuning = V.check_int(n_tuning, "n_tuning", low=2)
        self.kappa = V.check_scalar(kappa, "kappa", low=0.0)
        epochs = V.check_array(epochs, "epochs", ndim=1, shape=(4,), dtype=np.int64, low=0)
        if epochs[0] < 1 or epochs[2] < 1:
            raise ValueError(f"epochs: the stimulus and cue epochs need >= 1 step, got {epochs}")
        self.epochs = tuple(int(e) for e in epochs)
        self.T = V.check_int(T, "T", low=1)
        self.input_mode = V.check_choice(input_mode, "input_mode", ("concat", "conjunctive"))
        self.conjunctive_size = V.check_int(conjunctive_size, "conjunctive_size", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        if self.input_mode == "conjunctive":
            g = np.random.default_rng(self.seed)
            self._projection = g.standard_normal((self.n_tuning**2, self.conjunctive_size)) / (
                self.n_tuning
            )
        self.stimulus_size = (
            2 * self.n_items * self.n_tuning
            if self.input_mode == "concat"
            else self.conjunctive_size
        )

    @property
    def input_size(self) -> int:
        return self.stimulus_size + self.n_tuning

    @property
    def prep_steps(self) -> int:
        return int(sum(self.epochs))

    @property
    def cue_window(self) -> tuple[int, int]:
        start = self.epochs[0] + self.epochs[1]
        return start, start + self.epochs[2]

    def make_inputs(self, probe, report, cued) -> torch.Tensor:
        """Network inputs ``(n, prep_steps, input_size)`` for given trial variables."""
        probe = check_angles(probe, "probe", ndim=2)
        report = check_angles(report, "report", ndim=2)
        V.check_same_length(probe=probe, report=report)
        if probe.shape[1] != self.n_items or report.shape[1] != self.n_items:
            raise ValueError(
                f"probe and report must have {self.n_items} item column(s), got "
                f"{probe.shape[1]} and {report.shape[1]}"
            )
        cued = V.check_array(cued, "cued", ndim=1, dtype=np.int64, n_rows=probe.shape[0])
        if cued.min() < 0 or cued.max() >= self.n_items:
            raise ValueError(f"cued must index items 0..{self.n_items - 1}, got {cued.max()}")
        n = probe.shape[0]
        p_code = von_mises_code(probe, self.n_tuning, self.kappa)  # (n, K, J)
        r_code = von_mises_code(report, self.n_tuning, self.kappa)
        if self.input_mode == "concat":
            stim = np.concatenate([p_code, r_code], axis=2).reshape(n, -1)
        else:
            outer = np.einsum("nki,nkj->nij", p_code, r_code).reshape(n, -1)
            stim = outer @ self._projection
        x = np.zeros((n, self.prep_steps, self.input_size), dtype=np.float32)
        x[:, : self.epochs[0], : self.stimulus_size] = stim[:, None, :]
        c0, c1 = self.cue_window
        x[:, c0:c1, self.stimulus_size :] = p_code[np.arange(n), cued][:, None, :]
        return torch.from_numpy(x)

    def make_trials(self, n: int, seed: int | None = None) -> Trials:
        """``n`` random trials (probe and report angles uniform, cued item uniform)."""
        n = V.check_int(n, "n", low=1)
        seed = V.check_int(seed, "seed", low=0, allow_none=True)
        g = np.random.default_rng(seed)
        probe = wrap_angle(g.uniform(-np.pi, np.pi, (n, self.n_items)))
        report = wrap_angle(g.uniform(-np.pi, np.pi, (n, self.n_items)))
        cued = g.integers(0, self.n_items, n)
        return Trials(probe, report, cued, self.make_inputs(probe, report, cued))

    def trials_from(self, probe, report, cued) -> Trials:
        """Trials for stimuli a user has (angles in (-pi, pi]; same number of trials each)."""
        probe = check_angles(probe, "probe", ndim=2)
        report = check_angles(report, "report", ndim=2)
        cued = V.check_array(cued, "cued", ndim=1, dtype=np.int64)
        V.check_same_length(probe=probe, report=report, cued=cued)
        return Trials(probe, report, cued, self.make_inputs(probe, report, cued))
