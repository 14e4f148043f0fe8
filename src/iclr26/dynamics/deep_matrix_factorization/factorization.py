"""Deep matrix factorisation trained by gradient flow on the observed entries.

W = W_L ... W_1, loss l(W) = 1/2 sum_{(i,j) in Omega} ((W)_ij - M_ij)^2. With
A_l = W_L ... W_{l+1}, B_l = W_{l-1} ... W_1 and the masked residual R = P_Omega(W - M), the
gradient of factor l is A_l^T R B_l^T. Everything here is batched over a leading axis of
independent runs (seeds), so a claim trains all its seeds in one vectorised loop.

Integrators: plain gradient descent with a small step approximates the flow; the default
"adaptive" clock multiplies the step by max(1, (||M_Omega|| / ||W_Omega||)^{(L-2)/L}) while the
product is still far below the target scale (the plateau after a small initialisation, whose
length grows like s^{-(L-2)}), with every factor's relative change capped per step. A positive
rescaling of the vector field leaves the trajectories of the flow unchanged, so this follows
the same path with fewer steps. ``integrate_ode`` solves the flow with scipy's ``solve_ivp`` instead.
"""

from __future__ import annotations

import numpy as np

INITS = ("gaussian", "diagonal", "identity", "balanced")


def factor_shapes(n: int, m: int, depth: int, width: int) -> list[tuple[int, int]]:
    """Shapes (out, in) of W_1 ... W_L for an n x m target with inner width ``width``."""
    dims = [m] + [width] * (depth - 1) + [n]
    return [(dims[i + 1], dims[i]) for i in range(depth)]


def _random_orthogonal(rng: np.random.Generator, k: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((k, k)))
    return q * np.sign(np.diag(r))


