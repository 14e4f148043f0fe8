"""Horseshoe Splatting: 3D Gaussian splats whose (log-)scales carry a global-local horseshoe
prior, s_ij ~ N(beta_ij, sigma_ij^2 theta_j^2 lambda_ij^2), lambda_ij ~ C+(0, 1) per splat and
axis, theta_j ~ C+(0, b) per axis, written with the inverse-Gamma augmentation
(lambda^2 | nu ~ IG(1/2, 1/nu), nu ~ IG(1/2, 1), theta^2 | xi ~ IG(1/2, 1/xi), xi ~ IG(1/2, 1/b^2)).
A mean-field q mirrors the augmentation (Gaussian on s, IG on the rest), trained jointly with
the splats by Adam on Gaussian-NLL reconstruction (or, with ``photometric="l1_dssim"``, the
3DGS L1 + D-SSIM loss) + kl_weight * KL. Prediction draws the
hierarchy ancestrally (M renders) for a predictive mean and a per-pixel std. The ablation priors
of the paper's Table 3 share everything else: a Gaussian N(beta, prior_std^2) and a Laplace
Laplace(beta, prior_std) prior on s, both with closed-form KL against the Gaussian q(s).
Colour is view-dependent spherical harmonics of degree ``sh_degree`` whose active degree ``fit``
raises every 1000 steps, and densification prunes too-large splats, both as 3DGS."""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.gs_raster import Camera, l1_dssim_loss, quat_to_rotmat, render, rgb_to_sh0
from iclr26.three_d.gs_raster.losses import WINDOW_SIZE

from .inverse_gamma import _cavi_sweep, _e_inv, _e_log, _entropy, _expected_log_ig, _kl

PRIORS = ("horseshoe", "gaussian", "laplace", "none")
# reconstruction terms: the paper's Gaussian NLL with a learned pixel std (default), or the
# official code's 3DGS photometric loss (1 - lambda) L1 + lambda (1 - SSIM)
PHOTOMETRIC = ("gaussian_nll", "l1_dssim")
# how the inverse-Gamma factors are updated: Adam on the ELBO (the paper's and the code's), or
# closed-form mean-field coordinate ascent every ``cavi_every`` steps (an option, not the paper's)
IG_UPDATES = ("sgd", "cavi")
# the raw (softplus) parameters of the IG factors: (shape, rate) of lambda^2, nu, theta^2, xi
IG_PARAMS = ("lam_a", "lam_b", "nu_a", "nu_b", "theta_a", "theta_b", "xi_a", "xi_b")
# the official code resets NaN entries of its horseshoe parameters to this value every step
NAN_RESET_VALUE = 0.5
_IG_EPS = 1e-6  # added to softplus so shapes and rates stay > 0
# tensors with one row per splat (densification clones, splits and prunes them together)
PER_SPLAT = (
    "means",
    "beta",
    "rho",
    "quats",
    "opacity_logits",
    "sh_dc",
    "sh_rest",
    "lam_a",
    "lam_b",
    "nu_a",
    "nu_b",
)


def _inv_softplus(x: float) -> float:
    return math.log(math.expm1(x))


def _inv_softplus_tensor(x: torch.Tensor) -> torch.Tensor:
    """softplus^-1 in float64 (stable for large x); x is clamped to >= 1e-12."""
    x = x.double().clamp_min(1e-12)
    return x + torch.log(-torch.expm1(-x))


def kl_anneal_factor(step: int, steps: int, anneal: float) -> float:
    """Factor on the KL at training step ``step`` (1-based) of ``steps``: a linear warm-up from 0
    over the first ``R = max(1, round(anneal * steps))`` steps, ``min(1, (step - 1) / R)``, so
    step 1 has 0 and every step after R has 1; ``anneal=0`` turns it off (always 1)."""
    steps = V.check_int(steps, "steps", low=1)
    step = V.check_int(step, "step", low=1, high=steps)
    anneal = V.check_scalar(anneal, "anneal", low=0.0, high=1.0)
    if anneal == 0.0:
        return 1.0
    ramp = max(1, round(anneal * steps))
    return min(1.0, (step - 1) / ramp)


