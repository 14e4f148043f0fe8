"""The perceptual embedding phi and the latent metric it pulls back (spec steps 1-2).

``PerceptualEmbedding`` runs a frozen feature network and concatenates the activations of
named layers (captured with forward hooks), each normalised over channels at every position
(LPIPS-style) and scaled so that its squared distance is the mean over positions:
phi(x) = concat_l [ w_l * h_l(x) / ||h_l(x)||_channels / sqrt(H_l W_l) ].
Composed with a generator g, phi(g(z)) defines the pulled-back Riemannian metric
G(z) = J^T J with J the Jacobian of z -> phi(g(z)); :func:`pullback_metric` forms it for a
small latent through batched Jacobian-vector products. PCG itself never forms J: it
minimises the discrete path energy (``geodesic.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from iclr26 import validation as V


class PerceptualEmbedding(nn.Module):
    """phi(x): the normalised, concatenated activations of ``layers`` of ``feature_net``.

    ``feature_net`` is any ``nn.Module`` (an adversarially robust CNN in PCG); it is put in
    eval mode and its parameters are frozen (``requires_grad_(False)``), so gradients flow to
    the input only. ``layers`` are names from ``feature_net.named_modules()`` (None: the
    module's own output). ``weights`` (one per layer, default 1) scale each layer's block.
    ``forward(x)`` takes images (B, C, H, W) and returns (B, D)."""

    def __init__(
        self,
        feature_net: nn.Module,
        layers: Sequence[str] | None = ("layer1", "layer2", "layer3"),
        weights: Sequence[float] | None = None,
        eps: float = 1e-6,
    ):
        super().__init__()
        if not isinstance(feature_net, nn.Module):
            raise TypeError(
                f"feature_net must be a torch.nn.Module, got {type(feature_net).__name__}"
            )
        modules = dict(feature_net.named_modules())
        if layers is not None:
            if isinstance(layers, str) or not isinstance(layers, Sequence) or not layers:
                raise TypeError("layers must be a non-empty sequence of module names or None")
            missing = [name for name in layers if name not in modules or name == ""]
            if missing:
                known = ", ".join(n for n in list(modules)[1:12] if n)
                raise ValueError(
                    f"layers {missing} not found in feature_net (it has: {known}, ...)"
                )
            layers = tuple(str(name) for name in layers)
        n_layers = 1 if layers is None else len(layers)
        if weights is None:
            weights = (1.0,) * n_layers
        weights = V.check_array(weights, "weights", ndim=1, dtype=float, low=0.0)
        if len(weights) != n_layers:
            raise ValueError(
                f"weights must have {n_layers} entries (one per layer), got {len(weights)}"
            )
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
        self.feature_net = feature_net.eval().requires_grad_(False)
        self.layers = layers
        self.weights = tuple(float(w) for w in weights)
        self._captured: dict[str, torch.Tensor] = {}
        self._handles = []
        for name in layers or ():
            self._handles.append(modules[name].register_forward_hook(self._hook(name)))

    def _hook(self, name: str):
        def capture(module, inputs, output):
            self._captured[name] = output

        return capture

    def train(self, mode: bool = True):  # the feature net stays in eval mode
        super().train(mode)
        self.feature_net.eval()
        return self

    def _block(self, act: torch.Tensor) -> torch.Tensor:
        act = act.float()
        if act.dim() == 2:  # (B, D) features: one "position"
            act = act[:, :, None]
        elif act.dim() > 3:
            act = act.flatten(2)  # (B, C, positions)
        elif act.dim() != 3:
            raise ValueError(
                f"a captured layer must give (B, C, ...) activations, got {act.dim()}-d"
            )
        norm = torch.sqrt((act * act).sum(1, keepdim=True) + self.eps)
        return (act / norm / act.shape[2] ** 0.5).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        V.check_tensor(x, "x", min_ndim=2, floating=True, allow_nan=True, allow_inf=True)
        self._captured = {}
        out = self.feature_net(x)
        if self.layers is None:
            acts = [out]
        else:
            acts = [self._captured.pop(name) for name in self.layers]
        self._captured = {}
        return torch.cat([w * self._block(a) for w, a in zip(self.weights, acts)], 1)

    def remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def jvp_columns(fn: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    """J(z) e_i for every latent direction i, as (B, d, M) with M the flattened output size,
    computed with the double-backward trick (reverse mode twice, batched over the d
    directions), so any module with hooks works."""
    batch, dim = z.shape
    zz = z.detach().repeat_interleave(dim, 0).requires_grad_(True)  # (B d, d)
    out = fn(zz).reshape(batch * dim, -1)
    u = torch.zeros_like(out, requires_grad=True)
    (vjp,) = torch.autograd.grad(out, zz, u, create_graph=True)  # u^T J, linear in u
    basis = torch.eye(dim, dtype=z.dtype, device=z.device).repeat(batch, 1)
    (cols,) = torch.autograd.grad((vjp * basis).sum(), u)  # J e_i
    return cols.reshape(batch, dim, -1)


def pullback_metric(fn: Callable[[torch.Tensor], torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    """G(z) = J(z)^T J(z), (B, d, d), for a map ``fn`` from latents (B, d) to any (B, ...)
    output: with ``fn = lambda z: phi(g(z))`` this is PCG's metric, with ``fn = g`` the
    generator (pixel) pullback that RSGD uses. Cost: 2 backward passes over B*d latents."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    V.check_tensor(z, "z", ndim=2, floating=True)
    cols = jvp_columns(fn, z)
    return cols @ cols.transpose(1, 2)
