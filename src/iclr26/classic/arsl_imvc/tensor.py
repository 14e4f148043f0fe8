"""Building blocks of the ADMM: t-SVD singular value thresholding, the l2,1 prox, orthogonal
Procrustes and the linear-kernel HSIC.

Tensor nuclear norm (Lu et al. 2019 convention): ||A||_* = (1/n3) sum_f ||A_bar^(f)||_*, the
average nuclear norm of the frontal slices after an FFT along mode 3. Its prox with weight tau
soft-thresholds every Fourier-domain slice's singular values by tau.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def tsvt(tensor: np.ndarray, tau: float) -> np.ndarray:
    """t-SVT_tau of a real n1 x n2 x n3 tensor: FFT along mode 3, soft-threshold the singular
    values of every frontal slice, inverse FFT. Only n3 // 2 + 1 slices are decomposed (the
    others are their complex conjugates)."""
    tau = V.check_scalar(tau, "tau", low=0.0)
    tensor = V.check_array(tensor, "tensor", ndim=3, dtype=np.float64)
    n3 = tensor.shape[2]
    freq = np.fft.rfft(tensor, axis=2)  # (n1, n2, n3//2+1)
    slices = np.moveaxis(freq, 2, 0)  # (F, n1, n2)
    if slices.shape[1] > 4 * slices.shape[2]:
        # tall slices (n x (V+1)): A V diag(shrink(s)/s) V^H from the small Gram's eigenpairs
        gram = np.conj(np.swapaxes(slices, 1, 2)) @ slices
        evals, evecs = np.linalg.eigh(gram)
        s = np.sqrt(np.maximum(evals, 0.0))
        factor = np.where(s > tau, (s - tau) / np.maximum(s, 1e-300), 0.0)
        shrunk = slices @ (evecs * factor[:, None, :]) @ np.conj(np.swapaxes(evecs, 1, 2))
    else:
        u, s, vh = np.linalg.svd(slices, full_matrices=False)
        s = np.maximum(s - tau, 0.0)
        shrunk = (u * s[:, None, :]) @ vh
    return np.fft.irfft(np.moveaxis(shrunk, 0, 2), n=n3, axis=2)


def tensor_nuclear_norm(tensor: np.ndarray) -> float:
    """(1/n3) sum over Fourier-domain frontal slices of their nuclear norms."""
    tensor = V.check_array(tensor, "tensor", ndim=3, dtype=np.float64)
    freq = np.fft.fft(tensor, axis=2)
    s = np.linalg.svd(np.moveaxis(freq, 2, 0), compute_uv=False)
    return float(s.sum() / tensor.shape[2])


def shrink21(matrix: np.ndarray, tau: float) -> np.ndarray:
    """prox of tau ||.||_{2,1} (sum of column norms): column-wise shrinkage."""
    tau = V.check_scalar(tau, "tau", low=0.0)
    matrix = V.check_array(matrix, "matrix", ndim=2, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=0, keepdims=True)
    scale = np.maximum(1.0 - tau / np.maximum(norms, 1e-300), 0.0)
    return matrix * scale


def norm21(matrix: np.ndarray) -> float:
    """||M||_{2,1}: the sum of the column L2 norms."""
    matrix = V.check_array(matrix, "matrix", ndim=2, dtype=np.float64)
    return float(np.linalg.norm(matrix, axis=0).sum())


def procrustes(target: np.ndarray, latent: np.ndarray) -> np.ndarray:
    """argmin_{P^T P = I} ||target - P latent||_F = U V^T from the thin SVD of target latent^T."""
    target = V.check_array(target, "target", ndim=2, dtype=np.float64)
    latent = V.check_array(
        latent, "latent", ndim=2, dtype=np.float64, shape=(None, target.shape[1])
    )
    if latent.shape[0] > target.shape[0]:
        raise ValueError(
            f"latent has {latent.shape[0]} rows, more than target's {target.shape[0]}: no "
            "d x k matrix with orthonormal columns exists for k > d"
        )
    u, _, vh = np.linalg.svd(target @ latent.T, full_matrices=False)
    return u @ vh


def hsic_linear(a: np.ndarray, b: np.ndarray) -> float:
    """HSIC(A, B) = tr(K_A C K_B C) / (n - 1)^2 with linear kernels on the n columns."""
    a = V.check_array(a, "a", ndim=2, dtype=np.float64, min_cols=2)
    b = V.check_array(b, "b", ndim=2, dtype=np.float64, shape=(None, a.shape[1]))
    n = a.shape[1]
    ac = a - a.mean(axis=1, keepdims=True)  # A C
    bc = b - b.mean(axis=1, keepdims=True)
    cross = ac @ bc.T  # tr(A^T A C B^T B C) = ||A C B^T||_F^2
    return float(np.sum(cross**2) / (n - 1) ** 2)
