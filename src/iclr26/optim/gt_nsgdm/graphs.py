"""Communication graphs and their doubly-stochastic mixing matrices.

``ring``, ``exponential``, ``complete``, ``torus`` and ``erdos_renyi`` build W directly or
through networkx with Metropolis-Hastings weights w_ij = 1 / (1 + max(deg_i, deg_j)) on edges
and w_ii = 1 - sum_j w_ij. ``check_mixing`` rejects matrices that are not doubly stochastic,
have negative entries or a disconnected (reducible) support; ``spectral_gap`` returns
rho = ||W - 11^T/n||_2 (the paper's mixing constant; 0 for the complete graph).
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def _as_tensor(w: np.ndarray):
    import torch

    return torch.as_tensor(w, dtype=torch.float64)


def metropolis(graph) -> np.ndarray:
    """Metropolis-Hastings weights of a networkx graph (nodes relabelled 0..n-1 in order)."""
    import networkx as nx

    g = nx.convert_node_labels_to_integers(graph, ordering="sorted")
    n = g.number_of_nodes()
    deg = np.array([g.degree(i) for i in range(n)])
    w = np.zeros((n, n))
    for i, j in g.edges():
        if i != j:
            w[i, j] = w[j, i] = 1.0 / (1 + max(deg[i], deg[j]))
    w[np.diag_indices(n)] = 1.0 - w.sum(1)
    return w


def ring(n: int):
    """Each node mixes with itself and its two ring neighbours, weight 1/3 each."""
    n = V.check_int(n, "n", low=1)
    if n <= 3:
        return complete(n)
    w = np.zeros((n, n))
    for i in range(n):
        for j in (i - 1, i, i + 1):
            w[i, j % n] = 1 / 3
    return _as_tensor(w)


def complete(n: int):
    n = V.check_int(n, "n", low=1)
    return _as_tensor(np.full((n, n), 1.0 / n))


def exponential(n: int):
    """Node i linked to i +- 2^k (mod n) for 2^k < n, Metropolis weights."""
    import networkx as nx

    n = V.check_int(n, "n", low=1)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    k = 1
    while k < n:
        for i in range(n):
            g.add_edge(i, (i + k) % n)
        k *= 2
    g.remove_edges_from(nx.selfloop_edges(g))
    return _as_tensor(metropolis(g))


def torus(rows: int, cols: int):
    import networkx as nx

    rows, cols = V.check_int(rows, "rows", low=1), V.check_int(cols, "cols", low=1)
    return _as_tensor(metropolis(nx.grid_2d_graph(rows, cols, periodic=True)))


def erdos_renyi(n: int, p: float, seed: int = 0):
    """A connected Erdos-Renyi graph (redrawn with the next seed until connected)."""
    import networkx as nx

    n = V.check_int(n, "n", low=1)
    p = V.check_probability(p, "p", open_low=True)
    seed = V.check_int(seed, "seed", low=0)
    for attempt in range(100):
        g = nx.erdos_renyi_graph(n, p, seed=seed + attempt)
        if nx.is_connected(g):
            return _as_tensor(metropolis(g))
    raise ValueError(f"no connected G({n}, {p}) found in 100 draws; raise p")


def from_networkx(graph):
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph must be a networkx graph, got {type(graph).__name__}")
    if graph.number_of_nodes() == 0:
        raise ValueError("graph is empty (no nodes)")
    if not nx.is_connected(graph):
        raise ValueError("the communication graph is disconnected")
    return _as_tensor(metropolis(graph))


def check_mixing(w, tol: float = 1e-10):
    """Validate a mixing matrix (finite, square, non-negative, doubly stochastic, irreducible
    and primitive: what the theory needs) and return it as a float64 tensor."""
    import torch

    tol = V.check_scalar(tol, "tol", low=0.0)
    arr = V.check_square(w, "W", dtype=np.float64, low=-tol)
    off = max(float(np.abs(arr.sum(1) - 1).max()), float(np.abs(arr.sum(0) - 1).max()))
    if off > tol:
        raise ValueError(
            f"W is not doubly stochastic (rows and columns must sum to 1; off by up to {off:.3g})"
        )
    w = torch.as_tensor(arr, dtype=torch.float64)
    n = w.shape[0]
    support = (w > tol).numpy()
    reach = np.eye(n, dtype=bool) | support
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    if not reach.all():
        raise ValueError("W is reducible: the communication graph is disconnected")
    if not np.diag(support).any():  # irreducible + a self-weight is primitive; else test powers
        s_int = support.astype(np.int64)
        power = support.copy()
        for _ in range((n - 1) ** 2 + 1):
            if power.all():
                break
            power = (power.astype(np.int64) @ s_int) > 0
        if not power.all():
            raise ValueError("W is not primitive (periodic graph without self-weights)")
    return w


def spectral_gap(w) -> float:
    """rho = ||W - 11^T / n||_2."""
    w = check_mixing(w).numpy()
    n = w.shape[0]
    return float(np.linalg.norm(w - np.full((n, n), 1.0 / n), 2))


def neighbour_slots(w):
    """For each node, its neighbours (w_ir > 0, self included, ascending) padded to the
    largest degree: (index [n, k] long, weight [n, k] float64, padding weight 0)."""
    import torch

    w = torch.as_tensor(w, dtype=torch.float64)
    n = w.shape[0]
    nbrs = [torch.nonzero(w[i] > 0).reshape(-1).tolist() for i in range(n)]
    k = max(len(r) for r in nbrs)
    idx = torch.zeros((n, k), dtype=torch.long)
    wt = torch.zeros((n, k), dtype=torch.float64)
    for i, r in enumerate(nbrs):
        idx[i, : len(r)] = torch.tensor(r)
        idx[i, len(r) :] = i
        wt[i, : len(r)] = w[i, r]
    return idx, wt
