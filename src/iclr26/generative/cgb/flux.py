"""The full-scale path: FLUX.1 (a diffusers ``FluxTransformer2DModel``), an optional Flux
ControlNet that takes the latent of ``y``, and the Flux VAE, as the restorer's velocity
network; the bridge runs in the VAE latent space (as the released E-Bridge sampler does).

:class:`FluxVelocity` has the small UNet's call ``v(x, t, y=None, T0=None)`` on unpacked latents
``(n, c, h, w)``. It packs them into 2x2 patch tokens ``(n, h w / 4, 4 c)`` (channel, row, column
order, as Flux does), builds the position ids ``(0, row, column)``, passes ``t`` in [0, 1] (the
transformer scales it by 1000 itself), the distilled-guidance value and fixed text embeddings,
adds the ControlNet residuals when ``y`` is given, and unpacks. The output is Flux's velocity
``v = eps - x0``, the convention of the room's bridge. :class:`FluxConsistencyRestorer` runs the
room's trainer and sampler on top: images go through the VAE (``(mean - shift) * scale``), the
bridge, then back through the decoder. ``diffusers`` is imported only when it is needed."""

from __future__ import annotations

import os
import re

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.generative.cgb.bridge import check_T0
from iclr26.generative.cgb.network import to_signed
from iclr26.generative.cgb.restorer import (
    OBJECTIVES,
    RENOISE,
    TANGENTS,
    CGBRestorer,
    _pair_of,
    degrade_signed,
)

