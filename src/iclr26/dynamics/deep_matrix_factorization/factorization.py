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

import warnings

import numpy as np

from iclr26 import validation as V

INITS = ("gaussian", "diagonal", "identity", "balanced")
DIVERGENCE_FACTOR = 1e6  # a loss this many times the initial loss (or non-finite) is divergence


def check_factors(factors, name: str = "factors", *, batched: bool | None = None) -> list:
    """A list of at least one finite matrix (or batch of matrices, a leading run axis) whose
    shapes chain: W_{l+1} has as many columns as W_l has rows."""
    if isinstance(factors, np.ndarray) or not isinstance(factors, list | tuple):
        raise TypeError(f"{name} must be a list of matrices W_1 ... W_L")
    if not factors:
        raise ValueError(f"{name} is empty: it needs at least one matrix")
    ndim = {None: (2, 3), True: 3, False: 2}[batched]
    out = [
        V.check_array(F, f"{name}[{l}]", ndim=ndim, dtype=np.float64) for l, F in enumerate(factors)
    ]
    if len({F.ndim for F in out}) > 1:
        raise ValueError(f"{name} mixes batched (3-D) and single (2-D) matrices")
    for l in range(1, len(out)):
        if out[l].shape[-1] != out[l - 1].shape[-2] or out[l].shape[:-2] != out[0].shape[:-2]:
            raise ValueError(
                f"{name}[{l}] has shape {out[l].shape}, which does not chain with "
                f"{name}[{l - 1}] of shape {out[l - 1].shape}"
            )
    return out


