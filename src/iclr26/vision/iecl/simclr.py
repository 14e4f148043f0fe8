"""SimCLR, the base two-view framework of IE-CL (and its baseline).

A :class:`TwoViewFramework` draws two augmented views of a batch, embeds them with
``projector(encoder(.))`` and scores the pair with its own objective; IE-CL plugs into that
interface (:class:`~iclr26.vision.iecl.model.IECLWrapper`). :class:`SimCLR` uses the NT-Xent
loss (:class:`~iclr26.vision.iecl.losses.InfoNCELoss`) and a 2-layer MLP projector.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images
from iclr26.vision import augment as A
from iclr26.vision.iecl.losses import InfoNCELoss


def mlp(in_dim: int, hidden: int, out_dim: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(in_dim, hidden),
        nn.BatchNorm1d(hidden),
        nn.ReLU(inplace=True),
        nn.Linear(hidden, out_dim),
    )


def encoder_dim(encoder, feat_dim: int | None) -> int:
    """The encoder's output width: ``feat_dim`` when given, else its ``embed_dim`` attribute
    (timm and the project's backbones carry one)."""
    if not isinstance(encoder, nn.Module):
        raise TypeError(f"encoder must be a torch.nn.Module, got {type(encoder).__name__}")
    if feat_dim is None:
        V.check_module_attrs(encoder, "encoder", ("embed_dim",))
        feat_dim = encoder.embed_dim
    return V.check_int(feat_dim, "feat_dim", low=1)


class TwoViewFramework(nn.Module):
    """Shared machinery: views, encoding, the optimiser and one training step."""

    def __init__(
        self,
        encoder: nn.Module,
        feat_dim: int | None = None,
        proj_dim: int = 128,
        hidden_dim: int = 256,
        seed: int = 0,
    ):
        super().__init__()
        self.feat_dim = encoder_dim(encoder, feat_dim)
        self.proj_dim = V.check_int(proj_dim, "proj_dim", low=1)
        hidden_dim = V.check_int(hidden_dim, "hidden_dim", low=1)
        self.encoder = encoder
        self.projector = self.build_projector(self.feat_dim, hidden_dim, self.proj_dim)
        self.generator = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        self.optimizer: torch.optim.Optimizer | None = None

    def build_projector(self, feat_dim: int, hidden_dim: int, proj_dim: int) -> nn.Module:
        """The projection head (SimCLR's Linear-BN-ReLU-Linear; subclasses may differ)."""
        return mlp(feat_dim, hidden_dim, proj_dim)

    # -- the augmentation generator travels in ``state_dict`` so a resumed run draws the
    # same views (and the same transform noise) as an uninterrupted one
    def get_extra_state(self) -> dict:
        return {"generator": self.generator.get_state()}

    def set_extra_state(self, state: dict) -> None:
        self.generator.set_state(state["generator"])

    # -- the interface IE-CL plugs into
    def views(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Two independent SimCLR augmentations of ``x`` (B, C, H, W) in [0, 1]."""
        return A.simclr_augment(x, generator=self.generator), A.simclr_augment(
            x, generator=self.generator
        )

    def embed(self, v: torch.Tensor) -> torch.Tensor:
        feats = self.encoder(v)
        if feats.dim() != 2 or feats.shape[1] != self.feat_dim:
            raise ValueError(
                f"encoder must return (B, feat_dim={self.feat_dim}) features, got {tuple(feats.shape)}"
            )
        return self.projector(feats)

    def pair_loss(self, v1: torch.Tensor, v2: torch.Tensor):
        """``(loss, z1, z2)`` of the framework's objective on two views (defined by each
        framework: :class:`SimCLR`, MoCo v2)."""
        raise NotImplementedError(f"{type(self).__name__} does not define pair_loss")

    def embed_second(self, v: torch.Tensor) -> torch.Tensor:
        """The embedding ``pair_loss`` gives its *second* view (``z2``); the online
        projection here, MoCo's key when its loss is asymmetric."""
        return self.embed(v)

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def after_step(self) -> None:
        """Hook after each optimiser step (BYOL's target update, MoCo's key update and
        enqueue)."""

    # -- training
    def configure_optimizers(self, lr: float = 1e-3) -> torch.optim.Optimizer:
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.optimizer = torch.optim.Adam(self.trainable_parameters(), lr=lr)
        return self.optimizer

    def check_batch(self, x) -> torch.Tensor:
        check_images(x, "x", channels=None, unit_range=True)
        if x.shape[0] < 2:
            raise ValueError(f"x needs at least 2 images per batch, got {x.shape[0]}")
        return x

    def training_step(
        self, x: torch.Tensor, step: int = 0, total_steps: int = 1
    ) -> dict[str, float]:
        """One optimiser step on batch ``x``; returns the logged numbers."""
        self.check_batch(x)
        V.check_int(step, "step", low=0)
        V.check_int(total_steps, "total_steps", low=1)
        if self.optimizer is None:
            self.configure_optimizers()
        self.train()
        v1, v2 = self.views(x)
        loss, _, _ = self.pair_loss(v1, v2)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.after_step()
        return {"loss": float(loss.detach())}

    @torch.no_grad()
    def encode(self, x, batch_size: int = 512) -> torch.Tensor:
        """Frozen encoder features (B, feat_dim) of images ``x`` in [0, 1] (eval mode)."""
        check_images(x, "x", channels=None, unit_range=True)
        was = self.training
        self.eval()
        out = torch.cat([self.encoder(x[i : i + batch_size]) for i in range(0, len(x), batch_size)])
        self.train(was)
        return out


class SimCLR(TwoViewFramework):
    """SimCLR (Chen et al., 2020): NT-Xent between the projections of two views."""

    def __init__(
        self,
        encoder: nn.Module,
        feat_dim: int | None = None,
        proj_dim: int = 128,
        temperature: float = 0.2,
        hidden_dim: int = 256,
        seed: int = 0,
    ):
        super().__init__(encoder, feat_dim, proj_dim, hidden_dim, seed)
        self.criterion = InfoNCELoss(temperature)

    def pair_loss(self, v1: torch.Tensor, v2: torch.Tensor):
        z1, z2 = self.embed(v1), self.embed(v2)
        return self.criterion(z1, z2), z1, z2
