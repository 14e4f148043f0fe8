"""Bad-input cases for the Horseshoe Splatting room (read by tests/framework/test_bad_input.py)."""

import numpy as np
import torch

from iclr26.three_d.gs_raster import orbit_cameras
from iclr26.three_d.horseshoe_splatting import (
    GaussianSplatting,
    HorseshoeSplatting,
    ause,
    ig_cavi_sweep,
    ig_entropy,
    ig_expectations,
    kde_nll,
    kl_anneal_factor,
    kl_inverse_gamma,
    make_scene_data,
    spearman_uncertainty,
)

NAN, INF = float("nan"), float("inf")
M = torch.zeros(4, 3)
M_NAN = M.clone()
M_NAN[1, 2] = NAN
CAMS = orbit_cameras(2, width=8, height=8)
IMGS = torch.rand(2, 8, 8, 3)
E = np.array([0.1, 0.3, 0.2])
T1 = torch.tensor([1.0])


def _hs(**kw):
    return HorseshoeSplatting(M, **kw)


P43 = (torch.ones(4, 3), torch.ones(4, 3))
P3 = (torch.ones(3), torch.ones(3))
S43 = torch.ones(4, 3)


CASES = [
    ("HorseshoeSplatting", "nan", lambda: HorseshoeSplatting(M_NAN), ValueError, "init_means"),
    (
        "HorseshoeSplatting",
        "shape",
        lambda: HorseshoeSplatting(torch.zeros(4, 2)),
        ValueError,
        "init_means",
    ),
    (
        "HorseshoeSplatting",
        "empty",
        lambda: HorseshoeSplatting(torch.zeros(0, 3)),
        ValueError,
        "init_means",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs(init_colors=torch.full((4, 3), 2.0)),
        ValueError,
        "init_colors",
    ),
    ("HorseshoeSplatting", "other", lambda: _hs(prior="cauchy"), ValueError, "prior"),
    ("HorseshoeSplatting", "range", lambda: _hs(kl_weight=-1.0), ValueError, "kl_weight"),
    ("HorseshoeSplatting", "range", lambda: _hs(kl_weight=NAN), ValueError, "kl_weight"),
    ("HorseshoeSplatting", "range", lambda: _hs(mc_train=0), ValueError, "mc_train"),
    ("HorseshoeSplatting", "range", lambda: _hs(global_scale=0.0), ValueError, "global_scale"),
    ("HorseshoeSplatting", "inf", lambda: _hs(rho0=INF), ValueError, "rho0"),
    (
        "HorseshoeSplatting",
        "nan",
        lambda: _hs().fit(IMGS * NAN, CAMS, steps=1),
        ValueError,
        "images",
    ),
    (
        "HorseshoeSplatting",
        "shape",
        lambda: _hs().fit(IMGS[:1], CAMS, steps=1),
        ValueError,
        "images",
    ),
    ("HorseshoeSplatting", "type", lambda: _hs().fit(IMGS, [], steps=1), ValueError, "cameras"),
    ("HorseshoeSplatting", "range", lambda: _hs().fit(IMGS, CAMS, steps=0), ValueError, "steps"),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, lr=NAN),
        ValueError,
        "lr",
    ),
    ("HorseshoeSplatting", "type", lambda: _hs().predict("cam"), TypeError, "camera"),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().predict(CAMS[0], samples=0),
        ValueError,
        "samples",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().sparsity_report(rel_threshold=-1),
        ValueError,
        "rel_threshold",
    ),
    ("HorseshoeSplatting", "range", lambda: _hs(sh_degree=4), ValueError, "sh_degree"),
    ("HorseshoeSplatting", "range", lambda: _hs(prior_std=NAN), ValueError, "prior_std"),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, grad_threshold=NAN),
        ValueError,
        "grad_threshold",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, densify_every=0),
        ValueError,
        "densify_every",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, min_opacity=1.5),
        ValueError,
        "min_opacity",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, opacity_reset_every=0),
        ValueError,
        "opacity_reset_every",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, percent_dense=-0.1),
        ValueError,
        "percent_dense",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs(prior="laplace").posterior_std(samples=1),
        ValueError,
        "samples",
    ),
    (
        "HorseshoeSplatting",
        "other",
        lambda: _hs().fit(IMGS, CAMS, steps=1, photometric="l2"),
        ValueError,
        "photometric",
    ),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, lambda_dssim=1.5),
        ValueError,
        "lambda_dssim",
    ),
    (
        "HorseshoeSplatting",
        "shape",
        lambda: _hs().fit(IMGS, CAMS, steps=1, photometric="l1_dssim"),
        ValueError,
        "images",
    ),
    (
        "HorseshoeSplatting",
        "shape",
        lambda: _hs().loss(IMGS[0, :4], CAMS[0]),
        ValueError,
        "image",
    ),
    (
        "HorseshoeSplatting",
        "nan",
        lambda: _hs().loss(IMGS[0] * NAN, CAMS[0], photometric="l1_dssim"),
        ValueError,
        "image",
    ),
    ("GaussianSplatting", "nan", lambda: GaussianSplatting(M_NAN), ValueError, "init_means"),
    ("GaussianSplatting", "range", lambda: GaussianSplatting(M, mc_test=0), ValueError, "mc_test"),
    (
        "ig_expectations",
        "range",
        lambda: ig_expectations(torch.tensor([0.0]), T1),
        ValueError,
        "shape",
    ),
    (
        "ig_expectations",
        "nan",
        lambda: ig_expectations(T1, torch.tensor([NAN])),
        ValueError,
        "rate",
    ),
    ("ig_expectations", "empty", lambda: ig_expectations(torch.zeros(0), T1), ValueError, "shape"),
    ("ig_entropy", "inf", lambda: ig_entropy(torch.tensor([INF]), T1), ValueError, "shape"),
    ("ig_entropy", "range", lambda: ig_entropy(T1, torch.tensor([-1.0])), ValueError, "rate"),
    (
        "kl_inverse_gamma",
        "range",
        lambda: kl_inverse_gamma(T1, T1, torch.tensor([0.0]), T1),
        ValueError,
        "shape_p",
    ),
    (
        "kl_inverse_gamma",
        "nan",
        lambda: kl_inverse_gamma(T1, torch.tensor([NAN]), T1, T1),
        ValueError,
        "rate_q",
    ),
    ("make_scene_data", "range", lambda: make_scene_data(1), ValueError, "n_gt"),
    ("make_scene_data", "range", lambda: make_scene_data(4, noise=NAN), ValueError, "noise"),
    ("make_scene_data", "range", lambda: make_scene_data(4, arc_deg=0.0), ValueError, "arc_deg"),
    ("kde_nll", "nan", lambda: kde_nll(IMGS * NAN, IMGS[0]), ValueError, "renders"),
    ("kde_nll", "inf", lambda: kde_nll(IMGS, IMGS[0] * INF), ValueError, "target"),
    ("kde_nll", "shape", lambda: kde_nll(IMGS, IMGS[0, :4]), ValueError, "target"),
    ("kde_nll", "shape", lambda: kde_nll(IMGS[0], IMGS[0]), ValueError, "renders"),
    ("kde_nll", "empty", lambda: kde_nll(IMGS[:0], IMGS[0]), ValueError, "renders"),
    (
        "HorseshoeSplatting",
        "type",
        lambda: _hs().predict(CAMS[0], return_samples="yes"),
        TypeError,
        "return_samples",
    ),
    ("ause", "nan", lambda: ause(np.array([0.1, NAN, 0.2]), E), ValueError, "error"),
    ("ause", "shape", lambda: ause(E, E[:2]), ValueError, "uncertainty"),
    ("ause", "empty", lambda: ause(np.zeros(0), np.zeros(0)), ValueError, "error"),
    ("ause", "range", lambda: ause(E, E, steps=1), ValueError, "steps"),
    (
        "spearman_uncertainty",
        "inf",
        lambda: spearman_uncertainty(E, np.array([0.1, INF, 0.2])),
        ValueError,
        "uncertainty",
    ),
    (
        "spearman_uncertainty",
        "shape",
        lambda: spearman_uncertainty(E, E[:2]),
        ValueError,
        "uncertainty",
    ),
    ("HorseshoeSplatting", "other", lambda: _hs(ig_updates="newton"), ValueError, "ig_updates"),
    (
        "HorseshoeSplatting",
        "other",
        lambda: _hs(prior="gaussian", ig_updates="cavi"),
        ValueError,
        "ig_updates",
    ),
    ("HorseshoeSplatting", "range", lambda: _hs(cavi_every=0), ValueError, "cavi_every"),
    ("HorseshoeSplatting", "type", lambda: _hs(cavi_every=2.5), TypeError, "cavi_every"),
    (
        "HorseshoeSplatting",
        "range",
        lambda: _hs().fit(IMGS, CAMS, steps=1, kl_anneal=1.5),
        ValueError,
        "kl_anneal",
    ),
    (
        "HorseshoeSplatting",
        "nan",
        lambda: _hs().fit(IMGS, CAMS, steps=1, kl_anneal=NAN),
        ValueError,
        "kl_anneal",
    ),
    (
        "HorseshoeSplatting",
        "type",
        lambda: _hs().fit(IMGS, CAMS, steps=1, reset_nan=1),
        TypeError,
        "reset_nan",
    ),
    ("HorseshoeSplatting", "range", lambda: _hs().cavi_update(sweeps=0), ValueError, "sweeps"),
    (
        "HorseshoeSplatting",
        "other",
        lambda: _hs(prior="laplace").cavi_update(),
        ValueError,
        "prior",
    ),
    ("HorseshoeSplatting", "type", lambda: _hs().reset_nan_ig(opt="adam"), TypeError, "opt"),
    (
        "ig_cavi_sweep",
        "nan",
        lambda: ig_cavi_sweep(S43 * NAN, P43, P43, P3, P3),
        ValueError,
        "spread2",
    ),
    (
        "ig_cavi_sweep",
        "range",
        lambda: ig_cavi_sweep(-S43, P43, P43, P3, P3),
        ValueError,
        "spread2",
    ),
    (
        "ig_cavi_sweep",
        "empty",
        lambda: ig_cavi_sweep(torch.ones(0, 3), P43, P43, P3, P3),
        ValueError,
        "spread2",
    ),
    (
        "ig_cavi_sweep",
        "shape",
        lambda: ig_cavi_sweep(S43, P43, P43, (torch.ones(2), torch.ones(2)), P3),
        ValueError,
        "theta",
    ),
    (
        "ig_cavi_sweep",
        "range",
        lambda: ig_cavi_sweep(S43, P43, (torch.zeros(4, 3), torch.ones(4, 3)), P3, P3),
        ValueError,
        "nu",
    ),
    (
        "ig_cavi_sweep",
        "type",
        lambda: ig_cavi_sweep(S43, P43, P43, P3, torch.ones(3)),
        TypeError,
        "xi",
    ),
    (
        "ig_cavi_sweep",
        "range",
        lambda: ig_cavi_sweep(S43, P43, P43, P3, P3, global_scale=0.0),
        ValueError,
        "global_scale",
    ),
    ("kl_anneal_factor", "range", lambda: kl_anneal_factor(0, 10, 0.3), ValueError, "step"),
    ("kl_anneal_factor", "range", lambda: kl_anneal_factor(11, 10, 0.3), ValueError, "step"),
    ("kl_anneal_factor", "range", lambda: kl_anneal_factor(1, 0, 0.3), ValueError, "steps"),
    ("kl_anneal_factor", "nan", lambda: kl_anneal_factor(1, 10, NAN), ValueError, "anneal"),
    ("kl_anneal_factor", "range", lambda: kl_anneal_factor(1, 10, -0.1), ValueError, "anneal"),
]
EXEMPT = {
    "PRIORS": "a tuple of the accepted prior names; not callable",
    "IG_UPDATES": "a tuple of the accepted ig_updates names; not callable",
}
