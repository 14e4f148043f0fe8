"""Baselines for incomplete multi-view clustering and the clustering metrics."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import normalized_mutual_info_score
from sklearn.preprocessing import StandardScaler

from iclr26.classic.arsl_imvc.model import check_views


def clustering_acc(y_true, y_pred) -> float:
    """Accuracy under the best one-to-one matching of clusters to classes (Hungarian)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError("label arrays differ in length")
    classes, t = np.unique(y_true, return_inverse=True)
    clusters, p = np.unique(y_pred, return_inverse=True)
    table = np.zeros((len(clusters), len(classes)))
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(y_true))


def purity(y_true, y_pred) -> float:
    _, t = np.unique(y_true, return_inverse=True)
    _, p = np.unique(y_pred, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1))
    np.add.at(table, (p, t), 1)
    return float(table.max(axis=1).sum() / len(t))


def scores(y_true, y_pred) -> dict[str, float]:
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


class MeanImputeConcatKMeans(ClusterMixin, BaseEstimator):
    """Mean-impute each view, standardise, concatenate, k-means (10 restarts)."""

    def __init__(self, n_clusters: int = 8, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        arrays, mask = check_views(views, mask)
        blocks = [
            StandardScaler().fit_transform(a) / np.sqrt(a.shape[1])
            for a in _mean_imputed(arrays, mask)
        ]
        self.labels_ = KMeans(
            self.n_clusters, n_init=10, random_state=self.random_state
        ).fit_predict(np.hstack(blocks))
        return self


class BestSingleView(ClusterMixin, BaseEstimator):
    """k-means on each mean-imputed view; ``labels_per_view_`` lets a caller report the best
    view in hindsight (an oracle choice, favourable to this baseline)."""

    def __init__(self, n_clusters: int = 8, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        arrays, mask = check_views(views, mask)
        self.labels_per_view_ = [
            KMeans(self.n_clusters, n_init=10, random_state=self.random_state).fit_predict(
                StandardScaler().fit_transform(a)
            )
            for a in _mean_imputed(arrays, mask)
        ]
        self.labels_ = self.labels_per_view_[0]
        return self


class IncompleteGraphFusion(ClusterMixin, BaseEstimator):
    """Imputation-free graph fusion: per-view kNN Gaussian affinities on observed samples,
    averaged over the views both samples have, then spectral clustering."""

    def __init__(self, n_clusters: int = 8, n_neighbors: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    def fit(self, views, y=None, mask=None):
        from sklearn.neighbors import NearestNeighbors

        arrays, mask = check_views(views, mask)
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
