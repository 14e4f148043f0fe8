"""Bad-input cases for the CGB room (read by tests/framework/test_bad_input.py)."""

import functools
import importlib.util

import numpy as np
import torch

from iclr26.generative.cgb import (
    BrownianBridgeRestorer,
    CGBBridge,
    CGBRestorer,
    ConsistencyRestorer,
    FlowMatchingRestorer,
    FluxConsistencyRestorer,
    FluxVelocity,
    GeodesicGuidance,
    RectifiedFlowSchedule,
    TinyUNet,
    bridge_sample,
    degrade,
    image_patches,
    psnr,
    ssim,
    train_velocity_model,
)

NAN = float("nan")
_rng = np.random.default_rng(0)
CLEAN = _rng.uniform(0, 1, (4, 8, 8)).astype(np.float32)
CLEAN_NAN = CLEAN.copy()
CLEAN_NAN[0, 1, 1] = NAN
CLEAN_INF = CLEAN.copy()
CLEAN_INF[1, 2, 2] = np.inf
X = torch.randn(2, 1, 4, 4)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = NAN


@functools.cache
def _fitted(cls):
    return cls(width=8).fit(CLEAN, steps=1, batch_size=2)


def _bridge_velocity(v):
    return bridge_sample(lambda x, t: torch.zeros_like(x), X, CGBBridge(0.5), nfe=v)


