"""Tests of the CGB room's full-scale path (diffusers Flux transformer + Flux ControlNet + VAE)
on tiny, randomly initialised diffusers models built from small configs: packing and shapes,
the velocity convention, one-step restoration end to end in the latent space, training, bf16,
lazy loading from a local folder."""

import numpy as np
import pytest
import torch

diffusers = pytest.importorskip("diffusers")

from iclr26.generative.cgb import (  # noqa: E402
    CGBBridge,
    ConsistencyRestorer,
    FluxConsistencyRestorer,
    FluxVelocity,
    bridge_sample,
    degrade,
    image_patches,
)
from iclr26.generative.cgb.flux import (  # noqa: E402
    LazyFluxRestorer,
    flux_shift_mu,
    latent_ids,
    pack_latents,
    unpack_latents,
)
from iclr26.generative.cgb.restorer import time_shift  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:.*FluxPosEmbed:FutureWarning")


def tiny_transformer(seed=0, latent=4):
    torch.manual_seed(seed)
    return diffusers.FluxTransformer2DModel(
        patch_size=1,
        in_channels=4 * latent,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        pooled_projection_dim=8,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),
    )


def tiny_vae(seed=0, channels=1, latent=4):
    torch.manual_seed(seed)
    return diffusers.AutoencoderKL(
        in_channels=channels,
        out_channels=channels,
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 8),
        latent_channels=latent,
        norm_num_groups=4,
        layers_per_block=1,
        scaling_factor=0.36,
        shift_factor=0.11,
        use_quant_conv=False,
        use_post_quant_conv=False,
    )