class HorseshoeSplatting(nn.Module):
    """Bayesian 3DGS with a prior on the three diagonal log-scales of every splat.

    ``prior``: ``"horseshoe"`` (the paper), ``"gaussian"`` (same VI, s ~ N(beta, prior_std^2),
    no shrinkage), ``"laplace"`` (same VI, s ~ Laplace(beta, prior_std)) or ``"none"``
    (deterministic 3DGS: point estimate, no KL). Splats are initialised from ``init_means``
    (N, 3) and ``init_colors`` (N, 3) in [0, 1] (the SH DC band; higher bands start at 0)."""

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
        sh_degree: int = 3,
        background=(1.0, 1.0, 1.0),
        seed: int = 0,
        ig_updates: str = "sgd",
        cavi_every: int = 10,
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
        self.sh_degree = V.check_int(sh_degree, "sh_degree", low=0, high=3)
        self.ig_updates = V.check_choice(ig_updates, "ig_updates", IG_UPDATES)
        if self.ig_updates == "cavi" and self.prior != "horseshoe":
            raise ValueError(
                f'ig_updates="cavi" needs prior="horseshoe" (the only prior with IG factors), '
                f"got prior={self.prior!r}"
            )
        self.cavi_every = V.check_int(cavi_every, "cavi_every", low=1)
        self.background = torch.as_tensor(background, dtype=torch.float32)
        V.check_tensor(self.background, "background", shape=(3,), floating=True, low=0.0, high=1.0)
        self.generator = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        f = torch.float32
        self.means = nn.Parameter(init_means.detach().to(f).clone())
        self.beta = nn.Parameter(torch.full((n, 3), math.log(init_scale)))  # posterior mean of s
        self.rho = nn.Parameter(torch.full((n, 3), rho0))  # sigma = softplus(rho)
        quats = torch.zeros(n, 4)
        quats[:, 0] = 1.0
        self.quats = nn.Parameter(quats + 0.01 * torch.randn(n, 4, generator=self.generator))
        self.opacity_logits = nn.Parameter(torch.full((n,), 0.0))
        self.sh_dc = nn.Parameter(rgb_to_sh0(init_colors.detach().to(f))[:, None, :].clone())
        self.sh_rest = nn.Parameter(torch.zeros(n, (self.sh_degree + 1) ** 2 - 1, 3))
        # the SH degree that renders use; fit's progressive schedule (3DGS) raises it from 0,
        # a buffer so that a saved model renders as it was trained
        self.register_buffer("active_sh", torch.tensor(self.sh_degree))
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
        if self.ig_updates == "cavi":  # closed-form updates only: no gradients for the IG factors
            for name in IG_PARAMS:
                getattr(self, name).requires_grad_(False)
        self.ig_nan_resets = 0  # IG entries reset from NaN over the model's life
        self.nan_reset_log: list[dict] = []
        self.cavi_log: list[int] = []
        self.kl_factors: list[float] = []
        self.sh_degrees: list[int] = []

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # a state dict saved before the SH schedule existed rendered every band
        state_dict.setdefault(prefix + "active_sh", torch.tensor(self.sh_degree))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def active_sh_degree(self) -> int:
        """The SH degree renders use now (``sh_degree`` unless fit's schedule holds it lower)."""
        return int(self.active_sh)

    # ------------------------------------------------------------------ posterior pieces
    @property
    def sigma(self) -> torch.Tensor:
        return F.softplus(self.rho)

    def _ig(self, a, b):
        return F.softplus(a) + _IG_EPS, F.softplus(b) + _IG_EPS

    def ig_factors(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """The (shape, rate) of every IG factor: ``lam`` and ``nu`` (N, 3), ``theta`` and ``xi``
        (3,), detached."""
        return {
            k: tuple(t.detach() for t in self._ig(getattr(self, f"{k}_a"), getattr(self, f"{k}_b")))
            for k in ("lam", "nu", "theta", "xi")
        }

    @torch.no_grad()
    def _set_ig(self, key: str, shape: torch.Tensor, rate: torch.Tensor) -> None:
        for suffix, value in (("a", shape), ("b", rate)):
            p = getattr(self, f"{key}_{suffix}")
            raw = _inv_softplus_tensor(value.double() - _IG_EPS)
            p.copy_(raw.to(p.dtype).expand_as(p))

    @torch.no_grad()
    def cavi_update(self, *, sweeps: int = 1) -> None:
        """``sweeps`` closed-form coordinate-ascent sweeps over the IG factors (lambda^2, nu,
        theta^2, xi in turn, see :func:`ig_cavi_sweep`); each update is the exact optimum of the
        ELBO (here: of the KL, the only term holding them) in that factor given the others.
        Under q(s) = N(beta, sigma^2) the standardised spread E[(s - beta)^2] / sigma^2 is 1."""
        if self.prior != "horseshoe":
            raise ValueError(f'cavi_update needs prior="horseshoe", got prior={self.prior!r}')
        sweeps = V.check_int(sweeps, "sweeps", low=1)
        q = {k: (a.double(), b.double()) for k, (a, b) in self.ig_factors().items()}
        spread2 = torch.ones_like(q["lam"][0])
        b2 = torch.full_like(q["xi"][1], 1.0 / self.global_scale**2)
        lam, nu, theta, xi = q["lam"], q["nu"], q["theta"], q["xi"]
        for _ in range(sweeps):
            lam, nu, theta, xi = _cavi_sweep(spread2, nu, theta, xi, b2)
        for key, (a, b) in zip(("lam", "nu", "theta", "xi"), (lam, nu, theta, xi)):
            self._set_ig(key, a, b)

    @torch.no_grad()
    def reset_nan_ig(self, opt: torch.optim.Optimizer | None = None) -> dict[str, int]:
        """Reset NaN entries of the IG parameters so that their shape/rate is 0.5 (the official
        code's reset), zero their Adam moments in ``opt`` (if given), add them to
        ``ig_nan_resets`` and return the count per parameter (only those with a reset)."""
        if opt is not None and not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"opt must be a torch optimizer or None, got {type(opt).__name__}")
        raw = _inv_softplus(NAN_RESET_VALUE - _IG_EPS)
        counts = {}
        for name in IG_PARAMS:
            p = getattr(self, name)
            bad = torch.isnan(p)
            n_bad = int(bad.sum())
            if not n_bad:
                continue
            p[bad] = raw
            state = opt.state.get(p) if opt is not None else None
            for key in ("exp_avg", "exp_avg_sq"):
                if state and key in state:
                    state[key][bad] = 0
            counts[name] = n_bad
        self.ig_nan_resets += sum(counts.values())
        return counts

    def kl(self) -> torch.Tensor:
        """KL(q || p) of the scale hierarchy, summed over splats and axes (0 for ``"none"``)."""
        if self.prior == "none":
            return self.beta.new_zeros(())
        sigma = self.sigma
        s0 = self.prior_std
        if self.prior == "gaussian":
            return (math.log(s0) - torch.log(sigma) + sigma**2 / (2 * s0**2) - 0.5).sum()
        if self.prior == "laplace":
            # -H[N(beta, sigma^2)] - E_q[log Laplace(s; beta, s0)], E_q|s - beta| = sigma sqrt(2/pi)
            neg_entropy = -0.5 * torch.log(2 * math.pi * math.e * sigma**2)
            return (neg_entropy + math.log(2 * s0) + sigma * math.sqrt(2 / math.pi) / s0).sum()
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
            sh=torch.cat([self.sh_dc, self.sh_rest], 1),
            sh_degree=self.active_sh_degree,  # bands above it get no gradient (as 3DGS)
            background=self.background.to(self.beta.device),
            backend="torch",
        )

    # ------------------------------------------------------------------ fit / predict
    def loss(
        self,
        image: torch.Tensor,
        camera: Camera,
        *,
        photometric: str = "gaussian_nll",
        lambda_dssim: float = 0.2,
    ) -> torch.Tensor:
        """Reconstruction averaged over ``mc_train`` q draws + kl_weight * KL / #scales. The
        reconstruction is the per-pixel mean Gaussian NLL (``photometric="gaussian_nll"``) or
        the 3DGS loss ``(1 - lambda_dssim) L1 + lambda_dssim (1 - SSIM)`` (``"l1_dssim"``)."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        V.check_tensor(image, "image", shape=(camera.height, camera.width, 3), floating=True)
        photometric, lambda_dssim = self._check_photometric(
            photometric, lambda_dssim, camera, "image"
        )
        return self._loss(image, camera, photometric, lambda_dssim)[0]

    @staticmethod
    def _check_photometric(photometric, lambda_dssim, camera: Camera, image_name: str):
        photometric = V.check_choice(photometric, "photometric", PHOTOMETRIC)
        lambda_dssim = V.check_scalar(lambda_dssim, "lambda_dssim", low=0.0, high=1.0)
        h, w = camera.height, camera.width
        if photometric == "l1_dssim" and min(h, w) < WINDOW_SIZE:
            raise ValueError(
                f"{image_name} must be at least {WINDOW_SIZE}x{WINDOW_SIZE} pixels for "
                f'photometric="l1_dssim" (the SSIM window), got {h}x{w}'
            )
        return photometric, lambda_dssim

    def _loss(
        self,
        image: torch.Tensor,
        camera: Camera,
        photometric: str = "gaussian_nll",
        lambda_dssim: float = 0.2,
        kl_factor: float = 1.0,
    ):
        var = F.softplus(self.pixel_rho) ** 2 + 1e-8
        draws = 1 if self.prior == "none" else self.mc_train
        nll, outs = 0.0, []
        for _ in range(draws):
            out = self.render_with(self.sample_log_scales(), camera)
            if out.means2d.requires_grad:
                out.means2d.retain_grad()  # screen-space gradients drive densification
            outs.append(out)
            pred = out.image
            if photometric == "l1_dssim":
                nll = nll + l1_dssim_loss(pred, image, lambda_dssim)
                continue
            nll = (
                nll + (0.5 * (image - pred) ** 2 / var + 0.5 * torch.log(2 * math.pi * var)).mean()
            )
        kl_weight = self.kl_weight * kl_factor
        return nll / draws + kl_weight * self.kl() / max(self.beta.numel(), 1), outs

    def fit(
        self,
        images,
        cameras,
        *,
        steps: int = 500,
        lr: float = 0.01,
        horseshoe_lr: float = 0.01,
        densify_from: int = 500,
        densify_until: int = 15_000,
        densify_every: int = 100,
        grad_threshold: float = 2e-4,
        percent_dense: float = 0.01,
        min_opacity: float = 0.005,
        opacity_reset_every: int | None = 3000,
        prune_big_after: int | None = 3000,
        max_screen_radius: float | None = 20.0,
        max_world_scale: float | None = 0.1,
        sh_increase_every: int | None = 1000,
        photometric: str = "gaussian_nll",
        lambda_dssim: float = 0.2,
        kl_anneal: float = 0.0,
        reset_nan: bool = True,
    ):
        """Adam on random training views, one view per step, with the 3DGS densification
        schedule: every ``densify_every`` steps in ``[densify_from, densify_until)`` splats whose
        mean screen-space (NDC) position gradient reaches ``grad_threshold`` are cloned (small:
        max scale <= ``percent_dense`` x scene extent) or split in two (large; children drawn
        from the splat, scales / 1.6), splats with opacity < ``min_opacity`` are pruned, and
        every ``opacity_reset_every`` steps (None: never) opacities are reset to <= 0.01. At the
        densification steps after step ``prune_big_after`` (3DGS: after its opacity-reset
        interval, 3000; None: never) splats that are too large are pruned as well: a largest 2-D
        pixel radius since the previous densification step above ``max_screen_radius`` (20), or
        a largest posterior-median world scale above ``max_world_scale`` (0.1) x the scene extent
        (1.1 x the largest distance of a camera centre from their mean); None turns either test
        off. All per-splat tensors (beta, rho, the local IG factors, SH, Adam's moments) follow
        their splat. With ``sh_increase_every`` (1000, as 3DGS; None: all bands from step 1) the
        active SH degree starts at 0 and rises by one at every step that is a multiple of it, up
        to ``sh_degree``; bands above the active degree are not rendered and get no gradient; the
        degree of every step is kept in ``sh_degrees``.
        ``photometric`` picks the reconstruction term (see :meth:`loss`): ``"gaussian_nll"``
        (default; the paper's) or ``"l1_dssim"`` (the official code's 3DGS loss, weight
        ``lambda_dssim``; needs images of at least 11x11 pixels, the SSIM window; the pixel std
        is then not trained). ``kl_anneal`` in [0, 1] warms the KL weight up linearly from 0
        over that fraction of the steps (:func:`kl_anneal_factor`; 0: off, the default); the
        factor of every step is kept in ``kl_factors``. With ``ig_updates="cavi"`` the IG factors
        take no Adam steps and get one closed-form sweep (:meth:`cavi_update`) at the end of every
        ``cavi_every``-th step, after its densification (the steps are kept in ``cavi_log``).
        With ``reset_nan`` (default, as the official code) NaN entries of the IG parameters are
        reset before the first step and after every step (:meth:`reset_nan_ig`); each reset is
        logged in ``nan_reset_log``, counted in ``ig_nan_resets`` and announced by a
        ``RuntimeWarning`` at the end of ``fit``."""
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
        photometric, lambda_dssim = self._check_photometric(
            photometric, lambda_dssim, cameras[0], "images"
        )
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        horseshoe_lr = V.check_scalar(horseshoe_lr, "horseshoe_lr", low=0, low_open=True)
        densify_from = V.check_int(densify_from, "densify_from", low=0)
        densify_until = V.check_int(densify_until, "densify_until", low=0)
        densify_every = V.check_int(densify_every, "densify_every", low=1)
        grad_threshold = V.check_scalar(grad_threshold, "grad_threshold", low=0, low_open=True)
        percent_dense = V.check_scalar(percent_dense, "percent_dense", low=0, low_open=True)
        min_opacity = V.check_scalar(min_opacity, "min_opacity", low=0, high=1)
        if opacity_reset_every is not None:
            opacity_reset_every = V.check_int(opacity_reset_every, "opacity_reset_every", low=1)
        if prune_big_after is not None:
            prune_big_after = V.check_int(prune_big_after, "prune_big_after", low=0)
        if max_screen_radius is not None:
            max_screen_radius = V.check_scalar(
                max_screen_radius, "max_screen_radius", low=0, low_open=True
            )
        if max_world_scale is not None:
            max_world_scale = V.check_scalar(
                max_world_scale, "max_world_scale", low=0, low_open=True
            )
        if sh_increase_every is not None:
            sh_increase_every = V.check_int(sh_increase_every, "sh_increase_every", low=1)
        kl_anneal = V.check_scalar(kl_anneal, "kl_anneal", low=0.0, high=1.0)
        reset_nan = V.check_bool(reset_nan, "reset_nan")
        centres = torch.stack([c.center.detach().cpu().float() for c in cameras])
        extent = 1.1 * float((centres - centres.mean(0)).norm(dim=1).max())  # 3DGS's extent
        extent = max(extent, 1e-6)
        opt = self._optimizer(lr, horseshoe_lr)
        order = torch.randint(0, len(cameras), (steps,), generator=self.generator)
        self.history = []
        self.densify_log = []
        self.nan_reset_log = []
        self.cavi_log = []
        self.kl_factors = []
        self.sh_degrees = []
        self.active_sh.fill_(0 if sh_increase_every is not None else self.sh_degree)
        self._reset_grad_stats()
        if reset_nan:
            self._log_nan_resets(opt, 0)
        cavi = self.ig_updates == "cavi"
        for step, i in enumerate(order.tolist(), start=1):
            opt.zero_grad()
            if sh_increase_every is not None and step % sh_increase_every == 0:
                # 3DGS raises the degree before rendering that step
                self.active_sh.fill_(min(self.active_sh_degree + 1, self.sh_degree))
            self.sh_degrees.append(self.active_sh_degree)
            kl_factor = kl_anneal_factor(step, steps, kl_anneal)
            self.kl_factors.append(kl_factor)
            loss, outs = self._loss(
                images[i].float().to(self.beta.device),
                cameras[i],
                photometric,
                lambda_dssim,
                kl_factor,
            )
            loss.backward()
            if not cavi:
                torch.nn.utils.clip_grad_norm_(
                    [self.theta_a, self.theta_b, self.xi_a, self.xi_b], 5.0
                )
            opt.step()
            if reset_nan:
                self._log_nan_resets(opt, step)
            self.history.append(float(loss.detach()))
            if step < densify_until:
                self._accumulate_grad_stats(outs, cameras[i])
                if step >= densify_from and step % densify_every == 0:
                    big = prune_big_after is not None and step > prune_big_after
                    self._densify_and_prune(
                        opt,
                        grad_threshold,
                        percent_dense * extent,
                        min_opacity,
                        step,
                        max_screen_radius=max_screen_radius if big else None,
                        max_world_scale=(
                            max_world_scale * extent if big and max_world_scale else None
                        ),
                    )
                if opacity_reset_every is not None and step % opacity_reset_every == 0:
                    self._reset_opacity(opt)
            if cavi and step % self.cavi_every == 0:  # after densifying: theta sees the new N
                self.cavi_update()
                self.cavi_log.append(step)
        n_reset = sum(sum(e["counts"].values()) for e in self.nan_reset_log)
        if n_reset:
            warnings.warn(
                f"fit reset {n_reset} NaN entries of the inverse-Gamma parameters to "
                f"{NAN_RESET_VALUE} at {len(self.nan_reset_log)} step(s); see nan_reset_log",
                RuntimeWarning,
                stacklevel=2,
            )
        return self

    def _log_nan_resets(self, opt, step: int) -> None:
        counts = self.reset_nan_ig(opt)
        if counts:
            self.nan_reset_log.append({"step": step, "counts": counts})

    # ------------------------------------------------------------------ densification (3DGS)
    def _optimizer(self, lr: float, horseshoe_lr: float) -> torch.optim.Adam:
        groups = {"rest": [], "ig": [], "sh_rest": []}
        for name, p in self.named_parameters():
            key = "ig" if name in IG_PARAMS else "sh_rest" if name == "sh_rest" else "rest"
            groups[key].append(p)
        param_groups = [
            {"params": groups["rest"], "lr": lr},
            {"params": groups["sh_rest"], "lr": lr / 20},  # 3DGS: higher SH bands lr / 20
        ]
        if self.ig_updates == "sgd":  # under "cavi" the IG factors are set in closed form
            param_groups.append({"params": groups["ig"], "lr": horseshoe_lr})
        return torch.optim.Adam(param_groups)

    def _reset_grad_stats(self) -> None:
        n = self.means.shape[0]
        self._grad_sum = torch.zeros(n, device=self.beta.device)
        self._grad_count = torch.zeros(n, device=self.beta.device)
        self._max_radii = torch.zeros(n, device=self.beta.device)  # pixels, since last densify

    @torch.no_grad()
    def _accumulate_grad_stats(self, outs, camera: Camera) -> None:
        """Add this step's screen-space gradient norm (NDC units, as 3DGS; summed over the MC
        renders, which share the splat positions) to every splat the view saw."""
        grads = [out.means2d.grad for out in outs if out.means2d.grad is not None]
        if not grads:
            return
        to_ndc = torch.tensor([camera.width / 2, camera.height / 2], device=self.beta.device)
        radii = torch.stack([out.radii for out in outs]).amax(0).to(self._max_radii)
        self._max_radii = torch.maximum(self._max_radii, radii)
        seen = radii > 0
        norm = (torch.stack(grads).sum(0) * to_ndc).norm(dim=-1)
        self._grad_sum[seen] += norm[seen]
        self._grad_count[seen] += 1

    @torch.no_grad()
    def _densify_and_prune(
        self,
        opt,
        grad_threshold,
        dense_scale,
        min_opacity,
        step,
        *,
        max_screen_radius=None,
        max_world_scale=None,
    ) -> None:
        """3DGS's densify_and_prune: clone / split the hot splats, then prune those with opacity
        below ``min_opacity`` and, where given, those whose largest pixel radius since the last
        densification exceeds ``max_screen_radius`` or whose largest posterior-median scale
        exceeds ``max_world_scale`` (world units). Split children have not been rendered yet, so
        only the world-space test applies to them; a clone inherits its parent's radius."""
        grads = self._grad_sum / self._grad_count.clamp_min(1)
        hot = grads >= grad_threshold
        max_scale = torch.exp(self.beta).max(1).values
        clone = hot & (max_scale <= dense_scale)
        split = hot & (max_scale > dense_scale)
        n = self.means.shape[0]
        ids = torch.arange(n, device=self.beta.device)
        split_ids = ids[split].repeat(2)
        src = torch.cat([ids[~split], ids[clone], split_ids])
        fresh = torch.zeros(src.numel(), dtype=torch.bool, device=src.device)
        fresh[int((~split).sum()) :] = True  # clones and split children start with zero moments
        n_split = split_ids.numel()
        new_means = new_beta = None
        if n_split:
            std = torch.exp(self.beta[split_ids])
            noise = torch.randn(std.shape, generator=self.generator).to(std.device) * std
            rot = quat_to_rotmat(self.quats[split_ids])
            new_means = self.means[split_ids] + (rot @ noise[..., None]).squeeze(-1)
            new_beta = self.beta[split_ids] - math.log(1.6)
        # 3DGS prunes after densifying (new splats carry their parent's opacity)
        alive = torch.sigmoid(self.opacity_logits[src]) >= min_opacity
        children = slice(src.numel() - n_split, None)
        big = torch.zeros_like(alive)
        if max_screen_radius is not None:
            radius = self._max_radii[src].clone()
            radius[children] = 0.0
            big |= radius > max_screen_radius
        if max_world_scale is not None:
            log_scale = self.beta[src].clone()
            if n_split:
                log_scale[children] = new_beta
            big |= torch.exp(log_scale).max(1).values > max_world_scale
        alive &= ~big
        overrides = {}
        if n_split:
            overrides["means"] = (children, new_means)
            overrides["beta"] = (children, new_beta)
        self._reindex(opt, src, fresh, overrides, alive)
        self.densify_log.append(
            {
                "step": step,
                "cloned": int(clone.sum()),
                "split": int(split.sum()),
                "pruned": int((~alive).sum()),
                "pruned_big": int(big.sum()),
                "splats": int(self.means.shape[0]),
            }
        )
        self._reset_grad_stats()

    @torch.no_grad()
    def _reindex(self, opt, src, fresh, overrides, keep) -> None:
        """Replace every per-splat tensor by its rows ``src`` (then ``overrides``, then only the
        rows in ``keep``), carrying Adam's moments along (zero for ``fresh`` rows)."""
        slot = {id(p): (g, k) for g in opt.param_groups for k, p in enumerate(g["params"])}
        for name in PER_SPLAT:
            old = getattr(self, name)
            data = old.detach()[src].clone()
            if name in overrides:
                rows, value = overrides[name]
                data[rows] = value
            new = nn.Parameter(data[keep], requires_grad=old.requires_grad)
            state = opt.state.pop(old, None)
            if state:
                for key in ("exp_avg", "exp_avg_sq"):
                    moment = state[key][src].clone()
                    moment[fresh] = 0
                    state[key] = moment[keep]
                opt.state[new] = state
            if id(old) in slot:  # the IG factors are in no group under ig_updates="cavi"
                group, k = slot[id(old)]
                group["params"][k] = new
            setattr(self, name, new)

    @torch.no_grad()
    def _reset_opacity(self, opt) -> None:
        cap = math.log(0.01 / 0.99)
        self.opacity_logits.data.clamp_(max=cap)
        state = opt.state.get(self.opacity_logits)
        if state:
            state["exp_avg"].zero_()
            state["exp_avg_sq"].zero_()

    @torch.no_grad()
    def predict(
        self,
        camera: Camera,
        *,
        return_std: bool = False,
        samples: int | None = None,
        return_samples: bool = False,
    ):
        """Predictive mean image (H, W, 3) over M ancestral renders and, with ``return_std``,
        the per-pixel std (H, W) (mean over colour channels); with ``return_samples`` the M
        renders (M, H, W, 3) come last. ``"none"`` renders once, std 0."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        return_std = V.check_bool(return_std, "return_std")
        return_samples = V.check_bool(return_samples, "return_samples")
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
        out = (mean,)
        if return_std:
            out += (imgs.std(0, unbiased=False).mean(-1),)
        if return_samples:
            out += (imgs,)
        return out[0] if len(out) == 1 else out

    @torch.no_grad()
    def render_point(self, camera: Camera):
        """Fast point render with s = beta (posterior mean/median of the log-scale)."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        return self.render_with(self.beta, camera)

    @torch.no_grad()
    def posterior_std(self, *, samples: int = 64) -> torch.Tensor:
        """Per-component std (N, 3) of the log-scales under the predictive (ancestral) draws
        that ``predict`` renders, estimated from ``samples`` draws (0 for ``"none"``)."""
        samples = V.check_int(samples, "samples", low=2)
        if self.prior == "none":
            return torch.zeros_like(self.beta)
        draws = torch.stack([self.sample_log_scales(ancestral=True) for _ in range(samples)])
        return draws.std(0)

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