CASES = [
    # the bridge and its horizon
    ("CGBBridge", "range", lambda: CGBBridge(T0=1.0), ValueError, "T0"),
    ("CGBBridge", "range", lambda: CGBBridge(T0=0.0), ValueError, "T0"),
    ("CGBBridge", "range", lambda: CGBBridge(T0=NAN), ValueError, "T0"),
    ("CGBBridge", "range", lambda: CGBBridge(T0=0.5, kappa=-1), ValueError, "kappa"),
    ("CGBBridge", "nan", lambda: CGBBridge(0.5).action_closed_form(X_NAN, X), ValueError, "x0"),
    ("CGBBridge", "shape", lambda: CGBBridge(0.5).action(X, X[:1]), ValueError, "y"),
    ("CGBBridge", "range", lambda: CGBBridge(0.5).action(X, X, n_mc=0), ValueError, "n_mc"),
    ("CGBBridge", "range", lambda: CGBBridge(0.5).energy(X, X, gamma=-1), ValueError, "gamma"),
    (
        "RectifiedFlowSchedule",
        "nan",
        lambda: RectifiedFlowSchedule.marginal(X_NAN, X, 0.5),
        ValueError,
        "x0",
    ),
    (
        "RectifiedFlowSchedule",
        "range",
        lambda: RectifiedFlowSchedule.marginal(X, X, 1.5),
        ValueError,
        "t",
    ),
    (
        "RectifiedFlowSchedule",
        "shape",
        lambda: RectifiedFlowSchedule.velocity(X, X[:1]),
        ValueError,
        "eps",
    ),
    (
        "RectifiedFlowSchedule",
        "type",
        lambda: RectifiedFlowSchedule.denoise(X.numpy(), X, 0.5),
        TypeError,
        "z",
    ),
    # networks and training
    ("TinyUNet", "range", lambda: TinyUNet(width=2), ValueError, "width"),
    ("TinyUNet", "other", lambda: TinyUNet(width=12, groups=8), ValueError, "width"),
    (
        "train_velocity_model",
        "nan",
        lambda: train_velocity_model(CLEAN_NAN, steps=1),
        ValueError,
        "clean",
    ),
    (
        "train_velocity_model",
        "range",
        lambda: train_velocity_model(CLEAN * 3, steps=1),
        ValueError,
        "clean",
    ),
    (
        "train_velocity_model",
        "shape",
        lambda: train_velocity_model(CLEAN[:, :, :6], steps=1),
        ValueError,
        "clean",
    ),
    (
        "train_velocity_model",
        "range",
        lambda: train_velocity_model(CLEAN, steps=0),
        ValueError,
        "steps",
    ),
    (
        "GeodesicGuidance",
        "range",
        lambda: GeodesicGuidance(None, strength=2.0),
        ValueError,
        "strength",
    ),
    (
        "GeodesicGuidance",
        "type",
        lambda: GeodesicGuidance(3, strength=0.5),
        TypeError,
        "velocity_model",
    ),
    ("bridge_sample", "range", lambda: _bridge_velocity(0), ValueError, "nfe"),
    (
        "bridge_sample",
        "type",
        lambda: bridge_sample(lambda x, t: x, X, CGBBridge(0.5), generator=7),
        TypeError,
        "generator",
    ),
    (
        "bridge_sample",
        "other",
        lambda: bridge_sample(lambda x, t: x, X, CGBBridge(0.5), renoise="x"),
        ValueError,
        "renoise",
    ),
    # the restorer
    ("CGBRestorer", "range", lambda: CGBRestorer(T0=1.2), ValueError, "T0"),
    ("CGBRestorer", "range", lambda: CGBRestorer(T0_range=(0.0, 0.5)), ValueError, "T0_range"),
    ("CGBRestorer", "type", lambda: CGBRestorer(T0_range=0.5), TypeError, "T0_range"),
    ("CGBRestorer", "other", lambda: CGBRestorer(tangent="exact"), ValueError, "tangent"),
    ("CGBRestorer", "other", lambda: CGBRestorer(objective="l2"), ValueError, "objective"),
    ("CGBRestorer", "range", lambda: CGBRestorer(guidance=NAN), ValueError, "guidance"),
    ("CGBRestorer", "range", lambda: CGBRestorer(guidance=1.5), ValueError, "guidance"),
    (
        "CGBRestorer",
        "nan",
        lambda: CGBRestorer(width=8).fit(CLEAN_NAN, steps=1),
        ValueError,
        "clean",
    ),
    (
        "CGBRestorer",
        "inf",
        lambda: CGBRestorer(width=8).fit(CLEAN_INF, steps=1),
        ValueError,
        "clean",
    ),
    (
        "CGBRestorer",
        "range",
        lambda: CGBRestorer(width=8).fit(CLEAN - 0.5, steps=1),
        ValueError,
        "clean",
    ),
    (
        "CGBRestorer",
        "empty",
        lambda: CGBRestorer(width=8).fit(CLEAN[:0], steps=1),
        ValueError,
        "clean",
    ),
    (
        "CGBRestorer",
        "other",
        lambda: CGBRestorer(width=8).fit(CLEAN, degrade="blur"),
        ValueError,
        "degrade",
    ),
    ("CGBRestorer", "range", lambda: _fitted(CGBRestorer).restore(CLEAN, T0=1.0), ValueError, "T0"),
    ("CGBRestorer", "range", lambda: _fitted(CGBRestorer).restore(CLEAN, T0=0.0), ValueError, "T0"),
    ("CGBRestorer", "range", lambda: _fitted(CGBRestorer).restore(CLEAN, nfe=0), ValueError, "nfe"),
    (
        "CGBRestorer",
        "shape",
        lambda: _fitted(CGBRestorer).restore(np.zeros((2, 16, 16))),
        ValueError,
        "y",
    ),
    ("CGBRestorer", "range", lambda: _fitted(CGBRestorer).restore(CLEAN + 5), ValueError, "y"),
    ("CGBRestorer", "nan", lambda: _fitted(CGBRestorer).restore(CLEAN_NAN), ValueError, "y"),
    (
        "CGBRestorer",
        "range",
        lambda: _fitted(CGBRestorer).tune_T0(CLEAN, grid=[0.5, 1.0]),
        ValueError,
        "grid",
    ),
    ("ConsistencyRestorer", "range", lambda: ConsistencyRestorer(kappa=0), ValueError, "kappa"),
    # baselines
    (
        "FlowMatchingRestorer",
        "nan",
        lambda: FlowMatchingRestorer(width=8).fit(CLEAN_NAN),
        ValueError,
        "clean",
    ),
    (
        "FlowMatchingRestorer",
        "range",
        lambda: _fitted(FlowMatchingRestorer).restore(CLEAN, nfe=0),
        ValueError,
        "nfe",
    ),
    (
        "FlowMatchingRestorer",
        "shape",
        lambda: _fitted(FlowMatchingRestorer).restore(CLEAN[:, :4, :4]),
        ValueError,
        "y",
    ),
    (
        "BrownianBridgeRestorer",
        "range",
        lambda: BrownianBridgeRestorer(sigma_b=-1.0),
        ValueError,
        "sigma_b",
    ),
    (
        "BrownianBridgeRestorer",
        "inf",
        lambda: _fitted(BrownianBridgeRestorer).restore(CLEAN_INF),
        ValueError,
        "y",
    ),
    # data, degradations, metrics
    ("degrade", "nan", lambda: degrade(CLEAN_NAN, "sr4"), ValueError, "clean"),
    ("degrade", "range", lambda: degrade(CLEAN * 2, "sr4"), ValueError, "clean"),
    ("degrade", "other", lambda: degrade(CLEAN, "jpeg"), ValueError, "task"),
    ("degrade", "range", lambda: degrade(CLEAN, "denoise", sigma=0.0), ValueError, "sigma"),
    ("degrade", "shape", lambda: degrade(CLEAN[0], "sr4"), ValueError, "clean"),
    ("image_patches", "range", lambda: image_patches(n=0), ValueError, "n"),
    ("image_patches", "range", lambda: image_patches(size=10), ValueError, "size"),
    ("image_patches", "other", lambda: image_patches(names=()), ValueError, "names"),
    ("psnr", "shape", lambda: psnr(CLEAN[:2], CLEAN), ValueError, "restored"),
    ("psnr", "nan", lambda: psnr(CLEAN_NAN, CLEAN), ValueError, "restored"),
    ("ssim", "range", lambda: ssim(CLEAN, CLEAN * 4), ValueError, "clean"),
]