def _randomise_controlnet(model, seed=1):
    """Give the zero-initialised ControlNet projections random weights (a 'trained' one)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.net.controlnet.named_parameters():
            if "controlnet_" in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def test_packing_matches_the_flux_pipeline():
    z = torch.randn(2, 4, 6, 8)
    tokens = pack_latents(z)
    ref = diffusers.FluxPipeline._pack_latents(z, 2, 4, 6, 8)
    assert tokens.shape == (2, 12, 16) and torch.equal(tokens, ref)
    assert torch.equal(unpack_latents(tokens, 6, 8), z)
    ids = diffusers.FluxPipeline._prepare_latent_image_ids(2, 3, 4, "cpu", torch.float32)
    assert torch.equal(latent_ids(6, 8), ids)


def test_velocity_is_the_transformer_output_as_the_pipeline_calls_it():
    tr = tiny_transformer()
    vel = FluxVelocity(tr, flux_guidance=3.5)
    x = torch.randn(2, 4, 4, 4)
    t = torch.tensor([0.7, 0.2])
    with torch.no_grad():
        v = vel(x, t)
        # the call of FluxPipeline.__call__: timestep = sigma (= t in [0, 1]), guidance as is
        ref = tr(
            hidden_states=diffusers.FluxPipeline._pack_latents(x, 2, 4, 4, 4),
            timestep=t,
            guidance=torch.full((2,), 3.5),
            pooled_projections=torch.zeros(2, 8),
            encoder_hidden_states=torch.zeros(2, 1, 16),
            txt_ids=torch.zeros(1, 3),
            img_ids=diffusers.FluxPipeline._prepare_latent_image_ids(2, 2, 2, "cpu", torch.float32),
            return_dict=False,
        )[0]
    assert v.shape == x.shape and vel.nfe == 1
    assert torch.allclose(v, unpack_latents(ref, 4, 4), atol=1e-6)
    assert not torch.allclose(v, -unpack_latents(ref, 4, 4), atol=1e-3)
    with torch.no_grad():  # T0 is not an input of the paper's network
        assert torch.equal(vel(x, t, None, torch.tensor([0.3, 0.9])), v)


def test_flux_scheduler_convention_is_eps_minus_x0():
    """Diffusers' flow-matching Euler step (the one the Flux pipeline applies to the
    transformer output) is exact for v = eps - x0, the bridge's convention, and not for the
    opposite sign."""
    sched = diffusers.FlowMatchEulerDiscreteScheduler(shift=1.0)
    sched.set_timesteps(4)
    g = torch.Generator().manual_seed(0)
    x0, eps = torch.randn(2, 16, 4, generator=g), torch.randn(2, 16, 4, generator=g)
    s0, s1 = float(sched.sigmas[0]), float(sched.sigmas[1])
    z0 = (1 - s0) * x0 + s0 * eps
    step = sched.step(eps - x0, sched.timesteps[0], z0).prev_sample
    assert torch.allclose(step, (1 - s1) * x0 + s1 * eps, atol=1e-5)
    sched.set_timesteps(4)
    wrong = sched.step(x0 - eps, sched.timesteps[0], z0).prev_sample
    assert not torch.allclose(wrong, (1 - s1) * x0 + s1 * eps, atol=1e-2)


def test_controlnet_starts_as_the_prior_and_then_sees_y():
    model = ConsistencyRestorer.from_diffusers(
        tiny_transformer(), vae=tiny_vae(), controlnet_layers=(1, 0)
    )
    assert isinstance(model, FluxConsistencyRestorer)
    x, y = torch.randn(2, 4, 4, 4), torch.randn(2, 4, 4, 4)
    t = torch.tensor([0.5, 0.3])
    with torch.no_grad():
        assert torch.equal(model.net(x, t, y), model.net(x, t))  # zero-initialised ControlNet
        _randomise_controlnet(model)
        assert not torch.allclose(model.net(x, t, y), model.net(x, t))
        # the ControlNet's condition is y (the state x reaches it only as its hidden input)
        assert not torch.allclose(model.net(x, t, y), model.net(x, t, 2 * y))
        assert not torch.allclose(model.net(x, t, y), model.net(x, t, x))
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("net.controlnet.") for n in trainable)


def test_sampler_in_latent_space_with_the_true_velocity():
    """The shared sampler on Flux's shifted grid: with v = eps - x0 it returns x0 exactly."""
    g = torch.Generator().manual_seed(0)
    x0, y, eps0 = (torch.randn(2, 4, 4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    mu = flux_shift_mu(4)
    out, states = bridge_sample(
        lambda x, t: eps0 - x0, y, CGBBridge(0.8), nfe=3, eps0=eps0, shift_mu=mu, return_states=True
    )
    assert torch.allclose(out, x0, atol=1e-10)
    grid = [0.8 * time_shift(1 - i / 3, mu) for i in range(3)]
    assert grid[1] != pytest.approx(0.8 * 2 / 3)  # the shift moved the grid
    for s, t in zip(states, grid, strict=True):
        assert torch.allclose(s, CGBBridge(0.8).marginal(x0, y, eps0, t), atol=1e-10)


def test_one_step_restoration_end_to_end_in_latent_space():
    tr, vae = tiny_transformer(), tiny_vae()
    model = ConsistencyRestorer.from_diffusers(tr, vae=vae, T0=0.6, controlnet_layers=(1, 0))
    _randomise_controlnet(model)
    clean = image_patches(n=4, size=8, seed=0)
    y = degrade(clean, "sr4")
    n0 = model.net.nfe
    out = model.restore(y, nfe=1, seed=3)
    assert model.net.nfe == n0 + 1
    assert out.shape == y.shape and out.dtype == np.float32
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1
    # the same computation by hand: encode, one bridge step, decode
    with torch.no_grad():
        yb = 2 * torch.from_numpy(y[:, None]) - 1
        z_y = (vae.encode(yb).latent_dist.mean - 0.11) * 0.36
        eps = torch.randn(z_y.shape, generator=torch.Generator().manual_seed(3))
        b = CGBBridge(0.6)
        x_T0 = b.start(z_y, eps)
        t = torch.full((4,), 0.6)
        z0 = b.solve(x_T0, z_y, model.net(x_T0, t, z_y), t)
        ref = ((vae.decode(z0 / 0.36 + 0.11).sample + 1) / 2).clamp(0, 1)[:, 0]
    assert np.allclose(out, ref.numpy(), atol=1e-5)
    assert not np.allclose(out, model.restore(y, nfe=3, seed=3))


def test_rgb_images_and_vae_channels():
    model = ConsistencyRestorer.from_diffusers(
        tiny_transformer(), vae=tiny_vae(channels=3), controlnet_layers=(1, 0)
    )
    rgb = np.random.default_rng(0).uniform(0, 1, (2, 3, 8, 12)).astype(np.float32)
    assert model.restore(rgb).shape == (2, 3, 8, 12)
    assert model.restore(rgb[:, 0]).shape == (2, 8, 12)  # gray: repeated, then averaged
    with pytest.raises(ValueError, match="y"):
        model.restore(rgb[:, :2])
    with pytest.raises(ValueError, match="y"):
        model.restore(rgb[:, :, :6])  # side not divisible by 4


@pytest.mark.parametrize("objective", ["continuous", "discrete"])
def test_fit_trains_only_the_controlnet(objective):
    model = ConsistencyRestorer.from_diffusers(
        tiny_transformer(), vae=tiny_vae(), controlnet_layers=(1, 0), objective=objective
    )
    frozen = {k: v.clone() for k, v in model.net.transformer.state_dict().items()}
    cn_before = {k: v.clone() for k, v in model.net.controlnet.state_dict().items()}
    clean = image_patches(n=16, size=8, seed=0)
    model.fit(clean, degrade="denoise", steps=3, lr=1e-3, batch_size=4)
    assert len(model.losses) == 3 and np.isfinite(model.losses).all()
    after = model.net.transformer.state_dict()
    assert all(torch.equal(frozen[k], after[k]) for k in frozen)
    cn_after = model.net.controlnet.state_dict()
    assert any(not torch.equal(cn_before[k], cn_after[k]) for k in cn_before)
    assert model.tune_T0(clean[:4], grid=[0.3, 0.6]) in (0.3, 0.6)


def test_bf16_modules():
    """bf16 diffusers modules on CPU: the bridge stays float32, the network runs in bf16 and
    agrees with the float32 network of the same weights to bf16 precision."""
    tr, vae = tiny_transformer(), tiny_vae()
    m32 = ConsistencyRestorer.from_diffusers(tr, vae=vae, controlnet_layers=(1, 0))
    _randomise_controlnet(m32)
    import copy

    m16 = copy.deepcopy(m32).to(torch.bfloat16)
    assert m16.net.dtype == torch.bfloat16
    x, y, t = torch.randn(2, 4, 4, 4), torch.randn(2, 4, 4, 4), torch.tensor([0.5, 0.3])
    with torch.no_grad():
        v32, v16 = m32.net(x, t, y), m16.net(x, t, y)
    assert v16.dtype == torch.float32
    assert float((v16 - v32).abs().max()) < 0.05 * float(v32.abs().max())
    y_img = degrade(image_patches(n=2, size=8, seed=0), "sr4")
    out = m16.restore(y_img)
    assert out.dtype == np.float32 and out.shape == y_img.shape and np.isfinite(out).all()
    m16.fit(image_patches(n=8, size=8, seed=1), steps=1, batch_size=2)
    assert np.isfinite(m16.losses).all()


def test_lazy_loading_from_a_local_folder(tmp_path):
    tr, vae = tiny_transformer(), tiny_vae()
    tr.save_pretrained(tmp_path / "flux" / "transformer")
    vae.save_pretrained(tmp_path / "flux" / "vae")
    cn = diffusers.FluxControlNetModel.from_transformer(
        tr, num_layers=1, num_single_layers=0, attention_head_dim=8, num_attention_heads=2
    )
    cn.save_pretrained(tmp_path / "cn")
    lazy = ConsistencyRestorer.from_diffusers(
        str(tmp_path / "flux"), controlnet=str(tmp_path / "cn"), T0=0.5
    )
    assert isinstance(lazy, LazyFluxRestorer) and not lazy.loaded
    y = degrade(image_patches(n=2, size=8, seed=0), "sr4")
    out = lazy.restore(y)
    assert lazy.loaded and out.shape == y.shape
    model = lazy.load()
    assert torch.equal(model.net.transformer.x_embedder.weight, tr.x_embedder.weight)
    assert model.T0 == 0.5 == lazy.T0  # attributes of the loaded restorer
    with pytest.raises(ValueError, match="transformer"):
        ConsistencyRestorer.from_diffusers(str(tmp_path / "missing" / "folder"))
    hub = ConsistencyRestorer.from_diffusers("black-forest-labs/FLUX.1-dev", adapter="controlnet")
    assert isinstance(hub, LazyFluxRestorer) and not hub.loaded  # nothing downloaded
    with pytest.raises(AttributeError, match="not loaded"):
        _ = hub.losses


def test_bad_inputs_are_refused():
    tr, vae = tiny_transformer(), tiny_vae()
    with pytest.raises(ValueError, match="adapter"):
        ConsistencyRestorer.from_diffusers(tr, adapter="lora", vae=vae)
    with pytest.raises(ValueError, match="vae"):
        ConsistencyRestorer.from_diffusers(tr)
    with pytest.raises(ValueError, match="vae"):
        ConsistencyRestorer.from_diffusers(tr, vae=tiny_vae(latent=2))
    with pytest.raises(TypeError, match="transformer"):
        ConsistencyRestorer.from_diffusers(3, vae=vae)
    with pytest.raises(ValueError, match="flux_guidance"):
        ConsistencyRestorer.from_diffusers(tr, vae=vae, flux_guidance=-1.0)
    with pytest.raises(ValueError, match="T0"):
        ConsistencyRestorer.from_diffusers(tr, vae=vae, T0=1.0)
    with pytest.raises(ValueError, match="prompt"):
        ConsistencyRestorer.from_diffusers(tr, vae=vae, prompt="clean")
    hinted = diffusers.FluxControlNetModel(
        in_channels=16,
        num_layers=1,
        num_single_layers=0,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        pooled_projection_dim=8,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),
        conditioning_embedding_channels=16,
    )
    with pytest.raises(ValueError, match="controlnet"):
        ConsistencyRestorer.from_diffusers(tr, vae=vae, controlnet=hinted)
    model = ConsistencyRestorer.from_diffusers(tr, vae=vae, controlnet_layers=(1, 0))
    y = degrade(image_patches(n=2, size=8, seed=0), "sr4")
    bad = y.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="y"):
        model.restore(bad)
    with pytest.raises(ValueError, match="y"):
        model.restore(y + 5)
    with pytest.raises(ValueError, match="nfe"):
        model.restore(y, nfe=0)
    with pytest.raises(ValueError, match="x"):
        model.net(torch.randn(2, 3, 4, 4), torch.tensor([0.5, 0.5]))
    with pytest.raises(RuntimeError, match="fit"):
        model.tune_T0(image_patches(n=2, size=8, seed=0))


