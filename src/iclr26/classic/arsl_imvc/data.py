"""Multi-view data: digits with three hand-built views, synthetic multi-view blobs, and the
missing-view protocol."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data import load


def multiview_digits(n: int | None = None, random_state=None):
    """scikit-learn's 8x8 digits as three views: 64 raw pixels; 2x2 mean-pooling (16) plus
    row and column intensity profiles (16); HOG (8 orientations, 4x4 cells, 1x1 blocks: 32).
    ``n``: stratified subsample size (all 1,797 when None). Returns (views, y)."""
    from skimage.feature import hog

    data = load("digits")
    X, y = data.X, data.y.astype(int)
    n = V.check_int(n, "n", low=10, high=len(y), allow_none=True)
    if n is not None:
        rng = np.random.default_rng(random_state)
        idx = []
        for c in np.unique(y):
            members = np.flatnonzero(y == c)
            take = max(1, round(n * len(members) / len(y)))
            idx.extend(rng.choice(members, min(take, len(members)), replace=False))
        idx = np.sort(np.array(idx))
        X, y = X[idx], y[idx]
    imgs = X.reshape(-1, 8, 8)
    pooled = imgs.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(imgs), 16)
    profiles = np.concatenate([imgs.sum(axis=2), imgs.sum(axis=1)], axis=1)
    v2 = np.concatenate([pooled, profiles], axis=1)
    v3 = np.stack(
        [
            hog(im / 16.0, orientations=8, pixels_per_cell=(4, 4), cells_per_block=(1, 1))
            for im in imgs
        ]
    )
    return [X.copy(), v2, v3], y


def make_multiview_blobs(
    n: int = 300,
    n_clusters: int = 5,
    n_views: int = 3,
    dims=(20, 30, 40),
    latent_dim: int = 8,
    separation: float = 3.0,
    noise: float = 0.1,
    random_state=None,
):
    """Views = tanh of different random projections of a shared Gaussian-mixture latent, plus
    noise. Returns (views, y)."""
    n = V.check_int(n, "n", low=2)
    n_clusters = V.check_int(n_clusters, "n_clusters", low=1, high=n)
    n_views = V.check_int(n_views, "n_views", low=2)
    latent_dim = V.check_int(latent_dim, "latent_dim", low=1)
    separation = V.check_scalar(separation, "separation", low=0.0)
    noise = V.check_scalar(noise, "noise", low=0.0)
    if isinstance(dims, (int, np.integer)) or len(dims) != n_views:
        raise ValueError(f"dims must give one dimension per view ({n_views}), got {dims!r}")
    dims = [V.check_int(d, f"dims[{i}]", low=1) for i, d in enumerate(dims)]
    rng = np.random.default_rng(random_state)
    centres = separation * rng.standard_normal((n_clusters, latent_dim))
    y = np.arange(n) % n_clusters
    rng.shuffle(y)
    z = centres[y] + rng.standard_normal((n, latent_dim))
    views = []
    for d in dims:
        proj = rng.standard_normal((latent_dim, d)) / np.sqrt(latent_dim)
        views.append(np.tanh(z @ proj) + noise * rng.standard_normal((n, d)))
    return views, y


def make_latent_views(
    n: int = 150,
    n_clusters: int = 3,
    dims=(20, 30, 40),
    latent_dim: int = 5,
    separation: float = 3.0,
    noise: float = 0.01,
    random_state=None,
):
    """Views built to ARSL-IMVC's premise: X^v = H P^vT + noise with one shared Gaussian-mixture
    latent H (n x k) and orthonormal P^v (d_v x k). Returns (views, y)."""
    n = V.check_int(n, "n", low=2)
    n_clusters = V.check_int(n_clusters, "n_clusters", low=1, high=n)
    latent_dim = V.check_int(latent_dim, "latent_dim", low=1)
    separation = V.check_scalar(separation, "separation", low=0.0)
    noise = V.check_scalar(noise, "noise", low=0.0)
    if isinstance(dims, (int, np.integer)) or len(dims) < 2:
        raise ValueError(f"dims must give one dimension per view (at least two), got {dims!r}")
    dims = [V.check_int(d, f"dims[{i}]", low=latent_dim) for i, d in enumerate(dims)]
    rng = np.random.default_rng(random_state)
    centres = separation * rng.standard_normal((n_clusters, latent_dim))
    y = np.arange(n) % n_clusters
    latent = centres[y] + rng.standard_normal((n, latent_dim))
    views = []
    for d in dims:
        basis, _ = np.linalg.qr(rng.standard_normal((d, latent_dim)))
        views.append(latent @ basis.T + noise * rng.standard_normal((n, d)))
    return views, y


def make_missing_views(views, missing_rate: float, y=None, random_state=None, max_tries=100):
    """A fraction ``missing_rate`` of samples become incomplete: each loses a uniformly random
    non-empty proper subset of its views (rows set to NaN). With ``y``, every view keeps at least
    one sample per class. Returns (views_with_nan, observed_mask (n, V))."""
    missing_rate = V.check_probability(missing_rate, "missing_rate")
    V.check_int(max_tries, "max_tries", low=1)
    if not isinstance(views, (list, tuple)) or len(views) < 2:
        raise TypeError("views must be a list of at least two (n, d_v) arrays")
    arrays = [
        V.check_array(a, f"views[{v}]", ndim=2, dtype=np.float64) for v, a in enumerate(views)
    ]
    n, n_views = arrays[0].shape[0], len(arrays)
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"views have different numbers of samples: {[a.shape[0] for a in arrays]}")
    if y is not None:
        y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=n)
    rng = np.random.default_rng(random_state)
    subsets = np.array(
        [[(code >> v) & 1 for v in range(n_views)] for code in range(1, 2**n_views - 1)],
        dtype=bool,
    )  # the non-empty proper subsets to drop
    for _ in range(max_tries):
        mask = np.ones((n, n_views), dtype=bool)
        incomplete = rng.choice(n, int(round(missing_rate * n)), replace=False)
        mask[incomplete] = ~subsets[rng.integers(0, len(subsets), len(incomplete))]
        if y is None or all(
            np.isin(np.unique(y), np.asarray(y)[mask[:, v]]).all() for v in range(n_views)
        ):
            break
    else:
        raise ValueError("could not keep one sample per class in every view")
    out = []
    for v, a in enumerate(arrays):
        b = a.copy()
        b[~mask[:, v]] = np.nan
        out.append(b)
    return out, mask