# -- the Flux path (needs the optional diffusers; tiny random modules) ------------------
HAS_DIFFUSERS = importlib.util.find_spec("diffusers") is not None


@functools.cache
def _flux():
    import diffusers

    torch.manual_seed(0)
    tr = diffusers.FluxTransformer2DModel(
        in_channels=16,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        pooled_projection_dim=8,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),
    )
    vae = diffusers.AutoencoderKL(
        in_channels=1,
        out_channels=1,
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 8),
        latent_channels=4,
        norm_num_groups=4,
        layers_per_block=1,
    )
    return tr, vae


def _flux_model(**kw):
    tr, vae = _flux()
    return FluxConsistencyRestorer(tr, vae, controlnet_layers=(1, 0), **kw)


@functools.cache
def _fitted_flux():
    return _flux_model().fit(CLEAN, steps=1, batch_size=2)


def _from_diffusers(**kw):
    tr, vae = _flux()
    return ConsistencyRestorer.from_diffusers(tr, **{"vae": vae, "controlnet_layers": (1, 0), **kw})


LATENT = torch.randn(2, 4, 4, 4)
LATENT_NAN = LATENT.clone()
LATENT_NAN[0, 0, 0, 0] = NAN
FLUX_CASES = [
    ("FluxVelocity", "type", lambda: FluxVelocity(3), TypeError, "transformer"),
    (
        "FluxVelocity",
        "range",
        lambda: FluxVelocity(_flux()[0], flux_guidance=-1.0),
        ValueError,
        "flux_guidance",
    ),
    (
        "FluxVelocity",
        "shape",
        lambda: FluxVelocity(_flux()[0], prompt_embeds=torch.zeros(1, 2, 5)),
        ValueError,
        "prompt_embeds",
    ),
    ("FluxVelocity", "nan", lambda: FluxVelocity(_flux()[0])(LATENT_NAN, 0.5), ValueError, "x"),
    (
        "FluxVelocity",
        "shape",
        lambda: FluxVelocity(_flux()[0])(LATENT[:, :3], 0.5),
        ValueError,
        "x",
    ),
    (
        "FluxConsistencyRestorer",
        "other",
        lambda: _flux_model(adapter="lora"),
        ValueError,
        "adapter",
    ),
    (
        "FluxConsistencyRestorer",
        "type",
        lambda: FluxConsistencyRestorer(_flux()[0], 3),
        TypeError,
        "vae",
    ),
    ("FluxConsistencyRestorer", "range", lambda: _flux_model(T0=0.0), ValueError, "T0"),
    (
        "FluxConsistencyRestorer",
        "type",
        lambda: _flux_model(controlnet_layers=1),
        TypeError,
        "controlnet_layers",
    ),
    (
        "FluxConsistencyRestorer",
        "nan",
        lambda: _flux_model().restore(CLEAN_NAN),
        ValueError,
        "y",
    ),
    (
        "FluxConsistencyRestorer",
        "inf",
        lambda: _flux_model().fit(CLEAN_INF, steps=1),
        ValueError,
        "clean",
    ),
    (
        "FluxConsistencyRestorer",
        "shape",
        lambda: _flux_model().restore(CLEAN[:, :6, :6]),
        ValueError,
        "y",
    ),
    ("FluxConsistencyRestorer", "empty", lambda: _flux_model().restore(CLEAN[:0]), ValueError, "y"),
    (
        "FluxConsistencyRestorer",
        "range",
        lambda: _fitted_flux().tune_T0(CLEAN, grid=[0.5], sigma=NAN),
        ValueError,
        "sigma",
    ),
    (
        "ConsistencyRestorer",
        "other",
        lambda: _from_diffusers(adapter="lora"),
        ValueError,
        "adapter",
    ),
    (
        "ConsistencyRestorer",
        "type",
        lambda: ConsistencyRestorer.from_diffusers(3),
        TypeError,
        "transformer",
    ),
    (
        "ConsistencyRestorer",
        "other",
        lambda: ConsistencyRestorer.from_diffusers(""),
        ValueError,
        "transformer",
    ),
    ("ConsistencyRestorer", "other", lambda: _from_diffusers(vae=None), ValueError, "vae"),
    ("ConsistencyRestorer", "other", lambda: _from_diffusers(device="gpu0"), ValueError, "device"),
    (
        "ConsistencyRestorer",
        "range",
        lambda: ConsistencyRestorer.from_diffusers("owner/flux", T0=1.5),
        ValueError,
        "T0",
    ),
    (
        "ConsistencyRestorer",
        "range",
        lambda: ConsistencyRestorer.from_diffusers("owner/flux", T0_range=(0.2, 1.0)),
        ValueError,
        "T0_range",
    ),
    (
        "ConsistencyRestorer",
        "other",
        lambda: ConsistencyRestorer.from_diffusers("owner/flux", objective="euler"),
        ValueError,
        "objective",
    ),
    (
        "ConsistencyRestorer",
        "type",
        lambda: ConsistencyRestorer.from_diffusers("owner/flux", T_0=0.5),
        TypeError,
        "T_0",
    ),
    (
        "ConsistencyRestorer",
        "type",
        lambda: ConsistencyRestorer.from_diffusers("owner/flux", device=0.5),
        TypeError,
        "device",
    ),
    (
        "ConsistencyRestorer",
        "type",
        lambda: _from_diffusers(torch_dtype="bf16"),
        TypeError,
        "torch_dtype",
    ),
]
if HAS_DIFFUSERS:
    CASES += FLUX_CASES

EXEMPT = (
    {}
    if HAS_DIFFUSERS
    else {
        "FluxVelocity": "needs the optional diffusers package (pip install 'iclr26[diffusion]')",
        "FluxConsistencyRestorer": "needs the optional diffusers package",
    }
)