def initialize(
    shapes: list[tuple[int, int]], init: str, scale: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """One run's factors. ``gaussian``: i.i.d. N(0, scale^2); ``diagonal``: (rectangular)
    diagonal with entries scale (0.1 + |N(0,1)|) (the decoupled case); ``identity``:
    scale * I; ``balanced``: W_l = U_l diag(scale |z|) U_{l-1}^T, which satisfies
    W_{l+1}^T W_{l+1} = W_l W_l^T (square factors only)."""
    if init == "gaussian":
        return [scale * rng.standard_normal(s) for s in shapes]
    if init == "diagonal":
        out = []
        for o, i in shapes:
            W = np.zeros((o, i))
            k = min(o, i)
            W[np.arange(k), np.arange(k)] = scale * (0.1 + np.abs(rng.standard_normal(k)))
            out.append(W)
        return out
    if init == "identity":
        return [scale * np.eye(o, i) for o, i in shapes]
    if init == "balanced":
        k = shapes[0][0]
        if any(o != k or i != k for o, i in shapes):
            raise ValueError("balanced initialisation needs square factors (n == m == width)")
        sigma = scale * np.abs(rng.standard_normal(k))
        bases = [_random_orthogonal(rng, k) for _ in range(len(shapes) + 1)]
        return [bases[l + 1] @ np.diag(sigma) @ bases[l].T for l in range(len(shapes))]
    raise ValueError(f"unknown init {init!r}; valid: {', '.join(INITS)}")


def product(factors: list[np.ndarray]) -> np.ndarray:
    """W_L ... W_1 (batched over the leading axis)."""
    W = factors[0]
    for F in factors[1:]:
        W = F @ W
    return W


def prefix_suffix(factors: list[np.ndarray]):
    """B_l = W_{l-1} ... W_1 and A_l = W_L ... W_{l+1} for every l (None stands for I)."""
    L = len(factors)
    B = [None] * L
    for l in range(1, L):
        B[l] = factors[l - 1] if B[l - 1] is None else factors[l - 1] @ B[l - 1]
    A = [None] * L
    for l in range(L - 2, -1, -1):
        A[l] = factors[l + 1] if A[l + 1] is None else A[l + 1] @ factors[l + 1]
    return A, B


def loss_and_gradients(factors, M, mask):
    """Loss (per run) and the gradients A_l^T R B_l^T, R = P_Omega(W - M)."""
    A, B = prefix_suffix(factors)
    W = factors[0] if B[-1] is None else factors[-1] @ B[-1]
    R = (W - M) * mask
    loss = 0.5 * (R**2).sum(axis=(-2, -1))
    grads = []
    for l in range(len(factors)):
        G = R if A[l] is None else np.swapaxes(A[l], -1, -2) @ R
        if B[l] is not None:
            G = G @ np.swapaxes(B[l], -1, -2)
        grads.append(G)
    return loss, grads, W


def gradient_descent(
    factors: list[np.ndarray],
    M: np.ndarray,
    mask: np.ndarray,
    *,
    lr: float = 0.1,
    max_steps: int = 100_000,
    tol: float = 1e-10,
    adaptive: bool = True,
    max_relative_step: float = 0.05,
    record_every: int = 0,
) -> dict:
    """Batched GD: ``factors[l]`` has shape (S, out, in). Runs whose loss fell below ``tol``
    stop moving; returns the final factors, per-run steps, flow time, loss, and a history of
    (step, loss, singular values) every ``record_every`` steps (0: none)."""
    factors = [np.array(F, dtype=np.float64, copy=True) for F in factors]
    S = factors[0].shape[0]
    L = len(factors)
    target = np.sqrt(((M * mask) ** 2).sum(axis=(-2, -1)))
    steps = np.zeros(S, dtype=np.int64)
    flow_time = np.zeros(S)
    active = np.ones(S, dtype=bool)
    history = []
    loss = None
    for step in range(max_steps + 1):
        loss, grads, W = loss_and_gradients(factors, M, mask)
        active &= loss >= tol
        if record_every and step % record_every == 0:
            history.append((step, loss.copy(), np.linalg.svd(W, compute_uv=False)))
        if not active.any() or step == max_steps:
            break
        eta = np.full(S, lr)
        if adaptive and L > 2:
            fitted = np.sqrt(((W * mask) ** 2).sum(axis=(-2, -1)))
            boost = np.maximum(1.0, (target / np.maximum(fitted, 1e-300)) ** ((L - 2) / L))
            eta = lr * boost
            for F, G in zip(factors, grads):
                f_norm = np.sqrt((F**2).sum(axis=(-2, -1)))
                g_norm = np.sqrt((G**2).sum(axis=(-2, -1)))
                cap = max_relative_step * f_norm / np.maximum(g_norm, 1e-300)
                eta = np.where(boost > 1.0, np.maximum(lr, np.minimum(eta, cap)), lr)
        eta = np.where(active, eta, 0.0)
        for F, G in zip(factors, grads):
            F -= eta[:, None, None] * G
        steps += active
        flow_time += eta
    return {
        "factors": factors,
        "loss": loss,
        "steps": steps,
        "flow_time": flow_time,
        "converged": loss < tol,
        "history": history,
    }


def integrate_ode(
    factors: list[np.ndarray],
    M: np.ndarray,
    mask: np.ndarray,
    *,
    t_max: float = 1e4,
    tol: float = 1e-10,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    method: str = "LSODA",
) -> dict:
    """Gradient flow of one run (unbatched factors) with scipy's ``solve_ivp`` (LSODA by
    default: the flow turns stiff once some entries have converged while others are still on
    their plateau), stopped when the loss falls below ``tol`` or at ``t_max``."""
    from scipy.integrate import solve_ivp

    shapes = [F.shape for F in factors]
    sizes = [int(np.prod(s)) for s in shapes]
    splits = np.cumsum(sizes)[:-1]

    def unpack(theta):
        return [p.reshape(s) for p, s in zip(np.split(theta, splits), shapes)]

    def field(_t, theta):
        _, grads, _ = loss_and_gradients(unpack(theta), M, mask)
        return -np.concatenate([g.ravel() for g in grads])

    def converged(_t, theta):
        return float(loss_and_gradients(unpack(theta), M, mask)[0]) - tol

    converged.terminal = True
    theta0 = np.concatenate([np.asarray(F, dtype=np.float64).ravel() for F in factors])
    sol = solve_ivp(
        field, (0.0, t_max), theta0, method=method, rtol=rtol, atol=atol, events=converged
    )
    final = unpack(sol.y[:, -1])
    loss = float(loss_and_gradients(final, M, mask)[0])
    return {
        "factors": final,
        "loss": loss,
        "flow_time": float(sol.t[-1]),
        "converged": loss < tol * 1.01,
        "n_evaluations": int(sol.nfev),
    }