def check_target(M, mask, shape, *, batched: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """M (finite on the observed entries) and a 0/1 mask, both of the product's ``shape``."""
    mask = V.check_array(mask, "mask", ndim=(2, 3) if batched else 2, dtype=None)
    if mask.dtype != bool:
        if mask.dtype.kind not in "biuf" or not np.isin(mask, (0, 1)).all():
            raise ValueError("mask must be boolean (or 0/1)")
        mask = mask.astype(bool)
    M = V.check_array(M, "M", ndim=(2, 3) if batched else 2, dtype=np.float64, allow_nan=True)
    if M.shape[-2:] != tuple(shape[-2:]) or mask.shape[-2:] != tuple(shape[-2:]):
        raise ValueError(
            f"M {M.shape} and mask {mask.shape} must have the product's shape {tuple(shape[-2:])}"
        )
    if not mask.any():
        raise ValueError("mask has no observed entries")
    if not np.isfinite(np.where(mask, M, 0.0)).all():
        raise ValueError("M must be finite on the observed entries")
    return np.where(mask, M, 0.0), mask


def factor_shapes(n: int, m: int, depth: int, width: int) -> list[tuple[int, int]]:
    """Shapes (out, in) of W_1 ... W_L for an n x m target with inner width ``width``."""
    n = V.check_int(n, "n", low=1)
    m = V.check_int(m, "m", low=1)
    depth = V.check_int(depth, "depth", low=1)
    width = V.check_int(width, "width", low=1)
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
    if isinstance(shapes, str) or not isinstance(shapes, list | tuple) or not shapes:
        raise TypeError("shapes must be a non-empty list of (out, in) pairs (see factor_shapes)")
    shapes = [
        (V.check_int(o, f"shapes[{l}][0]", low=1), V.check_int(i, f"shapes[{l}][1]", low=1))
        for l, (o, i) in enumerate(shapes)
    ]
    V.check_choice(init, "init", INITS)
    scale = V.check_scalar(scale, "scale", low=0.0, low_open=True)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
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
    factors = check_factors(factors)
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
    factors = check_factors(factors)
    shape = (factors[-1].shape[-2], factors[0].shape[-1])
    M, mask = check_target(M, mask, shape, batched=factors[0].ndim == 3)
    return _loss_and_gradients(factors, M, mask)


def _loss_and_gradients(factors, M, mask):
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
    (step, loss, singular values) every ``record_every`` steps (0: none).

    Divergence is detected, never passed on as NaN: a run whose loss becomes non-finite or
    exceeds ``DIVERGENCE_FACTOR`` times its initial loss stops at its last finite factors and is
    flagged in ``diverged`` (with a ``RuntimeWarning`` naming the step size)."""
    factors = [F.copy() for F in check_factors(factors, batched=True)]
    shape = (factors[-1].shape[-2], factors[0].shape[-1])
    M, mask = check_target(M, mask, shape, batched=True)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    max_steps = V.check_int(max_steps, "max_steps", low=0)
    tol = V.check_scalar(tol, "tol", low=0.0)
    adaptive = V.check_bool(adaptive, "adaptive")
    max_relative_step = V.check_scalar(
        max_relative_step, "max_relative_step", low=0.0, low_open=True
    )
    record_every = V.check_int(record_every, "record_every", low=0)
    S = factors[0].shape[0]
    L = len(factors)
    target = np.sqrt(((M * mask) ** 2).sum(axis=(-2, -1)))
    steps = np.zeros(S, dtype=np.int64)
    flow_time = np.zeros(S)
    active = np.ones(S, dtype=bool)
    diverged = np.zeros(S, dtype=bool)
    diverged_at = np.full(S, -1, dtype=np.int64)
    history = []
    loss = loss0 = None
    previous = [F.copy() for F in factors]
    for step in range(max_steps + 1):
        with np.errstate(over="ignore", invalid="ignore"):
            loss, grads, W = _loss_and_gradients(factors, M, mask)
        if loss0 is None:
            # the scale divergence is judged against: the initial loss, or the target's own
            # energy when the run starts (almost) at the solution
            loss0 = np.maximum(loss, np.maximum(0.5 * target**2, 1e-12))
        blown = active & ~(np.isfinite(loss) & (loss <= DIVERGENCE_FACTOR * loss0))
        if blown.any():
            # roll the diverged runs back to their last finite factors and freeze them there
            for F, P in zip(factors, previous):
                F[blown] = P[blown]
            diverged |= blown
            diverged_at[blown] = step
            active &= ~blown
            loss, grads, W = _loss_and_gradients(factors, M, mask)
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
        for F, P, G in zip(factors, previous, grads):
            P[...] = F
            with np.errstate(over="ignore", invalid="ignore"):
                F -= eta[:, None, None] * G
        steps += active
        flow_time += eta
    if diverged.any():
        warnings.warn(
            f"gradient descent diverged in {int(diverged.sum())} of {S} run(s) with lr={lr} "
            f"(loss non-finite or above {DIVERGENCE_FACTOR:g} x its initial value); those runs "
            "are flagged in 'diverged' and kept at their last finite factors: use a smaller lr",
            RuntimeWarning,
            stacklevel=2,
        )
    return {
        "factors": factors,
        "loss": loss,
        "steps": steps,
        "flow_time": flow_time,
        "converged": (loss < tol) & ~diverged,
        "diverged": diverged,
        "diverged_at": diverged_at,
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
    their plateau, and LSODA switches between a non-stiff Adams and a stiff BDF method; RK45
    would need tiny steps there), stopped when the loss falls below ``tol`` or at ``t_max``.
    ``success``/``message`` report the solver's own status; a failed or non-finite solve
    raises instead of returning NaN factors."""
    from scipy.integrate import solve_ivp

    factors = check_factors(factors, batched=False)
    shape = (factors[-1].shape[0], factors[0].shape[1])
    M, mask = check_target(M, mask, shape)
    t_max = V.check_scalar(t_max, "t_max", low=0.0, low_open=True)
    tol = V.check_scalar(tol, "tol", low=0.0)
    rtol = V.check_scalar(rtol, "rtol", low=0.0, low_open=True)
    atol = V.check_scalar(atol, "atol", low=0.0, low_open=True)
    V.check_choice(method, "method", ("LSODA", "RK45", "RK23", "DOP853", "Radau", "BDF"))

    shapes = [F.shape for F in factors]
    sizes = [int(np.prod(s)) for s in shapes]
    splits = np.cumsum(sizes)[:-1]

    def unpack(theta):
        return [p.reshape(s) for p, s in zip(np.split(theta, splits), shapes)]

    def field(_t, theta):
        _, grads, _ = _loss_and_gradients(unpack(theta), M, mask)
        return -np.concatenate([g.ravel() for g in grads])

    def converged(_t, theta):
        return float(_loss_and_gradients(unpack(theta), M, mask)[0]) - tol

    converged.terminal = True
    theta0 = np.concatenate([np.asarray(F, dtype=np.float64).ravel() for F in factors])
    sol = solve_ivp(
        field, (0.0, t_max), theta0, method=method, rtol=rtol, atol=atol, events=converged
    )
    final = unpack(sol.y[:, -1])
    loss = float(_loss_and_gradients(final, M, mask)[0])
    if not sol.success or not np.isfinite(sol.y[:, -1]).all() or not np.isfinite(loss):
        raise ValueError(
            f"method={method!r} failed to integrate the gradient flow ({sol.message}); the flow "
            "may diverge from these factors, or the tolerances rtol/atol are too tight"
        )
    return {
        "success": bool(sol.success),
        "message": str(sol.message),
        "factors": final,
        "loss": loss,
        "flow_time": float(sol.t[-1]),
        "converged": loss < tol * 1.01,
        "n_evaluations": int(sol.nfev),
    }
