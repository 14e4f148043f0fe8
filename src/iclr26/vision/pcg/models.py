"""The small models of the in-project analogue: a convolutional VAE (the generator g and its
encoder), an MLP classifier (the independent oracle o), PGD (L-inf, random start) and a
training loop that is adversarial training when ``eps > 0`` (Madry et al.)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision import check_images


class ConvVAE(nn.Module):
    """A convolutional VAE on (B, C, size, size) images in [0, 1] with a Gaussian latent of
    ``latent_dim``; ``size`` is 8 * 2^k. ``encode(x)`` gives (mu, logvar), ``decode(z)`` (the
    generator g) sigmoid images, ``forward(x)`` (reconstruction, mu, logvar)."""

    def __init__(self, size: int = 8, channels: int = 1, latent_dim: int = 8, width: int = 32):
        super().__init__()
        self.size = V.check_choice(size, "size", (8, 16, 32, 64))
        self.channels = V.check_int(channels, "channels", low=1)
        self.latent_dim = V.check_int(latent_dim, "latent_dim", low=1)
        width = V.check_int(width, "width", low=1)
        n_down = {8: 1, 16: 2, 32: 3, 64: 4}[size]
        enc, c = [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU()], width
        for _ in range(n_down):
            enc += [nn.Conv2d(c, 2 * c, 4, stride=2, padding=1), nn.ReLU()]
            c *= 2
        self.encoder = nn.Sequential(*enc, nn.Flatten())
        self._top = c
        self.to_stats = nn.Linear(c * 16, 2 * latent_dim)
        self.from_latent = nn.Linear(latent_dim, c * 16)
        dec = []
        for _ in range(n_down):
            dec += [nn.ReLU(), nn.ConvTranspose2d(c, c // 2, 4, stride=2, padding=1)]
            c //= 2
        self.decoder = nn.Sequential(*dec, nn.ReLU(), nn.Conv2d(c, channels, 3, padding=1))

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.to_stats(self.encoder(x)).chunk(2, dim=1)
        return mu, logvar.clamp(-10, 10)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        h = self.from_latent(z).reshape(len(z), self._top, 4, 4)
        return torch.sigmoid(self.decoder(h))

    def forward(self, x: torch.Tensor):
        mu, logvar = self.encode(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decode(z), mu, logvar


class Decoder(nn.Module):
    """``vae.decode`` as a module (the generator g handed to the counterfactual methods)."""

    def __init__(self, vae: ConvVAE):
        super().__init__()
        if not isinstance(vae, ConvVAE):
            raise TypeError(f"vae must be a ConvVAE, got {type(vae).__name__}")
        self.vae = vae

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.vae.decode(z)


class Encoder(nn.Module):
    """The encoder mean, inv(x) = mu(x)."""

    def __init__(self, vae: ConvVAE):
        super().__init__()
        if not isinstance(vae, ConvVAE):
            raise TypeError(f"vae must be a ConvVAE, got {type(vae).__name__}")
        self.vae = vae

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vae.encode(x)[0]


class MLPClassifier(nn.Module):
    """Flatten, ``hidden`` ReLU layers, linear head; ``features(x)`` is the penultimate layer."""

    def __init__(self, in_dim: int, n_classes: int = 10, hidden: tuple[int, ...] = (256, 256)):
        super().__init__()
        in_dim = V.check_int(in_dim, "in_dim", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=2)
        if not hidden:
            raise ValueError("hidden must name at least one layer width")
        layers, d = [nn.Flatten()], in_dim
        for width in hidden:
            layers += [nn.Linear(d, V.check_int(width, "hidden", low=1)), nn.ReLU()]
            d = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def pgd_attack(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    eps: float = 0.1,
    steps: int = 5,
    step_size: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """L-inf PGD with a uniform random start, kept in [0, 1]: the images in the eps-ball that
    (approximately) maximise the cross-entropy of ``model``. Step size 2.5 eps / steps."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_images(x, "x", channels=None, unit_range=True)
    V.check_tensor(y, "y", shape=(x.shape[0],), integer=True)
    eps = V.check_scalar(eps, "eps", low=0.0, high=1.0)
    steps = V.check_int(steps, "steps", low=0)
    alpha = (
        2.5 * eps / max(steps, 1)
        if step_size is None
        else V.check_scalar(step_size, "step_size", low=0.0, low_open=True)
    )
    if eps == 0 or steps == 0:
        return x.detach().clone()
    noise = torch.rand(x.shape, generator=generator, dtype=x.dtype) * 2 - 1
    adv = (x + eps * noise.to(x.device)).clamp(0, 1).detach()
    for _ in range(steps):
        adv.requires_grad_(True)
        (grad,) = torch.autograd.grad(F.cross_entropy(model(adv), y), adv)
        adv = adv.detach() + alpha * grad.sign()
        adv = torch.min(torch.max(adv, x - eps), x + eps).clamp(0, 1).detach()
    return adv


def train_classifier(
    model: nn.Module,
    X,
    y,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 2e-3,
    eps: float = 0.0,
    pgd_steps: int = 5,
    seed: int = 0,
    device: str = "cpu",
) -> nn.Module:
    """Train ``model`` on images X (n, C, H, W) in [0, 1] and labels y with Adam; with
    ``eps > 0`` every batch is replaced by its PGD adversarial examples (adversarial training,
    L-inf radius eps). Returns the model in eval mode."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    X = torch.as_tensor(V.check_array(X, "X", ndim=4, dtype=np.float32, low=0.0, high=1.0))
    y = torch.as_tensor(V.check_array(y, "y", ndim=1, dtype=np.int64, n_rows=len(X)))
    epochs = V.check_int(epochs, "epochs", low=0)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    eps = V.check_scalar(eps, "eps", low=0.0, high=1.0)
    pgd_steps = V.check_int(pgd_steps, "pgd_steps", low=1)
    gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
    model.to(device)
    X, y = X.to(device), y.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=gen)
        for start in range(0, len(X), batch_size):
            idx = order[start : start + batch_size].to(device)
            xb, yb = X[idx], y[idx]
            if eps > 0:
                model.eval()
                xb = pgd_attack(model, xb, yb, eps, pgd_steps, generator=gen)
            model.train()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return model.eval()


def train_vae(
    vae: ConvVAE,
    X,
    *,
    epochs: int = 60,
    batch_size: int = 64,
    lr: float = 2e-3,
    beta: float = 1.0,
    seed: int = 0,
    device: str = "cpu",
) -> ConvVAE:
    """Fit ``vae`` by the ELBO (Bernoulli likelihood, ``beta``-weighted KL) on X in [0, 1]."""
    if not isinstance(vae, ConvVAE):
        raise TypeError(f"vae must be a ConvVAE, got {type(vae).__name__}")
    X = torch.as_tensor(V.check_array(X, "X", ndim=4, dtype=np.float32, low=0.0, high=1.0))
    epochs = V.check_int(epochs, "epochs", low=0)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    beta = V.check_scalar(beta, "beta", low=0.0)
    gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
    torch.manual_seed(int(seed))
    vae.to(device)
    X = X.to(device)
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    vae.train()
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=gen)
        for start in range(0, len(X), batch_size):
            xb = X[order[start : start + batch_size].to(device)]
            recon, mu, logvar = vae(xb)
            rec = F.binary_cross_entropy(recon, xb, reduction="sum") / len(xb)
            kl = -0.5 * (1 + logvar - mu * mu - logvar.exp()).sum() / len(xb)
            loss = rec + beta * kl
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return vae.eval()