def test_controlnet_residuals_cycle_over_double_blocks_as_in_x_flux():
    """``controlnet_repeat=True``: double block i gets ControlNet residual i mod depth (x-flux);
    checked against the transformer given the cycled list [r0, r1, r0] explicitly."""
    torch.manual_seed(0)
    tr = diffusers.FluxTransformer2DModel(
        in_channels=16,
        num_layers=3,
        num_single_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=16,
        pooled_projection_dim=8,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),
    )
    model = ConsistencyRestorer.from_diffusers(tr, vae=tiny_vae(), controlnet_layers=(2, 0))
    _randomise_controlnet(model)
    x, y, t = torch.randn(2, 4, 4, 4), torch.randn(2, 4, 4, 4), torch.tensor([0.5, 0.3])
    common = dict(
        encoder_hidden_states=torch.zeros(2, 1, 16),
        pooled_projections=torch.zeros(2, 8),
        timestep=t,
        img_ids=latent_ids(4, 4),
        txt_ids=torch.zeros(1, 3),
        guidance=torch.full((2,), 4.0),
        return_dict=False,
    )
    with torch.no_grad():
        r0, r1 = model.net.controlnet(
            hidden_states=pack_latents(x), controlnet_cond=pack_latents(y), **common
        )[0]
        ref = tr(hidden_states=pack_latents(x), controlnet_block_samples=[r0, r1, r0], **common)
        v = model.net(x, t, y)
        model.net.controlnet_repeat = False
        v_spread = model.net(x, t, y)
    assert torch.allclose(v, unpack_latents(ref[0], 4, 4), atol=1e-5)
    assert not torch.allclose(v_spread, v, atol=1e-4)