ADAPTERS = ("controlnet",)
# the fixed text prompt per task of the released training data (image_datasets/mix_dataset.py)
TASK_PROMPTS = {
    "sr4": "high-resolution, ultra-sharp, detailed",
    "denoise": "noise-free, clean, smooth",
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _require_diffusers():
    try:
        import diffusers
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the Flux path needs diffusers: pip install 'iclr26[diffusion]'") from err
    return diffusers


def pack_latents(z: torch.Tensor) -> torch.Tensor:
    """``(n, c, h, w)`` latents as Flux's ``(n, h w / 4, 4 c)`` tokens of 2x2 patches."""
    n, c, h, w = z.shape
    z = z.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5)
    return z.reshape(n, (h // 2) * (w // 2), 4 * c)


def unpack_latents(tokens: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """The inverse of :func:`pack_latents` for an ``h x w`` latent."""
    n, _, d = tokens.shape
    c = d // 4
    z = tokens.reshape(n, h // 2, w // 2, c, 2, 2).permute(0, 3, 1, 4, 2, 5)
    return z.reshape(n, c, h, w)


def latent_ids(h: int, w: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """Flux's position ids ``(0, row, column)`` of the ``(h / 2) x (w / 2)`` token grid."""
    rows = torch.arange(h // 2, device=device, dtype=dtype)
    cols = torch.arange(w // 2, device=device, dtype=dtype)
    ids = torch.zeros(h // 2, w // 2, 3, device=device, dtype=dtype)
    ids[..., 1] = rows[:, None]
    ids[..., 2] = cols[None, :]
    return ids.reshape(-1, 3)


def flux_shift_mu(tokens: int, base: float = 0.5, top: float = 1.15) -> float:
    """Flux's shift ``mu``: linear from ``base`` at 256 image tokens to ``top`` at 4096."""
    return base + (top - base) * (tokens - 256) / (4096 - 256)


def _config(module, key, default=None):
    cfg = getattr(module, "config", None)
    if cfg is None:
        return default
    return cfg.get(key, default) if isinstance(cfg, dict) else getattr(cfg, key, default)


class FluxVelocity(torch.nn.Module):
    """A Flux transformer (+ optional Flux ControlNet) as the velocity ``v(x, t, y, T0)``.

    ``transformer``: a ``FluxTransformer2DModel``; ``controlnet``: ``None`` or a
    ``FluxControlNetModel`` without a pixel hint block (it takes the packed latent of ``y``);
    ``flux_guidance``: the distilled guidance value (4 in the released scripts), used when the
    transformer has a guidance embedding; ``controlnet_scale``: the residual weight (1 in the
    released scripts); ``prompt_embeds`` ``(1, L, joint_attention_dim)`` and
    ``pooled_prompt_embeds`` ``(1, pooled_projection_dim)``: the fixed text condition (zeros,
    one token, when not given); ``controlnet_repeat``: the ControlNet's double-block residuals
    are added cyclically to every double block (block ``i`` gets residual ``i mod depth``, as
    x-flux's Flux does; ``False``: the diffusers default for a latent condition, each residual
    spread over consecutive blocks). ``T0`` is accepted and ignored: the paper's network sees only
    ``t`` and ``y``. Inputs of any float dtype are cast to the modules' dtype, the output back
    to the input's dtype."""

    def __init__(
        self,
        transformer: torch.nn.Module,
        controlnet: torch.nn.Module | None = None,
        flux_guidance: float = 4.0,
        controlnet_scale: float = 1.0,
        prompt_embeds: torch.Tensor | None = None,
        pooled_prompt_embeds: torch.Tensor | None = None,
        controlnet_repeat: bool = True,
    ):
        super().__init__()
        self.controlnet_repeat = V.check_bool(controlnet_repeat, "controlnet_repeat")
        if not isinstance(transformer, torch.nn.Module):
            raise TypeError(
                f"transformer must be a FluxTransformer2DModel, got {type(transformer).__name__}"
            )
        V.check_module_attrs(transformer, "transformer", ["config", "forward"])
        self.in_channels = V.check_int(
            _config(transformer, "in_channels"), "transformer.config.in_channels", low=4
        )
        if self.in_channels % 4 or _config(transformer, "patch_size", 1) != 1:
            raise ValueError(
                "transformer must take packed 2x2 latent tokens (in_channels divisible by 4, "
                f"patch_size 1), got in_channels={self.in_channels}"
            )
        out = _config(transformer, "out_channels") or self.in_channels
        if out != self.in_channels:
            raise ValueError(f"transformer must predict in_channels={self.in_channels}, got {out}")
        self.latent_channels = self.in_channels // 4
        self.transformer = transformer
        if controlnet is not None:
            if not isinstance(controlnet, torch.nn.Module):
                raise TypeError(
                    f"controlnet must be a FluxControlNetModel, got {type(controlnet).__name__}"
                )
            V.check_module_attrs(controlnet, "controlnet", ["config", "forward"])
            if getattr(controlnet, "input_hint_block", None) is not None:
                raise ValueError("controlnet must take the latent of y (no pixel input_hint_block)")
            if _config(controlnet, "in_channels") != self.in_channels:
                raise ValueError(
                    f"controlnet must have in_channels={self.in_channels}, "
                    f"got {_config(controlnet, 'in_channels')}"
                )
        self.controlnet = controlnet
        self.flux_guidance = V.check_scalar(flux_guidance, "flux_guidance", low=0.0, high=100.0)
        self.controlnet_scale = V.check_scalar(
            controlnet_scale, "controlnet_scale", low=0.0, high=10.0
        )
        joint = V.check_int(
            _config(transformer, "joint_attention_dim"), "transformer.config.joint_attention_dim"
        )
        pooled = V.check_int(
            _config(transformer, "pooled_projection_dim"),
            "transformer.config.pooled_projection_dim",
        )
        if prompt_embeds is None:
            prompt_embeds = torch.zeros(1, 1, joint)
        if pooled_prompt_embeds is None:
            pooled_prompt_embeds = torch.zeros(1, pooled)
        V.check_tensor(prompt_embeds, "prompt_embeds", shape=(1, None, joint), floating=True)
        V.check_tensor(
            pooled_prompt_embeds, "pooled_prompt_embeds", shape=(1, pooled), floating=True
        )
        self.register_buffer("prompt_embeds", prompt_embeds.detach().clone(), persistent=False)
        self.register_buffer(
            "pooled_prompt_embeds", pooled_prompt_embeds.detach().clone(), persistent=False
        )
        self.nfe = 0  # transformer calls (a load-free count beside any timing)

    @property
    def dtype(self) -> torch.dtype:
        return next(self.transformer.parameters()).dtype

    def forward(self, x, t, y=None, T0=None) -> torch.Tensor:
        """``v ~ eps - x0`` of the latent state ``x`` ``(n, c, h, w)`` at times ``t`` (scalar or
        one per row, in [0, 1]); ``y`` (same shape) feeds the ControlNet; ``T0`` is ignored."""
        x = V.check_tensor(x, "x", ndim=4, floating=True)
        n, c, h, w = x.shape
        if c != self.latent_channels or h % 2 or w % 2:
            raise ValueError(
                f"x must be (n, {self.latent_channels}, h, w) latents with even h and w, "
                f"got {tuple(x.shape)}"
            )
        dt = self.dtype
        t = torch.as_tensor(t, device=x.device)
        t = (t.expand(n) if t.dim() == 0 else t).to(dt)
        if t.shape != (n,):
            raise ValueError(f"t must be a scalar or one time per row, got shape {tuple(t.shape)}")
        tokens = pack_latents(x).to(dt)
        img_ids = latent_ids(h, w, device=x.device, dtype=dt)
        txt = self.prompt_embeds.to(device=x.device, dtype=dt).expand(n, -1, -1)
        txt_ids = torch.zeros(txt.shape[1], 3, device=x.device, dtype=dt)
        pooled = self.pooled_prompt_embeds.to(device=x.device, dtype=dt).expand(n, -1)
        common = dict(
            encoder_hidden_states=txt,
            pooled_projections=pooled,
            timestep=t,
            img_ids=img_ids,
            txt_ids=txt_ids,
            return_dict=False,
        )
        if _config(self.transformer, "guidance_embeds", False):
            common["guidance"] = torch.full((n,), self.flux_guidance, device=x.device, dtype=dt)
        extra = {}
        if y is not None and self.controlnet is not None:
            y = V.check_tensor(y, "y", shape=tuple(x.shape), floating=True)
            cn_args = dict(common)
            if not _config(self.controlnet, "guidance_embeds", False):
                cn_args.pop("guidance", None)
            elif "guidance" not in cn_args:
                cn_args["guidance"] = torch.full(
                    (n,), self.flux_guidance, device=x.device, dtype=dt
                )
            blocks, single = self.controlnet(
                hidden_states=tokens,
                controlnet_cond=pack_latents(y).to(dt),
                conditioning_scale=self.controlnet_scale,
                **cn_args,
            )
            extra = dict(
                controlnet_block_samples=blocks,
                controlnet_single_block_samples=single,
                controlnet_blocks_repeat=self.controlnet_repeat,
            )
        out = self.transformer(hidden_states=tokens, **common, **extra)[0]
        self.nfe += 1
        return unpack_latents(out, h, w).to(x.dtype)


class LatentCodec:
    """The VAE between ``[-1, 1]`` images and the bridge's latent space:
    ``encode = (mean - shift) * scale`` (the posterior mean; ``sample=True`` draws from it, as
    the released encoder does), ``decode = D(z / scale + shift)``."""

    def __init__(self, vae: torch.nn.Module, sample: bool = False):
        if not isinstance(vae, torch.nn.Module):
            raise TypeError(f"vae must be an AutoencoderKL, got {type(vae).__name__}")
        V.check_module_attrs(vae, "vae", ["config", "encode", "decode"])
        self.vae = vae
        self.sample = V.check_bool(sample, "sample")
        self.scale = float(_config(vae, "scaling_factor", 1.0) or 1.0)
        self.shift = float(_config(vae, "shift_factor", 0.0) or 0.0)
        self.channels = V.check_int(_config(vae, "in_channels", 3), "vae.config.in_channels")
        self.latent_channels = V.check_int(
            _config(vae, "latent_channels", 16), "vae.config.latent_channels"
        )
        self.factor = 2 ** (len(_config(vae, "block_out_channels", (0,) * 4)) - 1)

    @property
    def dtype(self):
        return next(self.vae.parameters()).dtype

    def encode(self, x: torch.Tensor, generator=None) -> torch.Tensor:
        dist = self.vae.encode(x.to(self.dtype)).latent_dist
        z = dist.sample(generator) if self.sample else dist.mean
        return ((z.float() - self.shift) * self.scale).to(x.dtype)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        x = self.vae.decode((z / self.scale + self.shift).to(self.dtype)).sample
        return x.to(z.dtype)


class FluxConsistencyRestorer(CGBRestorer):
    """The consistency restorer on a Flux transformer, a Flux ControlNet and the Flux VAE.

    Same training (:meth:`fit`) and restoration (:meth:`restore`, :meth:`tune_T0`) as the small
    UNet path; the bridge runs on VAE latents. ``adapter="controlnet"``: the transformer is
    frozen and is also the geodesic-guidance prior; only the ControlNet trains (a fresh one
    with ``controlnet_layers`` = (double, single) blocks copied from the transformer when
    ``controlnet`` is ``None``). The network does not see ``T0``, so training uses the single
    horizon ``T0`` unless ``T0_range`` is given. ``time_shift``: Flux's resolution-dependent
    time grid (the released sampler). Images: ``(n, H, W)`` (repeated over the VAE's channels;
    the output is their mean) or ``(n, C, H, W)`` with ``C`` the VAE's input channels, the side
    divisible by twice the VAE's downsampling factor. The other keywords are those of
    :class:`CGBRestorer`. A fitted size is not required: pretrained ControlNet weights restore
    at once. Build it with :meth:`CGBRestorer.from_diffusers`."""

    def __init__(
        self,
        transformer: torch.nn.Module,
        vae: torch.nn.Module,
        controlnet: torch.nn.Module | None = None,
        adapter: str = "controlnet",
        controlnet_layers: tuple[int, int] = (2, 0),
        flux_guidance: float = 4.0,
        controlnet_scale: float = 1.0,
        prompt_embeds: torch.Tensor | None = None,
        pooled_prompt_embeds: torch.Tensor | None = None,
        controlnet_repeat: bool = True,
        time_shift: bool = True,
        sample_posterior: bool = False,
        guidance: float = 1.0,
        tangent: str = "mix",
        kappa: float = 1.0,
        objective: str = "continuous",
        T0: float = 0.7,
        T0_range: tuple[float, float] | None = None,
        tangent_norm: bool = True,
        c: float = 1.0,
        n_discrete: int = 18,
        ema: float = 0.999,
        renoise: str = "start",
    ):
        torch.nn.Module.__init__(self)
        adapter = V.check_choice(adapter, "adapter", ADAPTERS)
        self.codec = LatentCodec(vae, sample_posterior)
        prior = FluxVelocity(
            transformer, None, flux_guidance, controlnet_scale, prompt_embeds, pooled_prompt_embeds
        )
        if self.codec.latent_channels != prior.latent_channels:
            raise ValueError(
                f"vae must have latent_channels={prior.latent_channels} (the transformer's "
                f"in_channels / 4), got {self.codec.latent_channels}"
            )
        if controlnet is None:
            double, single = (
                V.check_int(v, "controlnet_layers", low=0)
                for v in _pair_of(controlnet_layers, "controlnet_layers")
            )
            controlnet = _fresh_controlnet(transformer, double, single)
        T0 = check_T0(T0)
        T0_range = (T0, T0) if T0_range is None else T0_range
        self._set_options(prior, guidance, tangent, kappa, objective, T0_range, T0, tangent_norm, c)
        self.n_discrete = V.check_int(n_discrete, "n_discrete", low=1)
        self.ema = V.check_scalar(ema, "ema", low=0.0, high=1.0, high_open=True)
        self.renoise = V.check_choice(renoise, "renoise", RENOISE)
        self.time_shift = V.check_bool(time_shift, "time_shift")
        self.adapter = adapter
        transformer.requires_grad_(False)
        vae.requires_grad_(False)
        controlnet.requires_grad_(True)
        self.net = FluxVelocity(
            transformer,
            controlnet,
            flux_guidance,
            controlnet_scale,
            prior.prompt_embeds,
            prior.pooled_prompt_embeds,
            controlnet_repeat,
        )
        self.vae = vae  # registered, so .to(device) moves it with the network

    # -- hooks of the shared trainer and sampler -------------------------------
    def _check_ready(self):
        return None

    def _images(self, images, name, size=None, low=0.0, high=1.0) -> torch.Tensor:
        ch, side = self.codec.channels, 2 * self.codec.factor
        arr = V.check_array(images, name, ndim=(3, 4), dtype=np.float32, low=low, high=high)
        if arr.ndim == 3:
            arr = np.repeat(arr[:, None], ch, axis=1)
        if arr.shape[1] != ch:
            raise ValueError(
                f"{name} must be (n, H, W) or (n, {ch}, H, W) images, got shape {arr.shape}"
            )
        h, w = arr.shape[2:]
        if h % side or w % side:
            raise ValueError(f"{name} must have sides divisible by {side}, got {h}x{w}")
        if size is not None and (h, w) != (size, size):
            raise ValueError(f"{name} must be {size}x{size} images, got {h}x{w}")
        return to_signed(torch.from_numpy(np.ascontiguousarray(arr)))

    def _to_bridge(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.codec.encode(x)

    def _from_bridge(self, z: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.codec.decode(z)

    def _shift_mu(self, yb: torch.Tensor) -> float | None:
        if not self.time_shift:
            return None
        return flux_shift_mu(yb.shape[-2] * yb.shape[-1] // 4)

    def _output(self, x: torch.Tensor, like) -> np.ndarray:
        x = x.float()
        return (x.mean(1) if np.ndim(like) == 3 else x).cpu().numpy()

    def _device(self):
        return next(self.net.transformer.parameters()).device

    def fit(self, clean, degrade="sr4", steps=600, lr=2e-4, batch_size=64, sigma=0.2, seed=0):
        """Consistency training of the ControlNet on clean ``[0, 1]`` images (see the class
        for the layouts); the bridge runs on their latents. Returns ``self``."""
        super().fit(clean, degrade, steps, lr, batch_size, sigma, seed)
        self.size = None  # any admissible size restores
        return self

    def tune_T0(self, val_clean, grid=None, nfe: int = 1, sigma: float = 0.2, seed: int = 0):
        """The horizon on ``grid`` with the best mean PSNR (over images and channels) on
        ``val_clean`` degraded like the training data (``degrade`` of :meth:`fit`); sets
        ``self.T0`` and returns it."""
        from iclr26.generative.cgb.evaluate import psnr

        if self.task is None:
            raise RuntimeError("FluxConsistencyRestorer has no task; call fit() first")
        x = self._images(val_clean, "val_clean")
        sigma = V.check_scalar(sigma, "sigma", low=0.0, low_open=True, high=1.0)
        grid = np.linspace(0.1, 0.9, 9) if grid is None else grid
        grid = V.check_array(grid, "grid", ndim=1, low=0.0, high=1.0)
        for value in grid:
            check_T0(value, "grid")
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0) + 1)
        y = ((degrade_signed(x, self.task, sigma, g) + 1) / 2).numpy()
        clean = ((x + 1) / 2).flatten(0, 1).numpy()
        scores = []
        for v in grid:
            out = self.restore(y, nfe=nfe, T0=float(v), seed=seed)
            scores.append(psnr(out.reshape(clean.shape), clean))
        self.T0 = float(grid[int(np.argmax(scores))])
        self.tune_scores = dict(zip(map(float, grid), scores, strict=True))
        return self.T0


def _fresh_controlnet(transformer, double: int, single: int):
    """A Flux ControlNet with ``double`` / ``single`` blocks copied from ``transformer`` and
    zero-initialised input and output projections (so it starts as the prior)."""
    diffusers = _require_diffusers()
    heads = V.check_int(_config(transformer, "num_attention_heads"), "num_attention_heads")
    head_dim = V.check_int(_config(transformer, "attention_head_dim"), "attention_head_dim")
    cn = diffusers.FluxControlNetModel.from_transformer(
        transformer,
        num_layers=double,
        num_single_layers=single,
        attention_head_dim=head_dim,
        num_attention_heads=heads,
    )
    dtype = next(transformer.parameters()).dtype
    return cn if next(cn.parameters()).dtype == dtype else cn.to(dtype)


def _check_source(value, name: str):
    """A module (returned as is), or a hub id / existing local folder (returned as a string)."""
    if isinstance(value, torch.nn.Module):
        return value
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be a diffusers module, a hub id or a path, got {value!r}")
    value = os.fspath(value)
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty hub id or path")
    if not os.path.isdir(value) and not _HUB_ID.match(value):
        raise ValueError(
            f"{name} must be an existing folder or a hub id 'owner/name', got {value!r}"
        )
    return value


def _check_device(device) -> torch.device:
    """``device`` as a ``torch.device`` (a name such as ``"cuda:0"`` or a device)."""
    if not isinstance(device, str | torch.device):
        raise TypeError(f"device must be a device name or torch.device, got {device!r}")
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device must name a torch device, got {device!r}") from err


def _check_lazy_options(options: dict) -> None:
    """The checks of :class:`FluxConsistencyRestorer`'s options that need no module: the
    keyword names, the horizons and the choices."""
    import inspect

    known = set(inspect.signature(FluxConsistencyRestorer.__init__).parameters)
    known -= {"self", "transformer", "vae", "controlnet"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unexpected options for FluxConsistencyRestorer: {', '.join(unknown)}")
    if "T0" in options:
        check_T0(options["T0"])
    if options.get("T0_range") is not None:
        for value in _pair_of(options["T0_range"], "T0_range"):
            check_T0(value, "T0_range")
    for name, choices in (("tangent", TANGENTS), ("objective", OBJECTIVES), ("renoise", RENOISE)):
        if name in options:
            V.check_choice(options[name], name, choices)


class LazyFluxRestorer:
    """What :meth:`CGBRestorer.from_diffusers` returns for a hub id or a local path: nothing
    is read until the first call of :meth:`fit`, :meth:`restore` / :meth:`predict`,
    :meth:`tune_T0` or :meth:`load`, which loads the modules with ``from_pretrained``
    (``transformer`` and ``vae`` sub-folders of ``source``) and builds the
    :class:`FluxConsistencyRestorer`. A ``prompt`` is encoded once, with the pipeline's text
    encoders from ``source``."""

    def __init__(self, source, vae, controlnet, torch_dtype, device, prompt, options):
        self.source, self.vae_source, self.controlnet_source = source, vae, controlnet
        self.torch_dtype, self.device, self.prompt, self.options = (
            torch_dtype,
            device,
            prompt,
            options,
        )
        self.model: FluxConsistencyRestorer | None = None

    @property
    def loaded(self) -> bool:
        return self.model is not None

    def load(self) -> FluxConsistencyRestorer:
        if self.model is not None:
            return self.model
        diffusers = _require_diffusers()
        kw = {} if self.torch_dtype is None else {"torch_dtype": self.torch_dtype}
        transformer = self.source
        if isinstance(transformer, str):
            transformer = diffusers.FluxTransformer2DModel.from_pretrained(
                transformer, subfolder="transformer", **kw
            )
        vae = self.vae_source
        if isinstance(vae, str):
            sub = {"subfolder": "vae"} if vae == self.source else {}
            vae = diffusers.AutoencoderKL.from_pretrained(vae, **sub, **kw)
        controlnet = self.controlnet_source
        if isinstance(controlnet, str):
            controlnet = diffusers.FluxControlNetModel.from_pretrained(controlnet, **kw)
        options = dict(self.options)
        if self.prompt is not None:
            if not isinstance(self.source, str):
                raise ValueError("prompt needs the pipeline's text encoders: pass a hub id or path")
            pipe = diffusers.FluxPipeline.from_pretrained(
                self.source, transformer=None, vae=None, **kw
            ).to(self.device)
            with torch.no_grad():
                embeds, pooled, _ = pipe.encode_prompt(self.prompt, prompt_2=None)
            options.update(
                prompt_embeds=embeds[:1].float().cpu(),
                pooled_prompt_embeds=pooled[:1].float().cpu(),
            )
            del pipe
        model = FluxConsistencyRestorer(transformer, vae, controlnet, **options)
        self.model = model.to(self.device)
        return self.model

    def __getattr__(self, name):
        # attributes of the loaded restorer (losses, T0, net, ...); nothing is loaded here
        model = self.__dict__.get("model")
        if model is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (not loaded)")
        return getattr(model, name)

    def fit(self, *args, **kwargs):
        self.load().fit(*args, **kwargs)
        return self

    def restore(self, *args, **kwargs):
        return self.load().restore(*args, **kwargs)

    predict = restore

    def tune_T0(self, *args, **kwargs):
        return self.load().tune_T0(*args, **kwargs)


def from_diffusers(
    transformer="black-forest-labs/FLUX.1-dev",
    adapter: str = "controlnet",
    vae=None,
    controlnet=None,
    torch_dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    prompt: str | None = None,
    **options,
):
    """See :meth:`CGBRestorer.from_diffusers`."""
    V.check_choice(adapter, "adapter", ADAPTERS)
    transformer = _check_source(transformer, "transformer")
    if vae is None:
        if not isinstance(transformer, str):
            raise ValueError("vae must be given when transformer is a module")
        vae = transformer
    vae = _check_source(vae, "vae")
    if controlnet is not None:
        controlnet = _check_source(controlnet, "controlnet")
    if torch_dtype is not None and not isinstance(torch_dtype, torch.dtype):
        raise TypeError(f"torch_dtype must be a torch.dtype, got {torch_dtype!r}")
    if prompt is not None and not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
    device = _check_device(device)
    options = dict(options, adapter=adapter)
    if any(isinstance(v, str) for v in (transformer, vae, controlnet)):
        _check_lazy_options(options)  # refused now, not after the weights are read
        return LazyFluxRestorer(transformer, vae, controlnet, torch_dtype, device, prompt, options)
    if prompt is not None:
        raise ValueError("prompt needs the pipeline's text encoders: pass a hub id or path")
    model = FluxConsistencyRestorer(transformer, vae, controlnet, **options)
    if torch_dtype is not None:
        model = model.to(torch_dtype)
    return model.to(device)
