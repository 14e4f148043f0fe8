"""The entropy-preserving encoder regulariser R(theta) (maximised by the encoder step).

*Project instantiation* (the paper's form was not available). ``mode="rate"`` (default): the
coding rate of the L2-normalised projector outputs, ``R = 1/2 log det(I + d / (B eps_r^2)
Z^T Z)``, a log-volume that is large when the embeddings spread over many directions and
small when they collapse, so the encoder is discouraged from squeezing out the information
the transform added. ``mode="gap"`` (ablation): ``R = -|Delta H_in - Delta H_z|``, i.e. the
entropy gained at the input should reappear in the embedding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision.iecl.entropy import gaussian_entropy

MODES = ("rate", "gap")


def coding_rate(z: torch.Tensor, eps_r: float = 0.5) -> torch.Tensor:
    """``1/2 log det(I + d / (B eps_r^2) Z^T Z)`` of row-normalised ``z`` (B, d), evaluated
    through the smaller of the two Gram matrices (Sylvester's identity)."""
    V.check_tensor(z, "z", ndim=2, floating=True)
    eps_r = V.check_scalar(eps_r, "eps_r", low=0.0, low_open=True)
    z = F.normalize(z, dim=1)
    b, d = z.shape
    scale = d / (b * eps_r**2)
    gram = z.t() @ z if d <= b else z @ z.t()
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    return 0.5 * torch.logdet(eye + scale * gram)


class EntropyPreservingRegularizer(nn.Module):
    def __init__(self, mode: str = "rate", eps_r: float = 0.5, eps: float = 1e-3):
        super().__init__()
        self.mode = V.check_choice(mode, "mode", MODES)
        self.eps_r = V.check_scalar(eps_r, "eps_r", low=0.0, low_open=True)
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)

    def forward(
        self,
        z: torch.Tensor,
        z_plain: torch.Tensor | None = None,
        delta_in: torch.Tensor | float | None = None,
    ) -> torch.Tensor:
        """R for projector outputs ``z`` (B, d). ``"gap"`` also needs the outputs of the
        un-transformed views ``z_plain`` and the input entropy gain ``delta_in``."""
        V.check_tensor(z, "z", ndim=2, floating=True)
        if z.shape[0] < 2:
            raise ValueError(f"z needs at least 2 rows, got {z.shape[0]}")
        if self.mode == "rate":
            return coding_rate(z, self.eps_r)
        if z_plain is None or delta_in is None:
            raise ValueError("z_plain and delta_in are required when mode='gap'")
        V.check_tensor(z_plain, "z_plain", shape=tuple(z.shape), floating=True)
        delta_in = torch.as_tensor(delta_in, dtype=torch.float64)
        V.check_finite(delta_in, "delta_in")
        zn, zp = F.normalize(z, dim=1), F.normalize(z_plain, dim=1)
        delta_z = gaussian_entropy(zn, self.eps) - gaussian_entropy(zp, self.eps)
        return -(delta_in.to(delta_z) - delta_z).abs()
