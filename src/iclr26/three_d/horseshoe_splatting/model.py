"""Horseshoe Splatting: 3D Gaussian splats whose (log-)scales carry a global-local horseshoe
prior, s_ij ~ N(beta_ij, sigma_ij^2 theta_j^2 lambda_ij^2), lambda_ij ~ C+(0, 1) per splat and
axis, theta_j ~ C+(0, b) per axis, written with the inverse-Gamma augmentation
(lambda^2 | nu ~ IG(1/2, 1/nu), nu ~ IG(1/2, 1), theta^2 | xi ~ IG(1/2, 1/xi), xi ~ IG(1/2, 1/b^2)).
A mean-field q mirrors the augmentation (Gaussian on s, IG on the rest), trained jointly with
the splats by Adam on Gaussian-NLL reconstruction + kl_weight * KL. Prediction draws the
hierarchy ancestrally (M renders) for a predictive mean and a per-pixel std."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.gs_raster import Camera, render

from .inverse_gamma import _e_inv, _e_log, _entropy, _expected_log_ig, _kl

PRIORS = ("horseshoe", "gaussian", "none")


def _inv_softplus(x: float) -> float:
    return math.log(math.expm1(x))


class HorseshoeSplatting(nn.Module):
    """Bayesian 3DGS with a prior on the three diagonal log-scales of every splat.

    ``prior``: ``"horseshoe"`` (the paper), ``"gaussian"`` (same VI, s ~ N(beta, prior_std^2),
    no shrinkage) or ``"none"`` (deterministic 3DGS: point estimate, no KL).
    Splats are initialised from ``init_means`` (N, 3) and ``init_colors`` (N, 3) in (0, 1)."""

    def __init__(
        self,
        init_means: torch.Tensor,
        init_colors: torch.Tensor | None = None,
        *,
        prior: str = "horseshoe",
        init_scale: float = 0.05,
        mc_train: int = 2,
        mc_test: int = 10,
        kl_weight: float = 1e-3,
        rho0: float = -5.0,
        global_scale: float = 1.0,
        prior_std: float = 1.0,
        pixel_std0: float = 0.05,
        clamp_samples: bool = True,
        background=(1.0, 1.0, 1.0),
        seed: int = 0,
    ) -> None:
        super().__init__()
        V.check_tensor(init_means, "init_means", ndim=2, shape=(None, 3), floating=True)
        n = init_means.shape[0]
        if init_colors is None:
            init_colors = torch.full((n, 3), 0.5)
        V.check_tensor(
            init_colors, "init_colors", ndim=2, shape=(n, 3), floating=True, low=0.0, high=1.0
        )
        self.prior = V.check_choice(prior, "prior", PRIORS)
        init_scale = V.check_scalar(init_scale, "init_scale", low=0, low_open=True)
        self.mc_train = V.check_int(mc_train, "mc_train", low=1)
        self.mc_test = V.check_int(mc_test, "mc_test", low=1)
        self.kl_weight = V.check_scalar(kl_weight, "kl_weight", low=0)
        rho0 = V.check_scalar(rho0, "rho0", low=-30.0, high=10.0)
        self.global_scale = V.check_scalar(global_scale, "global_scale", low=0, low_open=True)
        self.prior_std = V.check_scalar(prior_std, "prior_std", low=0, low_open=True)
        pixel_std0 = V.check_scalar(pixel_std0, "pixel_std0", low=0, low_open=True)
        self.clamp_samples = V.check_bool(clamp_samples, "clamp_samples")
        self.background = torch.as_tensor(background, dtype=torch.float32)
        V.check_tensor(self.background, "background", shape=(3,), floating=True, low=0.0, high=1.0)
        self.generator = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        f = torch.float32
        c = init_colors.to(f).clamp(1e-3, 1 - 1e-3)
        self.means = nn.Parameter(init_means.detach().to(f).clone())
        self.beta = nn.Parameter(torch.full((n, 3), math.log(init_scale)))  # posterior mean of s
        self.rho = nn.Parameter(torch.full((n, 3), rho0))  # sigma = softplus(rho)
        quats = torch.zeros(n, 4)
        quats[:, 0] = 1.0
        self.quats = nn.Parameter(quats + 0.01 * torch.randn(n, 4, generator=self.generator))
        self.opacity_logits = nn.Parameter(torch.full((n,), 0.0))
        self.color_logits = nn.Parameter(torch.log(c / (1 - c)))
        self.pixel_rho = nn.Parameter(torch.tensor(_inv_softplus(pixel_std0)))
        # IG factors (shape, rate) through softplus: lambda^2, nu (N, 3); theta^2, xi (3,)
        half, one = _inv_softplus(0.5), _inv_softplus(1.0)
        self.lam_a = nn.Parameter(torch.full((n, 3), half))
        self.lam_b = nn.Parameter(torch.full((n, 3), one))
        self.nu_a = nn.Parameter(torch.full((n, 3), half))
        self.nu_b = nn.Parameter(torch.full((n, 3), one))
        self.theta_a = nn.Parameter(torch.full((3,), half))
        self.theta_b = nn.Parameter(torch.full((3,), _inv_softplus(1.0 / self.global_scale**2)))
        self.xi_a = nn.Parameter(torch.full((3,), half))
        self.xi_b = nn.Parameter(torch.full((3,), _inv_softplus(1.0 / self.global_scale**2)))

    # ------------------------------------------------------------------ posterior pieces
    @property
    def sigma(self) -> torch.Tensor:
        return F.softplus(self.rho)

    def _ig(self, a, b):
        return F.softplus(a) + 1e-6, F.softplus(b) + 1e-6

    def kl(self) -> torch.Tensor:
        """KL(q || p) of the scale hierarchy, summed over splats and axes (0 for ``"none"``)."""
        if self.prior == "none":
            return self.beta.new_zeros(())
        sigma = self.sigma
        if self.prior == "gaussian":
            s0 = self.prior_std
            return (math.log(s0) - torch.log(sigma) + sigma**2 / (2 * s0**2) - 0.5).sum()
        la, lb = self._ig(self.lam_a, self.lam_b)
        na, nb = self._ig(self.nu_a, self.nu_b)
        ta, tb = self._ig(self.theta_a, self.theta_b)
        xa, xb = self._ig(self.xi_a, self.xi_b)
        e_inv_l, e_log_l = _e_inv(la, lb), _e_log(la, lb)
        e_inv_t, e_log_t = _e_inv(ta, tb), _e_log(ta, tb)
        # E_q[log q(s) - log p(s | lambda, theta)] for q(s) = N(beta, sigma^2), p = N(beta, sigma^2 theta^2 lambda^2)
        kl_s = 0.5 * (e_log_t + e_log_l) + 0.5 * e_inv_t * e_inv_l - 0.5
        kl_lam = -_entropy(la, lb) - _expected_log_ig(
            0.5, e_log_l, e_inv_l, -_e_log(na, nb), _e_inv(na, nb)
        )
        kl_nu = _kl(na, nb, torch.full_like(na, 0.5), torch.ones_like(nb))
        kl_theta = -_entropy(ta, tb) - _expected_log_ig(
            0.5, e_log_t, e_inv_t, -_e_log(xa, xb), _e_inv(xa, xb)
        )
        b2 = torch.full_like(xb, 1.0 / self.global_scale**2)
        kl_xi = _kl(xa, xb, torch.full_like(xa, 0.5), b2)
        return kl_s.sum() + kl_lam.sum() + kl_nu.sum() + kl_theta.sum() + kl_xi.sum()

    def sample_log_scales(self, *, ancestral: bool = False) -> torch.Tensor:
        """One draw of s: ``beta + sigma eps`` (training, reparameterised) or, with
        ``ancestral``, ``beta + sigma theta lambda eps`` with theta^2, lambda^2 from q."""
        if self.prior == "none":
            return self.beta
        eps = torch.randn(self.beta.shape, generator=self.generator).to(self.beta.device)
        spread = self.sigma
        if ancestral and self.prior == "horseshoe":
            with torch.no_grad():
                la, lb = self._ig(self.lam_a, self.lam_b)
                ta, tb = self._ig(self.theta_a, self.theta_b)
                lam2 = (
                    1.0
                    / torch._standard_gamma(la.cpu(), generator=self.generator).to(la.device)
                    * lb
                )
                th2 = (
                    1.0
                    / torch._standard_gamma(ta.cpu(), generator=self.generator).to(ta.device)
                    * tb
                )
                lam, th = lam2.sqrt(), th2.sqrt()
                if self.clamp_samples:
                    lam, th = lam.clamp(1e-4, 1.0), th.clamp(1e-4, 1.0)
            spread = spread * lam * th
        return self.beta + spread * eps

    def render_with(self, log_scales: torch.Tensor, camera: Camera):
        if camera.rotation.device != self.beta.device:
            camera = camera.to(device=self.beta.device)
        return render(
            self.means,
            torch.exp(log_scales.clamp(-12.0, 4.0)),
            self.quats,
            torch.sigmoid(self.opacity_logits),
            camera,
            colors=torch.sigmoid(self.color_logits),
            background=self.background.to(self.beta.device),
            backend="torch",
        )

    # ------------------------------------------------------------------ fit / predict
    def loss(self, image: torch.Tensor, camera: Camera) -> torch.Tensor:
        """Per-pixel mean Gaussian NLL over ``mc_train`` q draws + kl_weight * KL / #scales."""
        var = F.softplus(self.pixel_rho) ** 2 + 1e-8
        draws = 1 if self.prior == "none" else self.mc_train
        nll = 0.0
        for _ in range(draws):
            pred = self.render_with(self.sample_log_scales(), camera).image
            nll = (
                nll + (0.5 * (image - pred) ** 2 / var + 0.5 * torch.log(2 * math.pi * var)).mean()
            )
        return nll / draws + self.kl_weight * self.kl() / self.beta.numel()

    def fit(
        self, images, cameras, *, steps: int = 500, lr: float = 0.01, horseshoe_lr: float = 0.01
    ):
        """Adam on random training views, one view per step."""
        if (
            not isinstance(cameras, (list, tuple))
            or not cameras
            or not all(isinstance(c, Camera) for c in cameras)
        ):
            raise ValueError("cameras must be a non-empty list of Camera")
        images = torch.as_tensor(images) if not torch.is_tensor(images) else images
        h, w = cameras[0].height, cameras[0].width
        V.check_tensor(
            images,
            "images",
            ndim=4,
            shape=(len(cameras), h, w, 3),
            floating=True,
            low=0.0,
            high=1.0,
        )
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        horseshoe_lr = V.check_scalar(horseshoe_lr, "horseshoe_lr", low=0, low_open=True)
        ig = [
            self.lam_a,
            self.lam_b,
            self.nu_a,
            self.nu_b,
            self.theta_a,
            self.theta_b,
            self.xi_a,
            self.xi_b,
        ]
        ig_ids = {id(p) for p in ig}
        rest = [p for p in self.parameters() if id(p) not in ig_ids]
        opt = torch.optim.Adam([{"params": rest, "lr": lr}, {"params": ig, "lr": horseshoe_lr}])
        order = torch.randint(0, len(cameras), (steps,), generator=self.generator)
        self.history = []
        for i in order.tolist():
            opt.zero_grad()
            loss = self.loss(images[i].float().to(self.beta.device), cameras[i])
            loss.backward()
            torch.nn.utils.clip_grad_norm_([self.theta_a, self.theta_b, self.xi_a, self.xi_b], 5.0)
            opt.step()
            self.history.append(float(loss.detach()))
        return self

    @torch.no_grad()
    def predict(self, camera: Camera, *, return_std: bool = False, samples: int | None = None):
        """Predictive mean image (H, W, 3) over M ancestral renders and, with ``return_std``,
        the per-pixel std (H, W) (mean over colour channels). ``"none"`` renders once, std 0."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        m = self.mc_test if samples is None else V.check_int(samples, "samples", low=1)
        if self.prior == "none":
            m = 1
        imgs = torch.stack(
            [
                self.render_with(self.sample_log_scales(ancestral=True), camera).image
                for _ in range(m)
            ]
        )
        mean = imgs.mean(0)
        if not return_std:
            return mean
        return mean, imgs.std(0, unbiased=False).mean(-1)

    @torch.no_grad()
    def render_point(self, camera: Camera):
        """Fast point render with s = beta (posterior mean/median of the log-scale)."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        return self.render_with(self.beta, camera)

    @torch.no_grad()
    def sparsity_report(self, *, rel_threshold: float = 0.1) -> dict:
        """Share of posterior-mean scale components below ``rel_threshold`` x median scale."""
        rel_threshold = V.check_scalar(rel_threshold, "rel_threshold", low=0, low_open=True)
        scales = torch.exp(self.beta)
        thin = scales < rel_threshold * scales.median()
        return {"share": float(thin.float().mean()), "thin_mask": thin}


def GaussianSplatting(
    init_means: torch.Tensor, init_colors: torch.Tensor | None = None, **kw
) -> HorseshoeSplatting:
    """Deterministic 3DGS baseline: the same splats, optimiser and loss without a prior."""
    return HorseshoeSplatting(init_means, init_colors, prior="none", **kw)
