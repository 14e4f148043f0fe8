"""DIAL and DIAL+: disentangle, identify and label-free removal of spurious directions.

``DIAL.fit(img_emb, class_text_emb, spurious_text_emb)`` runs the four steps on an unlabeled
pool: the distributional filter of the zero-shot margins (:mod:`.filtering`), a TopK SAE on
the pool (:mod:`.sae`), the identification of the SAE atoms tied to the spurious feature
(enrichment in the affected points times alignment with the spurious text directions, with a
class-alignment guard), and the removal of their span from the affected points with ``k`` and
``alpha`` chosen label-free (:mod:`.removal`). ``DIALPlus`` needs no spurious names: it ranks
the atoms by enrichment alone (guarded against class alignment) and names each selected atom
by its nearest vocabulary words. Both are scikit-learn transformers over image embeddings.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin

from iclr26 import validation as V
from iclr26.vision.dial.filtering import MarginFilter, _unit, check_embeddings, zero_shot_probs
from iclr26.vision.dial.removal import check_grid, remove_subspace, select_k_alpha, subspace_basis
from iclr26.vision.dial.sae import TopKSAE, train_sae
from iclr26.vision.dial.vocab import VOCAB


def _centred_unit(T: np.ndarray) -> np.ndarray:
    return _unit(T - T.mean(0, keepdims=True))


def max_abs_cos(atoms: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """``max_v |cos(u_j, d_v)|`` for every atom row u_j (zero-norm directions ignored)."""
    atoms = V.check_array(atoms, "atoms", ndim=2, dtype=np.float64)
    directions = V.check_array(directions, "directions", ndim=2, dtype=np.float64)
    if directions.shape[1] != atoms.shape[1]:
        raise ValueError(f"directions must have {atoms.shape[1]} columns, got "
                         f"{directions.shape[1]}")  # fmt: skip
    norms = np.linalg.norm(directions, axis=1)
    D = directions[norms > 1e-9]
    if len(D) == 0:
        return np.zeros(len(atoms))
    return np.abs(_unit(atoms) @ _unit(D).T).max(1)


def enrichment(codes: np.ndarray, affected: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Standardised activation gap of every latent between the affected and the unaffected
    points of the same predicted class, maximised over the classes:
    ``max_c (mean_{A, c} a_j - mean_{A^c, c} a_j) / pooled std``."""
    codes = V.check_array(codes, "codes", ndim=2, dtype=np.float64)
    affected = V.check_array(affected, "affected", ndim=1, dtype=bool, n_rows=len(codes))
    pred = V.check_array(pred, "pred", ndim=1, dtype=np.int64, n_rows=len(codes))
    best = np.full(codes.shape[1], -np.inf)
    for c in np.unique(pred):
        a = codes[(pred == c) & affected]
        b = codes[(pred == c) & ~affected]
        if len(a) < 2 or len(b) < 2:
            continue
        pooled = np.sqrt(0.5 * (a.var(0) + b.var(0)))
        eps = (a.mean(0) - b.mean(0)) / np.maximum(pooled, 1e-8)
        best = np.maximum(best, eps)
    if not np.isfinite(best).any():
        raise ValueError(
            "affected: no predicted class has at least 2 affected and 2 unaffected points, so "
            "no latent's enrichment can be measured (the pool is too small or too uniform)"
        )
    return np.where(np.isfinite(best), best, 0.0)


