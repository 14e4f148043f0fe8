"""Baselines for incomplete multi-view clustering and the clustering metrics."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import normalized_mutual_info_score
from sklearn.preprocessing import StandardScaler

from iclr26 import validation as V
from iclr26.classic.arsl_imvc.model import check_views


def _labels(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true = V.check_array(y_true, "y_true", ndim=1, dtype=None)
    y_pred = V.check_array(y_pred, "y_pred", ndim=1, dtype=None, n_rows=y_true.shape[0])
    return y_true, y_pred


def recovery_error(recovered, truth, mask) -> float:
    """Squared error of the recovered missing rows over that of mean imputation, summed over
    the views: 0 is exact recovery, 1 is no better than each view's observed mean."""
    if not isinstance(truth, (list, tuple)) or not isinstance(recovered, (list, tuple)):
        raise TypeError("recovered and truth must be lists of (n, d_v) arrays")
    truth, mask = check_views(list(truth), mask)
    if len(recovered) != len(truth):
        raise ValueError(f"recovered has {len(recovered)} views, truth has {len(truth)}")
    recovered = [
        V.check_array(r, f"recovered[{v}]", shape=t.shape, dtype=np.float64)
        for v, (r, t) in enumerate(zip(recovered, truth))
    ]
    if mask.all():
        raise ValueError("mask: no view is missing, there is nothing to recover")
    error = baseline = 0.0
    for v, (r, t) in enumerate(zip(recovered, truth)):
        miss, obs = ~mask[:, v], mask[:, v]
        error += float(np.sum((r[miss] - t[miss]) ** 2))
        baseline += float(np.sum((t[miss] - t[obs].mean(axis=0)) ** 2))
    return error / baseline if baseline > 0 else float("nan")


def cross_view_ridge(views, mask=None, alphas=(1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)):
    """Recover missing rows by ridge regression from the views each sample has.

    For every view v and every pattern of available views among the samples missing v, a
    ``RidgeCV`` (leave-one-out choice among ``alphas``) maps the concatenated available views to
    view v, trained on the samples that observe all of them; a pattern with fewer than two such
    samples falls back to the mean. Returns the completed views (observed rows unchanged)."""
    from sklearn.linear_model import RidgeCV

    arrays, mask = check_views(views, mask)
    alphas = V.check_array(alphas, "alphas", ndim=1, dtype=np.float64, low=0.0)
    if not np.all(alphas > 0):
        raise ValueError("alphas must be > 0")
    out = []
    for v, a in enumerate(arrays):
        rec = np.where(mask[:, v : v + 1], np.nan_to_num(a), a[mask[:, v]].mean(axis=0))
        missing = ~mask[:, v]
        for pattern in np.unique(mask[missing], axis=0):
            others = [w for w in range(len(arrays)) if w != v and pattern[w]]
            rows = missing & np.all(mask == pattern, axis=1)
            train = mask[:, v] & mask[:, others].all(axis=1)
            if not others or train.sum() < 2:
                continue
            features = [arrays[w] for w in others]
            model = RidgeCV(alphas=alphas).fit(np.hstack([f[train] for f in features]), a[train])
            rec[rows] = model.predict(np.hstack([f[rows] for f in features]))
        out.append(rec)
    return out


def mean_impute(views, mask=None):
    """Each view's missing rows replaced by the mean of its observed rows."""
    arrays, mask = check_views(views, mask)
    return _mean_imputed(arrays, mask)


