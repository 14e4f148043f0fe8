"""PaAno: patch embeddings + memory bank, a PatchCore-style detector for time series.

Fit: z-score the anomaly-free training series, cut it into all stride-1 patches of length w,
train the 1-D CNN encoder for ``n_iters`` minibatch steps with the triplet loss (Eq. for
L_triplet) plus the linearly decaying pretext loss (lambda from 1 to 0 over the first 10% of
steps), AdamW with a cosine learning-rate decay from lr to lr/10, keeping the weights of the
lowest minibatch loss; then embed every training patch and keep a k-means coreset of the
embeddings as the memory bank. Score: embed every patch of the series, take the mean distance
to its k nearest bank entries, and give each time step the mean score of the patches covering it.
"""

from __future__ import annotations

import copy
import logging
import math

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.timeseries.paano.base import SeriesDetector
from iclr26.timeseries.paano.encoder import PatchEncoder
from iclr26.timeseries.paano.losses import pretext_loss, pretext_weight, triplet_loss
from iclr26.timeseries.paano.memory import MemoryBank
from iclr26.timeseries.paano.patches import (
    as_series,
    positive_indices,
    sliding_patches,
    spread_to_time_steps,
)


class PaAno(SeriesDetector):
    """Patch-based representation learning anomaly detector (PaAno, ICLR 2026). Training logs
    its progress every 10 % of ``n_iters`` through ``logging`` (logger
    ``iclr26.timeseries.paano.detector``, level INFO).

    Parameters follow the paper and its official code: ``patch_size`` w (64; 96 in the official
    univariate script), ``n_iters`` 200, ``batch_size`` 512 anchors, ``lr`` 1e-4 (cosine to
    lr/10), ``radius`` r = 2 for positives, triplet ``margin`` 0.5, ``n_pretext_neg`` U = 5,
    ``bank_ratio`` 0.1 with at least ``min_bank_size`` 500 entries, ``top_k`` 3, Euclidean
    ``metric``. ``triplet_scale`` multiplies the triplet loss (None: 1/10 for univariate input,
    1 otherwise, as the official code does). ``use_triplet`` / ``use_pretext`` /
    ``pretext_decay`` switch the losses for ablations; with both losses off the encoder stays at
    its random initialisation.
    """

    def __init__(
        self,
        patch_size: int = 64,
        n_iters: int = 200,
        batch_size: int = 512,
        lr: float = 1e-4,
        weight_decay: float = 1e-4,
        radius: int = 2,
        margin: float = 0.5,
        n_pretext_neg: int = 5,
        pretext_fraction: float = 0.1,
        bank_ratio: float = 0.1,
        min_bank_size: int = 500,
        top_k: int = 3,
        metric: str = "euclidean",
        revin: bool = False,
        width_mult: float = 1.0,
        triplet_scale: float | None = None,
        use_triplet: bool = True,
        use_pretext: bool = True,
        pretext_decay: bool = True,
        contamination: float = 0.01,
        device: str = "cpu",
        random_state: int | None = 0,
    ):
        self.patch_size = patch_size
        self.n_iters = n_iters
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.radius = radius
        self.margin = margin
        self.n_pretext_neg = n_pretext_neg
        self.pretext_fraction = pretext_fraction
        self.bank_ratio = bank_ratio
        self.min_bank_size = min_bank_size
        self.top_k = top_k
        self.metric = metric
        self.revin = revin
        self.width_mult = width_mult
        self.triplet_scale = triplet_scale
        self.use_triplet = use_triplet
        self.use_pretext = use_pretext
        self.pretext_decay = pretext_decay
        self.contamination = contamination
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        super()._check_params()
        ints = {"patch_size": 2, "n_iters": 0, "batch_size": 2, "radius": 1, "top_k": 1}
        for name, low in ints.items():
            setattr(self, name, V.check_int(getattr(self, name), name, low=low))
        self.n_pretext_neg = V.check_int(self.n_pretext_neg, "n_pretext_neg", low=0)
        self.min_bank_size = V.check_int(self.min_bank_size, "min_bank_size", low=0)
        self.bank_ratio = V.check_scalar(
            self.bank_ratio, "bank_ratio", low=0.0, high=1.0, low_open=True
        )
        self.lr = V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        self.weight_decay = V.check_scalar(self.weight_decay, "weight_decay", low=0.0)
        self.margin = V.check_scalar(self.margin, "margin", low=0.0)
        self.width_mult = V.check_scalar(self.width_mult, "width_mult", low=0.0, low_open=True)
        self.pretext_fraction = V.check_probability(self.pretext_fraction, "pretext_fraction")
        if self.triplet_scale is not None:
            self.triplet_scale = V.check_scalar(self.triplet_scale, "triplet_scale", low=0.0)
        V.check_choice(
            self.metric, "metric", ("euclidean", "cosine", "manhattan", "l2", "l1", "cityblock")
        )
        for name in ("revin", "use_triplet", "use_pretext", "pretext_decay"):
            V.check_bool(getattr(self, name), name)
        if self.random_state is not None:
            V.check_int(self.random_state, "random_state", low=0)

    def _min_length(self) -> int:
        return int(self.patch_size)

    # ------------------------------------------------------------------ training
    def _fit(self, z: np.ndarray) -> None:
        seed = self.random_state
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        seed = int(seed)
        rng = np.random.default_rng(seed)
        generator = torch.Generator().manual_seed(seed)
        w = int(self.patch_size)
        patches = torch.from_numpy(sliding_patches(z, w))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = PatchEncoder(z.shape[1], self.width_mult, revin=self.revin)
        model = model.to(self.device)
        scale = self.triplet_scale
        if scale is None:
            scale = 0.1 if z.shape[1] == 1 else 1.0
        self.loss_history_ = []
        if self.n_iters > 0 and (self.use_triplet or self.use_pretext):
            self._train(model, patches, rng, generator, float(scale))
        model.eval()
        self.model_ = model
        train_emb = self._embed(patches)
        self.memory_ = MemoryBank(self.top_k, self.metric).fit(
            train_emb, self.bank_ratio, self.min_bank_size, random_state=seed
        )
        self.train_embeddings_ = train_emb

    def _train(self, model, patches, rng, generator, scale: float) -> None:
        n_patches = patches.shape[0]
        w = int(self.patch_size)
        batch = min(int(self.batch_size), n_patches)
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        final_lr = self.lr / 10.0
        best_loss, best_state = math.inf, copy.deepcopy(model.state_dict())
        device = self.device
        model.train()
        for it in range(int(self.n_iters)):
            # cosine decay from lr to lr/10, evaluated at the step's 1-based index
            cos = 0.5 * (1 + math.cos(math.pi * (it + 1) / self.n_iters))
            for group in opt.param_groups:
                group["lr"] = final_lr + (self.lr - final_lr) * cos
            anchors = rng.choice(n_patches, size=batch, replace=False)
            positives = positive_indices(anchors, n_patches, self.radius, rng)
            lam = 0.0
            if self.use_pretext:
                lam = (
                    pretext_weight(it, self.n_iters, self.pretext_fraction)
                    if self.pretext_decay
                    else 1.0
                )
            index = [anchors, positives]
            previous = anchors - w
            has_prev = previous >= 0
            if lam > 0:
                index.append(np.where(has_prev, previous, anchors))
            h = model(patches[np.concatenate(index)].to(device))
            h_anchor, h_pos = h[:batch], h[batch : 2 * batch]
            loss = h.sum() * 0.0
            if self.use_triplet:
                trip = triplet_loss(model.project(h_anchor), model.project(h_pos), self.margin)
                loss = loss + scale * trip
            if lam > 0:
                mask = torch.from_numpy(has_prev).to(device)
                pre = pretext_loss(
                    model, h_anchor, h[2 * batch :], mask, self.n_pretext_neg, generator
                )
                loss = loss + lam * pre
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            value = float(loss.detach())
            self.loss_history_.append(value)
            if value < best_loss:
                best_loss, best_state = value, copy.deepcopy(model.state_dict())
            if (it + 1) % max(1, int(self.n_iters) // 10) == 0 or it + 1 == int(self.n_iters):
                logging.getLogger(__name__).info(
                    "PaAno encoder: iteration %d/%d, loss %.4f", it + 1, int(self.n_iters), value
                )
        model.load_state_dict(best_state)

    # ------------------------------------------------------------------ scoring
    @torch.no_grad()
    def _embed(self, patches: torch.Tensor, chunk: int = 4096) -> np.ndarray:
        self.model_.eval()
        parts = [
            self.model_(patches[i : i + chunk].to(self.device)).cpu().numpy()
            for i in range(0, patches.shape[0], chunk)
        ]
        return np.concatenate(parts).astype(np.float32)

    def patch_scores(self, X) -> np.ndarray:
        """Score of every stride-1 patch of X (T - w + 1,), before spreading to time steps."""
        self._check_fitted()
        x = as_series(X, "X")
        if x.shape[1] != self.n_channels_:
            raise ValueError(f"X has {x.shape[1]} channels, the detector {self.n_channels_}")
        return self._patch_scores(self._standardise(x))

    def _patch_scores(self, z: np.ndarray) -> np.ndarray:
        patches = torch.from_numpy(sliding_patches(z, int(self.patch_size)))
        return self.memory_.score(self._embed(patches))

    def _training_scores(self, z: np.ndarray) -> np.ndarray:
        # Held out: each training patch is scored against the bank entries that do not
        # overlap it, as a patch of new data is; scoring it against a bank holding itself
        # (distance ~0) would put the threshold far too low and flag nearly every new step.
        w = int(self.patch_size)
        scores = self.memory_.held_out_score(self.train_embeddings_, exclusion=w)
        return spread_to_time_steps(scores, w)

    def _score(self, z: np.ndarray) -> np.ndarray:
        return spread_to_time_steps(self._patch_scores(z), int(self.patch_size))

    def n_parameters(self, part: str = "encoder") -> int:
        """Parameter count of the fitted (or a fresh) model: ``encoder`` (conv body) or ``all``
        (with the projection and pretext heads)."""
        V.check_choice(part, "part", ("encoder", "all"))
        model = getattr(self, "model_", None) or PatchEncoder(
            getattr(self, "n_channels_", 1), self.width_mult, revin=self.revin
        )
        if part == "encoder":
            return model.encoder_parameters()
        return sum(p.numel() for p in model.parameters())
