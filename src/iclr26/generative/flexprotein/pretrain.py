"""Joint sequence–structure pretraining (the paper's SIMLM modes and four-term loss).

Each example uses one mode: ``seq2struct`` (clean sequence, all coordinates noised), ``local``
(15 % of residues masked and only their coordinates noised) or ``global`` (15 % masked, all
coordinates noised); noise is the variance-exploding EDM process X̃ = X + σε. Coordinates are
centred and randomly rotated every time an example is used (no alignment inside the loss). The
loss is L_MSE (EDM-weighted, and weighted per residue by a sigmoid of pLDDT) + L_MLM (masked
positions only) + L_Dist + L_smooth-lDDT, with L_MLM off during the first ``mlm_warmup_frac``
of the steps (the curriculum's stage A). ``objective="sequence"`` / ``"structure"`` give the sequence-only (MLM
only, structure input hidden) and structure-only (no MLM) baselines with the same model."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.generative.flexprotein.data import MASK, ProteinSet
from iclr26.generative.flexprotein.geometry import random_rotations, smooth_lddt_loss
from iclr26.generative.flexprotein.model import UNIT, FlexProteinModel

MODES = ("seq2struct", "local", "global", "inverse_fold")
CONFIDENCE = ("sigmoid", "linear")
LOSS_WEIGHTS = ("edm", "unit")
DIST_LOSSES = ("l1", "squared")
OBJECTIVES = ("joint", "sequence", "structure")


def _check_set(data, name: str = "data") -> ProteinSet:
    if not isinstance(data, ProteinSet):
        raise TypeError(
            f"{name} must be a ProteinSet (see Structures.to_protein_set), got {type(data).__name__}"
        )
    if len(data) == 0:
        raise ValueError(f"{name} is empty")
    V.check_array(data.coords, f"{name}.coords", ndim=3)
    V.check_array(data.plddt, f"{name}.plddt", ndim=2, low=0.0, high=100.0)
    t = V.check_array(data.tokens, f"{name}.tokens", ndim=2, dtype=None)
    if t.dtype.kind not in "iu" or t.min() < 0 or t.max() > 20:
        raise ValueError(f"{name}.tokens must be integers in [0, 20]")
    return data


class FlexProteinPretrainer:
    """Trains a :class:`FlexProteinModel` with the SIMLM modes and the loss above.
    ``mode_weights``: the mixing proportions of ``modes`` (``None``: uniform, R).
    ``local_window``: Mode 2 (``"local"``) noises the masked residues and the residues within
    this many chain positions of them (0: the masked residues only, R). ``loss_weight="edm"``:
    L_MSE weighted by EDM's λ(σ) = (σ² + σ_data²)/(σ σ_data)² (R; ``"unit"``: λ = 1).
    ``dist_loss="l1"``: L_Dist is the mean |d̂_ij − d_ij| over pairs with true distance below
    ``dist_cutoff`` Å (R; ``"squared"``: the squared error). ``sigma_dist="edm"``:
    ln σ ~ N(-1.2, 1.2²) in 10 Å units (R); ``"af3"``: σ = 1.6·exp(-1.2 + 1.5 n) (AlphaFold 3's
    16 Å σ_data). ``replace=(0.8, 0.1, 0.1)``: BERT's MASK / random /
    unchanged split of the masked residues (R). ``confidence="sigmoid"``: each residue's L_MSE
    term is weighted by a sigmoid of its pLDDT (the paper's form), here
    sigmoid((pLDDT - plddt_mid) / plddt_scale) divided by its value at pLDDT 100, so that
    experimental and generated chains (pLDDT 100) keep weight 1 (centre, scale and the
    normalisation are R); ``"linear"``: pLDDT / 100."""

    def __init__(
        self,
        model: FlexProteinModel,
        *,
        lambda_struct: float = 1.0,
        mask_rate: float = 0.15,
        modes: tuple[str, ...] = ("seq2struct", "local", "global"),
        mode_weights=None,
        local_window: int = 0,
        mlm_warmup_frac: float = 0.25,
        objective: str = "joint",
        sigma_dist: str = "edm",
        replace: tuple[float, float, float] = (0.8, 0.1, 0.1),
        confidence: str = "sigmoid",
        plddt_mid: float = 70.0,
        plddt_scale: float = 10.0,
        loss_weight: str = "edm",
        dist_loss: str = "l1",
        dist_cutoff: float = 15.0,
        lr: float = 1e-3,
        batch_size: int = 32,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> None:
        if not isinstance(model, FlexProteinModel):
            raise TypeError(f"model must be a FlexProteinModel, got {type(model).__name__}")
        self.model = model
        self.lambda_struct = V.check_scalar(lambda_struct, "lambda_struct", low=0.0)
        self.mask_rate = V.check_scalar(mask_rate, "mask_rate", low=0.0, high=1.0, low_open=True)
        if isinstance(modes, str) or not modes:
            raise ValueError("modes must be a non-empty tuple of mode names")
        self.modes = tuple(V.check_choice(m, "modes", MODES) for m in modes)
        if mode_weights is None:
            self.mode_weights = None  # uniform: one mode drawn uniformly per example
        else:
            mw = V.check_array(
                mode_weights, "mode_weights", ndim=1, shape=(len(self.modes),), dtype=np.float64,
                low=0.0,
            )  # fmt: skip
            if mw.sum() <= 0:
                raise ValueError("mode_weights must not all be zero")
            self.mode_weights = mw / mw.sum()
        self.local_window = V.check_int(local_window, "local_window", low=0)
        self.mlm_warmup_frac = V.check_probability(
            mlm_warmup_frac, "mlm_warmup_frac", open_high=True
        )
        self.objective = V.check_choice(objective, "objective", OBJECTIVES)
        self.sigma_dist = V.check_choice(sigma_dist, "sigma_dist", ("edm", "af3"))
        rep = V.check_array(replace, "replace", shape=(3,), dtype=np.float64, low=0.0, high=1.0)
        if abs(rep.sum() - 1.0) > 1e-6:
            raise ValueError(f"replace must sum to 1, got {rep.sum()}")
        self.replace = rep
        self.confidence = V.check_choice(confidence, "confidence", CONFIDENCE)
        self.plddt_mid = V.check_scalar(plddt_mid, "plddt_mid", low=0.0, high=100.0)
        self.plddt_scale = V.check_scalar(plddt_scale, "plddt_scale", low=0.0, low_open=True)
        self.loss_weight = V.check_choice(loss_weight, "loss_weight", LOSS_WEIGHTS)
        self.dist_loss = V.check_choice(dist_loss, "dist_loss", DIST_LOSSES)
        self.dist_cutoff = V.check_scalar(dist_cutoff, "dist_cutoff", low=0.0, low_open=True)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
        self.seed = V.check_int(seed, "seed", low=0)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.history: dict[str, list[float]] = {}

    # ------------------------------------------------------------------ corruption
    def confidence_weight(self, plddt) -> np.ndarray:
        """Per-residue weight of the denoising loss from pLDDT in [0, 100] (same shape)."""
        p = V.check_array(plddt, "plddt", dtype=np.float64, low=0.0, high=100.0)
        if self.confidence == "linear":
            return p / 100.0

        def sig(v):
            return 1.0 / (1.0 + np.exp(-(v - self.plddt_mid) / self.plddt_scale))

        w = sig(p) / sig(np.float64(100.0))
        return np.where(p >= 100.0, 1.0, w)  # exactly 1 at pLDDT 100, whatever the rounding

    def sample_sigma(self, n: int) -> torch.Tensor:
        z = torch.randn(n, generator=self.gen)
        if self.sigma_dist == "edm":
            return torch.exp(-1.2 + 1.2 * z)
        return 1.6 * torch.exp(-1.2 + 1.5 * z)

    def corrupt(self, tokens: torch.Tensor, x0: torch.Tensor, mode_ids: torch.Tensor) -> dict:
        """One SIMLM corruption per example: returns input ``tokens``, ``mask`` (positions the
        MLM loss reads), ``noised`` (residues whose coordinates get noise), per-residue
        ``sigma`` and ``x_noisy`` (model units)."""
        V.check_tensor(tokens, "tokens", ndim=2, integer=True, low=0, high=20)
        b, n = tokens.shape
        V.check_tensor(x0, "x0", shape=(b, n, 3), floating=True)
        V.check_tensor(mode_ids, "mode_ids", shape=(b,), integer=True, low=0, high=len(MODES) - 1)
        n_mask = max(1, int(round(self.mask_rate * n)))
        order = torch.rand(b, n, generator=self.gen).argsort(1)
        ranked = torch.zeros(b, n, dtype=torch.bool).scatter_(1, order[:, :n_mask], True)
        full = torch.ones(b, n, dtype=torch.bool)
        none = torch.zeros(b, n, dtype=torch.bool)
        m = mode_ids[:, None]
        mask = torch.where(m == 0, none, torch.where(m == 3, full, ranked)) & (tokens < 20)
        local = ranked
        if self.local_window > 0:  # Mode 2 also noises the masked residues' chain neighbours
            w = self.local_window
            local = F.max_pool1d(ranked.float()[:, None], 2 * w + 1, stride=1, padding=w)[:, 0] > 0
        noised = torch.where(m == 1, local, torch.where(m == 3, none, full))
        sigma = self.sample_sigma(b)[:, None] * noised.float()
        x_noisy = x0 + sigma[..., None] * torch.randn(x0.shape, generator=self.gen)
        u = torch.rand(b, n, generator=self.gen)
        rand_tok = torch.randint(0, 20, (b, n), generator=self.gen)
        inp = torch.where(mask & (u < self.replace[0]), torch.full_like(tokens, MASK), tokens)
        inp = torch.where(
            mask & (u >= self.replace[0]) & (u < self.replace[0] + self.replace[1]), rand_tok, inp
        )
        return dict(tokens=inp, mask=mask, noised=noised, sigma=sigma, x_noisy=x_noisy)

    # ------------------------------------------------------------------ loss
    def losses(
        self,
        batch: dict,
        x0: torch.Tensor,
        targets: torch.Tensor,
        conf: torch.Tensor,
        use_mlm: bool,
    ) -> dict:
        model = self.model
        if self.objective == "sequence":  # hide the structure: pure σ_max noise everywhere
            sig = torch.full_like(batch["sigma"], model.sigma_max)
            x_in = sig[..., None] * torch.randn(x0.shape, generator=self.gen).to(x0.device)
            _, logits, _ = model(batch["tokens"], x_in, sig)
        else:
            den, logits, _ = model(batch["tokens"], batch["x_noisy"], batch["sigma"])
        out = {}
        mask = batch["mask"]
        if mask.any():
            out["mlm"] = F.cross_entropy(logits[mask], targets[mask])
        else:
            out["mlm"] = logits.sum() * 0.0
        if self.objective != "sequence":
            noised = batch["noised"]
            s = batch["sigma"].clamp_min(1e-6)
            sd = model.sigma_data
            lam = (s**2 + sd**2) / (s * sd) ** 2 if self.loss_weight == "edm" else 1.0
            w = lam * noised.float() * conf
            sq = ((den - x0) ** 2).mean(-1)
            out["mse"] = (w * sq).sum() / noised.float().sum().clamp_min(1.0)
            dp, dt = torch.cdist(den, den), torch.cdist(x0, x0)
            sel = (dt < self.dist_cutoff / UNIT).float()
            sel = sel * (1 - torch.eye(x0.shape[1], device=x0.device))
            err = (dp - dt).abs() if self.dist_loss == "l1" else (dp - dt) ** 2
            out["dist"] = (err * sel).sum() / sel.sum().clamp_min(1.0)
            out["lddt"] = smooth_lddt_loss(den * UNIT, x0 * UNIT)
        total = 0.0
        if self.objective != "structure" and use_mlm:
            total = total + out["mlm"]
        if self.objective != "sequence":
            total = total + self.lambda_struct * (out["mse"] + out["dist"] + out["lddt"])
        out["total"] = total
        return out

    # ------------------------------------------------------------------ loop
    def fit(self, data: ProteinSet, steps: int = 2000, progress=None) -> FlexProteinPretrainer:
        data = _check_set(data)
        steps = V.check_int(steps, "steps", low=1)
        model = self.model
        model.train()
        dev = next(model.parameters()).device
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        warm = max(1, int(0.05 * steps))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda k: (
                min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(k / steps, 1.0)))
            ),
        )
        mode_idx = torch.tensor([MODES.index(m) for m in self.modes])
        tokens_all = torch.as_tensor(data.tokens, dtype=torch.long)
        coords_all = torch.as_tensor(data.coords, dtype=torch.float32) / UNIT
        conf_all = torch.as_tensor(self.confidence_weight(data.plddt), dtype=torch.float32)
        mlm_start = int(self.mlm_warmup_frac * steps) if self.objective == "joint" else 0
        hist = {k: [] for k in ("total", "mlm", "mse", "dist", "lddt")}
        for step in range(steps):
            idx = torch.randint(0, len(data), (self.batch_size,), generator=self.gen)
            x0 = coords_all[idx]
            x0 = x0 - x0.mean(1, keepdim=True)
            rot = torch.as_tensor(random_rotations(self.batch_size, self.rng), dtype=torch.float32)
            x0 = torch.einsum("bij,bnj->bni", rot, x0)
            if self.mode_weights is None:
                pick = torch.randint(0, len(mode_idx), (self.batch_size,), generator=self.gen)
            else:
                probs = torch.as_tensor(self.mode_weights, dtype=torch.float64)
                pick = torch.multinomial(probs, self.batch_size, True, generator=self.gen)
            modes = mode_idx[pick]
            if self.objective == "sequence":  # MLM needs masked residues in every example
                modes = torch.full_like(modes, MODES.index("global"))
            batch = self.corrupt(tokens_all[idx], x0, modes)  # on the CPU generator, then moved
            batch = {k: v.to(dev) for k, v in batch.items()}
            out = self.losses(
                batch,
                x0.to(dev),
                tokens_all[idx].to(dev),
                conf_all[idx].to(dev),
                use_mlm=step >= mlm_start,
            )
            opt.zero_grad()
            out["total"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            for k in hist:
                v = out.get(k)
                hist[k].append(
                    float(v.detach())
                    if torch.is_tensor(v)
                    else float("nan")
                    if v is None
                    else float(v)
                )
            if progress is not None and step % 50 == 0:
                progress(step / steps)
        if not math.isfinite(hist["total"][-1]):
            raise FloatingPointError("training diverged (non-finite loss); lower lr")
        self.history = hist
        model.eval()
        return self