class _ViewsClusterer(ClusterMixin, BaseEstimator):
    """Shared tags and parameter checks of the list-of-views clusterers.

    Like :class:`ARSLIMVC` they take a list of (n, d_v) views, so the tags declare
    ``two_d_array=False``; ``check_estimator`` runs its cloning check only and skips its data
    checks, and the data-free API checks pass (tested). No ``predict``: transductive."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # fit takes a list of (n, d_v) views
        tags.input_tags.allow_nan = True  # NaN rows mark missing views
        return tags

    def _check(self, views, mask):
        arrays, mask = check_views(views, mask)
        V.check_int(self.n_clusters, "n_clusters", low=2, high=mask.shape[0])
        return arrays, mask


def clustering_acc(y_true, y_pred) -> float:
    """Accuracy under the best one-to-one matching of clusters to classes (Hungarian)."""
    y_true, y_pred = _labels(y_true, y_pred)
    classes, t = np.unique(y_true, return_inverse=True)
    clusters, p = np.unique(y_pred, return_inverse=True)
    table = np.zeros((len(clusters), len(classes)))
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(y_true))


def purity(y_true, y_pred) -> float:
    """Fraction of samples whose cluster's majority class is their class."""
    y_true, y_pred = _labels(y_true, y_pred)
    _, t = np.unique(y_true, return_inverse=True)
    _, p = np.unique(y_pred, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1))
    np.add.at(table, (p, t), 1)
    return float(table.max(axis=1).sum() / len(t))


def scores(y_true, y_pred) -> dict[str, float]:
    """ACC (Hungarian), NMI and purity."""
    y_true, y_pred = _labels(y_true, y_pred)
    return {
        "acc": clustering_acc(y_true, y_pred),
        "nmi": float(normalized_mutual_info_score(y_true, y_pred)),
        "purity": purity(y_true, y_pred),
    }


def _mean_imputed(arrays, mask):
    out = []
    for v, a in enumerate(arrays):
        obs = mask[:, v]
        out.append(np.where(obs[:, None], np.nan_to_num(a), a[obs].mean(axis=0)))
    return out


class MeanImputeConcatKMeans(_ViewsClusterer):
    """Mean-impute each view, standardise, concatenate, k-means (10 restarts)."""

    def __init__(self, n_clusters: int = 8, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        arrays, mask = self._check(views, mask)
        blocks = [
            StandardScaler().fit_transform(a) / np.sqrt(a.shape[1])
            for a in _mean_imputed(arrays, mask)
        ]
        self.labels_ = KMeans(
            self.n_clusters, n_init=10, random_state=self.random_state
        ).fit_predict(np.hstack(blocks))
        return self


class BestSingleView(_ViewsClusterer):
    """k-means on each mean-imputed view; ``labels_per_view_`` lets a caller report the best
    view in hindsight (an oracle choice, favourable to this baseline)."""

    def __init__(self, n_clusters: int = 8, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        arrays, mask = self._check(views, mask)
        self.labels_per_view_ = [
            KMeans(self.n_clusters, n_init=10, random_state=self.random_state).fit_predict(
                StandardScaler().fit_transform(a)
            )
            for a in _mean_imputed(arrays, mask)
        ]
        self.labels_ = self.labels_per_view_[0]
        return self


class IncompleteGraphFusion(_ViewsClusterer):
    """Imputation-free graph fusion: per-view kNN Gaussian affinities on observed samples,
    averaged over the views both samples have, then spectral clustering."""

    def __init__(self, n_clusters: int = 8, n_neighbors: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        from sklearn.neighbors import NearestNeighbors

        arrays, mask = self._check(views, mask)
        V.check_int(self.n_neighbors, "n_neighbors", low=1)
        n = mask.shape[0]
        total = np.zeros((n, n))
        count = np.zeros((n, n))
        for v, a in enumerate(arrays):
            obs = np.flatnonzero(mask[:, v])
            x = StandardScaler().fit_transform(a[obs])
            k = min(self.n_neighbors, len(obs) - 1)
            dist, nbr = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x)
            sigma = np.median(dist[:, 1:]) + 1e-12
            w = np.zeros((len(obs), len(obs)))
            rows = np.repeat(np.arange(len(obs)), k)
            w[rows, nbr[:, 1:].ravel()] = np.exp(-(dist[:, 1:].ravel() ** 2) / (2 * sigma**2))
            w = np.maximum(w, w.T)
            total[np.ix_(obs, obs)] += w
            count[np.ix_(obs, obs)] += 1
        affinity = np.where(count > 0, total / np.maximum(count, 1), 0.0)
        affinity += 1e-8  # keep the graph connected across pairs with no shared view
        self.affinity_ = affinity
        self.labels_ = SpectralClustering(
            self.n_clusters, affinity="precomputed", random_state=self.random_state
        ).fit_predict(affinity)
        return self