class _FilterRemoveBase(TransformerMixin, BaseEstimator):
    """Shared machinery: filter, candidate directions (subclass), (k, alpha) search, removal."""

    _max_directions_name = "k_grid"

    def _check_common(self):
        self.k_grid_ = check_grid(self.k_grid, "k_grid", integer=True, low=1)
        self.alpha_grid_ = check_grid(self.alpha_grid, "alpha_grid", integer=False, low=0.0,
                                      high=1.0)  # fmt: skip
        V.check_choice(self.apply_to, "apply_to", ("affected", "all"))
        V.check_scalar(self.temperature, "temperature", low=0.0, low_open=True)
        V.check_probability(self.min_agreement, "min_agreement")
        V.check_int(self.seed, "seed", low=0)
        if self.n_directions is not None:
            V.check_int(self.n_directions, "n_directions", low=1)
        if self.alpha is not None:
            V.check_scalar(self.alpha, "alpha", low=0.0, high=1.0)

    def _filter(self, E: np.ndarray, T: np.ndarray) -> np.ndarray:
        self.filter_ = MarginFilter(self.filter, self.quantile, self.seed)
        probs = zero_shot_probs(E, T, self.temperature)
        self.filter_.fit(probs)
        return self.filter_.predict(probs)

    def _choose(self, E, T, affected, directions) -> None:
        n_max = self.n_directions if self.n_directions is not None else max(self.k_grid_)
        self.directions_ = directions[:n_max]
        if self.n_directions is not None and self.alpha is not None:
            self.k_ = min(int(self.n_directions), len(self.directions_))
            self.alpha_ = float(self.alpha)
            self.search_ = []
        elif not affected.any() or affected.all():
            self.k_, self.alpha_, self.search_ = 0, 0.0, []
        else:
            ks = (self.n_directions,) if self.n_directions is not None else self.k_grid_
            alphas = (self.alpha,) if self.alpha is not None else self.alpha_grid_
            self.k_, self.alpha_, self.search_ = select_k_alpha(
                E, T, affected, self.directions_, ks, alphas, self.temperature,
                self.min_agreement, self.apply_to,
            )  # fmt: skip
        self.basis_ = subspace_basis(self.directions_, self.k_) if self.k_ > 0 else None

    def _check_fitted(self):
        if not hasattr(self, "class_text_emb_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def affected_mask(self, X) -> np.ndarray:
        """Which rows of ``X`` the fitted filter marks as affected."""
        self._check_fitted()
        E = check_embeddings(X, "X", d=self.n_features_in_)
        return self.filter_.predict(zero_shot_probs(E, self.class_text_emb_, self.temperature))

    def transform(self, X) -> np.ndarray:
        """Image embeddings with the chosen subspace removed from the affected rows (all rows
        with ``apply_to="all"``), re-normalised."""
        self._check_fitted()
        E = check_embeddings(X, "X", d=self.n_features_in_)
        if self.basis_ is None:
            return _unit(E)
        mask = None if self.apply_to == "all" else self.affected_mask(E)
        return remove_subspace(_unit(E), self.basis_, self.alpha_, mask)

    def predict_proba(self, X) -> np.ndarray:
        self._check_fitted()
        return zero_shot_probs(self.transform(X), self.class_text_emb_, self.temperature)

    def predict(self, X) -> np.ndarray:
        """Zero-shot class predictions from the debiased embeddings."""
        return self.predict_proba(X).argmax(1)

    def _finish_report(self, E, affected, extra):
        self.report_ = {
            "k": int(self.k_),
            "alpha": float(self.alpha_),
            "affected_fraction": float(affected.mean()),
            "filter": self.filter_.record_,
            "search": self.search_,
            "removal_disabled": self.k_ == 0,
            **extra,
        }


class DIAL(_FilterRemoveBase):
    """DIAL: the spurious attribute's value names are known (``spurious_text_emb``, e.g. the
    text embeddings of "water background" and "land background").

    Atoms are ranked by ``enrichment * spurious alignment`` over those whose class alignment
    ``kappa_j`` is below their spurious alignment ``sigma_j``. ``sae`` may be a trained
    :class:`TopKSAE` (else one of width ``sae_width * d`` and sparsity ``sae_k`` is trained on
    the pool); ``n_directions``/``alpha`` fix k/alpha instead of searching the grid."""

    def __init__(
        self,
        sae: TopKSAE | None = None,
        sae_width: int = 8,
        sae_k: int = 16,
        sae_steps: int = 2000,
        sae_lr: float = 1e-3,
        sae_batch: int = 256,
        filter: str = "gmm",
        quantile: float = 0.2,
        k_grid=range(1, 9),
        alpha_grid=(0.25, 0.5, 0.75, 1.0),
        apply_to: str = "affected",
        temperature: float = 0.01,
        min_agreement: float = 0.98,
        n_directions: int | None = None,
        alpha: float | None = None,
        seed: int = 0,
        device: str = "cpu",
    ):
        self.sae = sae
        self.sae_width = sae_width
        self.sae_k = sae_k
        self.sae_steps = sae_steps
        self.sae_lr = sae_lr
        self.sae_batch = sae_batch
        self.filter = filter
        self.quantile = quantile
        self.k_grid = k_grid
        self.alpha_grid = alpha_grid
        self.apply_to = apply_to
        self.temperature = temperature
        self.min_agreement = min_agreement
        self.n_directions = n_directions
        self.alpha = alpha
        self.seed = seed
        self.device = device

    # -- steps 1-2
    def _fit_sae(self, E: np.ndarray) -> TopKSAE:
        d = E.shape[1]
        if self.sae is not None:
            if not isinstance(self.sae, TopKSAE):
                raise TypeError(f"sae must be a TopKSAE or None, got {type(self.sae).__name__}")
            if self.sae.d != d:
                raise ValueError(f"sae has d={self.sae.d}, but X has {d} columns")
            return self.sae
        width = V.check_int(self.sae_width, "sae_width", low=1)
        k = V.check_int(self.sae_k, "sae_k", low=1)
        if k > width * d:
            raise ValueError(f"sae_k must be <= sae_width * d = {width * d}, got {k}")
        return train_sae(E.astype(np.float32), width * d, k, steps=self.sae_steps,
                         lr=self.sae_lr, batch_size=self.sae_batch, seed=self.seed,
                         device=self.device)  # fmt: skip

    def _scores(self, E, T, affected, pred, sae, spurious):
        with torch.no_grad():
            codes = sae.encode(torch.from_numpy(E.astype(np.float32)).to(sae.W_d.device))
        codes = codes.cpu().numpy().astype(np.float64)
        atoms = sae.atoms.cpu().numpy().astype(np.float64)
        eps = enrichment(codes, affected, pred)
        kappa = max_abs_cos(atoms, _centred_unit(T))
        sigma = max_abs_cos(atoms, _centred_unit(spurious)) if spurious is not None else None
        return atoms, eps, kappa, sigma

    def _rank(self, eps, kappa, sigma):
        eligible = (kappa < sigma) & (eps > 0)
        score = np.where(eligible, eps * sigma, -np.inf)
        return score

    def _check_sae_capacity(self, sae: TopKSAE) -> None:
        need = self.n_directions if self.n_directions is not None else max(self.k_grid_)
        name = "n_directions" if self.n_directions is not None else "k_grid"
        if need > sae.n_latents:
            raise ValueError(
                f"{name} asks for up to {need} directions, but the SAE has only "
                f"{sae.n_latents} latents"
            )

    def fit(self, X, class_text_emb, spurious_text_emb=None):
        """Fit on unlabeled image embeddings ``X`` (n, d), the class prompts' text embeddings
        (n_classes, d) and the spurious values' text embeddings (n_values >= 2, d)."""
        self._check_common()
        E = _unit(check_embeddings(X, "X", min_rows=4))
        T = check_embeddings(class_text_emb, "class_text_emb", d=E.shape[1])
        if len(T) < 2:
            raise ValueError(f"class_text_emb must hold at least 2 classes, got {len(T)}")
        S = self._spurious(spurious_text_emb, E.shape[1])
        if self.sae is not None:
            self._check_sae_capacity(self.sae)
        elif max(self.k_grid_) > V.check_int(self.sae_width, "sae_width", low=1) * E.shape[1]:
            raise ValueError(
                f"k_grid asks for up to {max(self.k_grid_)} directions, but the SAE would have "
                f"only {self.sae_width * E.shape[1]} latents"
            )
        self.n_features_in_ = E.shape[1]
        self.class_text_emb_ = T
        affected = self._filter(E, T)
        pred = zero_shot_probs(E, T, self.temperature).argmax(1)
        sae = self._fit_sae(E)
        self._check_sae_capacity(sae)
        self.sae_ = sae
        atoms, eps, kappa, sigma = self._scores(E, T, affected, pred, sae, S)
        score = self._rank(eps, kappa, sigma)
        order = [j for j in np.argsort(-score, kind="stable") if np.isfinite(score[j])]
        self.atom_ids_ = np.array(order[: max(self.k_grid_ + (self.n_directions or 1,))],
                                  dtype=np.int64)  # fmt: skip
        directions = atoms[self.atom_ids_] if len(self.atom_ids_) else np.zeros((0, E.shape[1]))
        if len(directions) == 0:
            self.directions_, self.k_, self.alpha_, self.search_ = directions, 0, 0.0, []
            self.basis_ = None
        else:
            self._choose(E, T, affected, directions)
        self.scores_ = {"enrichment": eps, "class_alignment": kappa, "spurious_alignment": sigma}
        self._finish_report(E, affected, self._atom_report(atoms, eps, kappa, sigma))
        return self

    def _spurious(self, spurious_text_emb, d):
        if spurious_text_emb is None:
            raise ValueError(
                "spurious_text_emb is required by DIAL (the text embeddings of the spurious "
                "attribute's values); use DIALPlus when they are not known"
            )
        S = check_embeddings(spurious_text_emb, "spurious_text_emb", d=d)
        if len(S) < 2:
            raise ValueError(f"spurious_text_emb must hold at least 2 values, got {len(S)}")
        return S

    def _atom_report(self, atoms, eps, kappa, sigma):
        rows = []
        for j in self.atom_ids_[: self.k_]:
            row = {"atom": int(j), "enrichment": float(eps[j]), "class_alignment": float(kappa[j])}
            if sigma is not None:
                row["spurious_alignment"] = float(sigma[j])
            rows.append(row)
        return {"selected": rows, "sae_latents": int(atoms.shape[0])}


class DIALPlus(DIAL):
    """DIAL+: the spurious feature is not known. Atoms are ranked by enrichment alone among
    those whose class alignment is below the ``kappa_quantile`` quantile of all atoms'; each
    selected atom is named by its ``top_words`` nearest vocabulary words (cosine of the atom
    with the mean-centred vocabulary text embeddings), when ``vocab_text_emb`` is given.

    ``fit(X, class_text_emb)`` takes no spurious names."""

    def __init__(
        self,
        vocab_text_emb=None,
        vocab=VOCAB,
        kappa_quantile: float = 0.5,
        top_words: int = 3,
        sae: TopKSAE | None = None,
        sae_width: int = 8,
        sae_k: int = 16,
        sae_steps: int = 2000,
        sae_lr: float = 1e-3,
        sae_batch: int = 256,
        filter: str = "gmm",
        quantile: float = 0.2,
        k_grid=range(1, 9),
        alpha_grid=(0.25, 0.5, 0.75, 1.0),
        apply_to: str = "affected",
        temperature: float = 0.01,
        min_agreement: float = 0.98,
        n_directions: int | None = None,
        alpha: float | None = None,
        seed: int = 0,
        device: str = "cpu",
    ):
        super().__init__(sae, sae_width, sae_k, sae_steps, sae_lr, sae_batch, filter, quantile,
                         k_grid, alpha_grid, apply_to, temperature, min_agreement, n_directions,
                         alpha, seed, device)  # fmt: skip
        self.vocab_text_emb = vocab_text_emb
        self.vocab = vocab
        self.kappa_quantile = kappa_quantile
        self.top_words = top_words

    def fit(self, X, class_text_emb, spurious_text_emb=None):
        if spurious_text_emb is not None:
            raise ValueError("spurious_text_emb must be None for DIALPlus (it finds the "
                             "spurious directions itself); use DIAL when they are known")  # fmt: skip
        V.check_probability(self.kappa_quantile, "kappa_quantile")
        V.check_int(self.top_words, "top_words", low=1)
        if self.vocab_text_emb is not None:
            from iclr26.vision.dial.text import check_texts

            words = check_texts(self.vocab, "vocab")
            W = check_embeddings(self.vocab_text_emb, "vocab_text_emb")
            if len(W) != len(words):
                raise ValueError(f"vocab_text_emb must have one row per vocab word "
                                 f"({len(words)}), got {len(W)}")  # fmt: skip
        return super().fit(X, class_text_emb, spurious_text_emb=_NOT_USED)

    def _spurious(self, spurious_text_emb, d):
        if self.vocab_text_emb is not None:
            W = check_embeddings(self.vocab_text_emb, "vocab_text_emb")
            if W.shape[1] != d:
                raise ValueError(f"vocab_text_emb must have {d} columns, got {W.shape[1]}")
        return None

    def _rank(self, eps, kappa, sigma):
        kappa_max = np.quantile(kappa, self.kappa_quantile)
        eligible = (kappa < kappa_max) & (eps > 0)
        return np.where(eligible, eps, -np.inf)

    def _atom_report(self, atoms, eps, kappa, sigma):
        out = super()._atom_report(atoms, eps, kappa, sigma)
        if self.vocab_text_emb is None:
            return out
        words = list(self.vocab)
        W = _centred_unit(check_embeddings(self.vocab_text_emb, "vocab_text_emb"))
        for row in out["selected"]:
            sims = _unit(atoms[row["atom"]][None]) @ W.T
            top = np.argsort(-sims[0])[: self.top_words]
            row["words"] = [words[i] for i in top]
        return out


_NOT_USED = object()
