"""WorldModel3WM: one random-access sequence model over RGB, flow and camera nodes, trained on
random traversals of the graph, and the tasks as prompts (inference pathways) of that model.

Training (``fit``) samples, per step, a pathway template — which nodes are given and which one
is generated — and a random permutation of the patches inside every node; the sequence is the
given nodes' tokens followed by the generated node's, and the loss is the cross-entropy of the
generated content tokens. The pathways (3WM Sec. 3, LRAS Sec. 3):

* ``nvs``: RGB0 + dense flow -> RGB1, the flow either given or made from a depth map and a
  camera motion (unproject, move, reproject);
* ``manipulate``: RGB0 + sparse object flow (rigid motion inside the mask, 0 outside) -> RGB1;
* ``depth``: RGB0 + camera motion -> FLOW tokens -> decoded flow -> depth by triangulation;
* ``compose``: object motion and camera motion in one flow prompt (never a training template).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.world_model_3wm.geometry import (
    camera_flow,
    composed_flow,
    object_flow,
    triangulate_depth,
)
from iclr26.three_d.world_model_3wm.quantizer import LocalPatchQuantizer
from iclr26.three_d.world_model_3wm.scenes import KINDS
from iclr26.three_d.world_model_3wm.serializer import PointerContentSerializer
from iclr26.three_d.world_model_3wm.transformer import RandomAccessTransformer

__all__ = ["TEMPLATES", "WorldModel3WM"]

# template -> (given nodes, generated node, pair kind it is trained on)
TEMPLATES = {
    "nvs": (("RGB0", "FLOW"), "RGB1", "camera"),
    "manipulation": (("RGB0", "FLOW"), "RGB1", "object"),
    "depth": (("RGB0", "CAM"), "FLOW", "camera"),
    "reconstruction": (("RGB0",), "RGB0", None),
}
DEFAULT_WEIGHTS = {"nvs": 0.35, "manipulation": 0.3, "depth": 0.25, "reconstruction": 0.1}
_DATA_ATTRS = ("rgb0", "rgb1", "flow", "depth0", "R", "t", "kind")


class WorldModel3WM(nn.Module):
    """3WM on ``image_size`` images cut in ``patch`` tiles: two local quantizers (RGB, flow),
    the pointer-content serializer and a ``layers`` x ``d`` random-access transformer.

    ``templates`` are the training pathways (``TEMPLATES`` keys) and ``template_weights``
    their sampling probabilities; a specialist is the same model with one template."""

    def __init__(
        self,
        image_size: int = 16,
        patch: int = 4,
        d: int = 128,
        layers: int = 4,
        heads: int = 4,
        *,
        rgb_codes: int = 256,
        flow_codes: int = 128,
        pose_bins: int = 64,
        max_translation: float = 0.3,
        max_rotation: float = 0.05,
        templates: tuple[str, ...] = tuple(TEMPLATES),
        template_weights: dict[str, float] | None = None,
        quantizer_hidden: int = 16,
    ):
        super().__init__()
        self.image_size = V.check_int(image_size, "image_size", low=2)
        self.patch = V.check_int(patch, "patch", low=1)
        if self.image_size % self.patch:
            raise ValueError(f"image_size must be a multiple of patch, got {image_size}, {patch}")
        if isinstance(templates, str) or not len(templates):
            raise ValueError(f"templates must be a non-empty tuple of {tuple(TEMPLATES)}")
        self.templates = tuple(V.check_choice(t, "templates", tuple(TEMPLATES)) for t in templates)
        weights = template_weights or {t: DEFAULT_WEIGHTS[t] for t in self.templates}
        for name, w in weights.items():
            V.check_choice(name, "template_weights", self.templates)
            V.check_scalar(w, f"template_weights[{name!r}]", low=0.0)
        total = sum(weights.get(t, 0.0) for t in self.templates)
        if not total > 0:
            raise ValueError("template_weights must put positive weight on some template")
        self.template_weights = {t: weights.get(t, 0.0) / total for t in self.templates}
        self.grid = self.image_size // self.patch
        self.n_patches = self.grid**2
        self.rgb_quantizer = LocalPatchQuantizer(
            "rgb", self.patch, rgb_codes, hidden=quantizer_hidden
        )
        self.flow_quantizer = LocalPatchQuantizer(
            "flow", self.patch, flow_codes, hidden=quantizer_hidden
        )
        self.serializer = PointerContentSerializer(
            self.n_patches,
            rgb_codes,
            flow_codes,
            pose_bins,
            max_translation=max_translation,
            max_rotation=max_rotation,
        )
        self.transformer = RandomAccessTransformer(self.serializer.vocab_size, d, layers, heads)
        self.register_buffer("depth_range", torch.tensor([1e-2, 1e3]))
        self.history: list[float] = []
        self.forward_passes = 0  # transformer calls made by generate (a load-free count)
        self.config = dict(
            image_size=image_size,
            patch=patch,
            d=d,
            layers=layers,
            heads=heads,
            rgb_codes=rgb_codes,
            flow_codes=flow_codes,
            pose_bins=pose_bins,
            max_translation=max_translation,
            max_rotation=max_rotation,
            templates=self.templates,
            template_weights=self.template_weights,
            quantizer_hidden=quantizer_hidden,
        )

    @property
    def device(self) -> torch.device:
        """Where the transformer runs (quantizers, geometry and tokens stay on the CPU)."""
        return next(self.transformer.parameters()).device

    # ------------------------------------------------------------------ input checks
    def _check_rgb(self, rgb: torch.Tensor, name: str = "rgb0") -> torch.Tensor:
        rgb = V.check_tensor(rgb, name, ndim=(3, 4), floating=True, low=0.0, high=1.0)
        rgb = rgb[None] if rgb.dim() == 3 else rgb
        s = self.image_size
        if tuple(rgb.shape[1:]) != (3, s, s):
            raise ValueError(f"{name} must have shape (B, 3, {s}, {s}), got {tuple(rgb.shape)}")
        return rgb

    def _check_flow(self, flow: torch.Tensor, batch: int) -> torch.Tensor:
        flow = V.check_tensor(flow, "flow", ndim=(3, 4), floating=True)
        flow = flow[None] if flow.dim() == 3 else flow
        s = self.image_size
        if tuple(flow.shape) != (batch, 2, s, s):
            raise ValueError(f"flow must have shape ({batch}, 2, {s}, {s}), got {flow.shape}")
        return flow

    def _check_cam(self, cam, batch: int):
        if not isinstance(cam, tuple | list) or len(cam) != 2:
            raise TypeError("cam must be a (R, t) pair of tensors")
        R = V.check_tensor(cam[0], "cam rotation", ndim=(2, 3), floating=True)
        t = V.check_tensor(cam[1], "cam translation", ndim=(1, 2), floating=True)
        if tuple(R.shape[-2:]) != (3, 3) or t.shape[-1] != 3:
            raise ValueError(f"cam must be R (3, 3) or ({batch}, 3, 3) and t (3,) or ({batch}, 3)")
        R = R.expand(batch, 3, 3) if R.dim() == 2 else R
        t = t.expand(batch, 3) if t.dim() == 1 else t
        if tuple(R.shape) != (batch, 3, 3) or tuple(t.shape) != (batch, 3):
            raise ValueError(f"cam must be R (3, 3) or ({batch}, 3, 3) and t (3,) or ({batch}, 3)")
        ortho = R @ R.transpose(1, 2) - torch.eye(3)
        if ortho.abs().max() > 1e-3:
            raise ValueError("cam rotation must be a rotation matrix (R R^T = I)")
        return R, t

    def _depth_of(self, rgb0, depth, depth_fn):
        if depth is None:
            if depth_fn is None:
                raise ValueError("depth is required (or a depth_fn(rgb0) -> depth callable)")
            if not callable(depth_fn):
                raise TypeError("depth_fn must be callable")
            depth = depth_fn(rgb0)
        depth = V.check_tensor(depth, "depth", ndim=(2, 3), floating=True)
        depth = depth[None] if depth.dim() == 2 else depth
        if tuple(depth.shape) != (rgb0.shape[0], self.image_size, self.image_size):
            raise ValueError(f"depth must have shape (B, H, W) matching rgb0, got {depth.shape}")
        if (depth <= 0).any():
            raise ValueError("depth must be > 0 everywhere")
        return depth

    # ------------------------------------------------------------------ tokens
    def _codes(self, data) -> dict[str, torch.Tensor]:
        b = data.rgb0.shape[0]
        return dict(
            RGB0=self.rgb_quantizer.encode(data.rgb0).reshape(b, -1),
            RGB1=self.rgb_quantizer.encode(data.rgb1).reshape(b, -1),
            FLOW=self.flow_quantizer.encode(data.flow).reshape(b, -1),
            CAM=self.serializer.pose_to_bins(data.R, data.t),
        )

    def _random_order(self, b: int, width: int, gen: torch.Generator) -> torch.Tensor:
        return torch.argsort(torch.rand(b, width, generator=gen), dim=1)

    def training_sequence(
        self, codes: dict[str, torch.Tensor], template: str, gen: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens ``(B, L)`` and the loss mask (generated content tokens) of one template;
        ``codes`` maps node names to ``(B, N)`` codes (``(B, 6)`` bins for CAM)."""
        template = V.check_choice(template, "template", tuple(TEMPLATES))
        given, target, _ = TEMPLATES[template]
        ser = self.serializer
        b = next(iter(codes.values())).shape[0]
        parts, masks = [], []
        if template == "reconstruction":
            order = self._random_order(b, self.n_patches, gen)
            k = int(torch.randint(1, self.n_patches, (1,), generator=gen))
            toks = ser.node_tokens("RGB0", codes["RGB0"], order)
            mask = torch.zeros_like(toks, dtype=torch.bool)
            mask[:, 3 * k + 2 :: 3] = True
            return toks, mask
        for node in given:
            width = 6 if node == "CAM" else self.n_patches
            toks = ser.node_tokens(node, codes[node], self._random_order(b, width, gen))
            parts.append(toks)
            masks.append(torch.zeros_like(toks, dtype=torch.bool))
        toks = ser.node_tokens(target, codes[target], self._random_order(b, self.n_patches, gen))
        mask = torch.zeros_like(toks, dtype=torch.bool)
        mask[:, 2::3] = True
        return torch.cat(parts + [toks], 1), torch.cat(masks + [mask], 1)

    # ------------------------------------------------------------------ training
    def fit(
        self,
        data,
        steps: int = 1500,
        *,
        batch: int = 32,
        lr: float = 1e-3,
        quantizer_steps: int = 300,
        quantizer_batch: int = 64,
        quantizers_from: WorldModel3WM | None = None,
        seed: int = 0,
    ) -> WorldModel3WM:
        """Train on pairs ``data`` (a :class:`ToyScenes` or any object with its tensors):
        first the two quantizers (or copy them from ``quantizers_from``), then ``steps``
        transformer steps of ``batch`` sequences, AdamW with a cosine schedule. Returns self."""
        V.check_module_attrs(data, "data", _DATA_ATTRS)
        steps = V.check_int(steps, "steps", low=0)
        batch = V.check_int(batch, "batch", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        quantizer_steps = V.check_int(quantizer_steps, "quantizer_steps", low=0)
        quantizer_batch = V.check_int(quantizer_batch, "quantizer_batch", low=1)
        seed = V.check_int(seed, "seed", low=0)
        self._check_rgb(data.rgb0, "data.rgb0")
        self._check_rgb(data.rgb1, "data.rgb1")
        self._check_flow(data.flow, data.rgb0.shape[0])
        V.check_tensor(data.depth0, "data.depth0", ndim=3, floating=True, low=0.0)
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        pools = {}
        for name in self.templates:
            kind = TEMPLATES[name][2]
            pool = (
                torch.arange(len(data.kind))
                if kind is None
                else torch.nonzero(data.kind == KINDS.index(kind)).flatten()
            )
            if pool.numel() == 0:
                raise ValueError(f"data has no {kind!r} pairs for the {name!r} template")
            pools[name] = pool
        if quantizers_from is not None:
            if not isinstance(quantizers_from, WorldModel3WM):
                raise TypeError("quantizers_from must be a fitted WorldModel3WM")
            self.rgb_quantizer = copy.deepcopy(quantizers_from.rgb_quantizer)
            self.flow_quantizer = copy.deepcopy(quantizers_from.flow_quantizer)
        else:
            self.rgb_quantizer.fit(
                torch.cat([data.rgb0, data.rgb1]), quantizer_steps, batch=quantizer_batch,
                lr=3e-3, seed=seed,
            )  # fmt: skip
            self.flow_quantizer.fit(
                data.flow, quantizer_steps, batch=quantizer_batch, lr=3e-3, seed=seed
            )
        d0 = data.depth0
        self.depth_range = torch.stack([d0.min(), d0.max()]).float()
        codes = self._codes(data)
        names = list(self.templates)
        probs = torch.tensor([self.template_weights[n] for n in names])
        opt = torch.optim.AdamW(self.transformer.parameters(), lr=lr, weight_decay=0.01)
        warm = max(1, steps // 20)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda s: (
                min(1.0, (s + 1) / warm)
                * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, steps) / max(steps, 1))))
            ),
        )
        self.transformer.train()
        self.history = []
        for _ in range(steps):
            name = names[int(torch.multinomial(probs, 1, generator=gen))]
            pool = pools[name]
            idx = pool[torch.randint(0, len(pool), (min(batch, len(pool)),), generator=gen)]
            tokens, mask = self.training_sequence({k: v[idx] for k, v in codes.items()}, name, gen)
            dev = self.device
            loss = self.transformer.loss(tokens.to(dev), mask.to(dev))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.transformer.parameters(), 1.0)
            opt.step()
            sched.step()
            self.history.append(float(loss.detach()))
        self.transformer.eval()
        return self

    # ------------------------------------------------------------------ sampling
    @torch.no_grad()
    def generate(
        self,
        prefix: torch.Tensor,
        node: str,
        order: torch.Tensor,
        *,
        top_k: int | None = None,
        temperature: float = 1.0,
        seed: int = 0,
    ) -> torch.Tensor:
        """Content codes ``(B, N)`` of ``node`` generated after ``prefix`` tokens (B, L), one
        patch at a time in ``order`` (B, N) of pointers: the pointer is appended, the model
        emits the content (greedy, or top-k sampling when ``top_k`` is set)."""
        node = V.check_choice(node, "node", ("RGB0", "RGB1", "FLOW"))
        prefix = V.check_tensor(prefix, "prefix", ndim=2, integer=True)
        order = V.check_tensor(order, "order", ndim=2, integer=True, low=0)
        if order.shape[0] != prefix.shape[0] or order.max() >= self.n_patches:
            raise ValueError(f"order must be (B, k) pointers in [0, {self.n_patches - 1}]")
        top_k = V.check_int(top_k, "top_k", low=1, allow_none=True)
        temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        ser = self.serializer
        lo, hi = ser.content_range(node)
        b, k = order.shape
        codes = torch.zeros(b, self.n_patches, dtype=torch.long)
        node_tok = torch.full((b, 1), ser.node_token(node), dtype=torch.long)
        self.transformer.eval()
        cache = self.transformer.new_cache()
        step = prefix
        for j in range(k):
            ptr = order[:, j : j + 1]
            step = torch.cat([step, node_tok, ptr + ser.pointer_base], 1)
            logits = self.transformer(step.to(self.device), cache)[:, -1, lo:hi].cpu()
            if top_k is None:
                pick = logits.argmax(-1)
            else:
                vals, ids = logits.topk(min(top_k, hi - lo), -1)
                probs = torch.softmax(vals / temperature, -1)
                pick = ids.gather(1, torch.multinomial(probs, 1, generator=gen)).squeeze(1)
            codes[torch.arange(b), order[:, j]] = pick
            self.forward_passes += 1
            step = (pick + lo)[:, None]
        return codes

    def _prompt(self, parts: list[tuple[str, torch.Tensor]], seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        toks = []
        for node, codes in parts:
            order = self._random_order(codes.shape[0], codes.shape[1], gen)
            toks.append(self.serializer.node_tokens(node, codes, order))
        return torch.cat(toks, 1)

    def _order(self, b: int, seed: int) -> torch.Tensor:
        return self._random_order(b, self.n_patches, torch.Generator().manual_seed(seed + 1))

    # ------------------------------------------------------------------ pathways
    def nvs(
        self,
        rgb0: torch.Tensor,
        flow: torch.Tensor | None = None,
        *,
        depth: torch.Tensor | None = None,
        cam=None,
        K: torch.Tensor | None = None,
        depth_fn=None,
        top_k: int | None = None,
        seed: int = 0,
    ) -> torch.Tensor:
        """Novel view: RGB0 + dense flow -> RGB1 ``(B, 3, H, W)``. Give ``flow`` directly, or
        ``cam=(R, t)`` and ``K`` with ``depth`` (or ``depth_fn(rgb0)``), from which the flow
        is made by unprojecting, moving the camera and reprojecting."""
        rgb0 = self._check_rgb(rgb0)
        b = rgb0.shape[0]
        if flow is None:
            if cam is None or K is None:
                raise ValueError("nvs needs flow, or cam=(R, t) and K with depth or depth_fn")
            R, t = self._check_cam(cam, b)
            flow = camera_flow(self._depth_of(rgb0, depth, depth_fn), K, R, t)
        return self.generate_rgb1(rgb0, self._check_flow(flow, b), top_k=top_k, seed=seed)

    def forward(self, rgb0: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
        """The module call is the RGB0 + FLOW -> RGB1 query (greedy)."""
        return self.generate_rgb1(rgb0, flow)

    def generate_rgb1(self, rgb0, flow, *, top_k=None, seed: int = 0) -> torch.Tensor:
        """The shared RGB0 + FLOW -> RGB1 query behind nvs, manipulate and compose."""
        rgb0 = self._check_rgb(rgb0)
        b = rgb0.shape[0]
        flow = self._check_flow(flow, b)
        seed = V.check_int(seed, "seed", low=0)
        c0 = self.rgb_quantizer.encode(rgb0).reshape(b, -1)
        cf = self.flow_quantizer.encode(flow).reshape(b, -1)
        prefix = self._prompt([("RGB0", c0), ("FLOW", cf)], seed)
        codes = self.generate(prefix, "RGB1", self._order(b, seed), top_k=top_k, seed=seed)
        out = self.rgb_quantizer.decode(codes.reshape(b, self.grid, self.grid))
        return out.clamp(0, 1)

    def _mask_of(self, rgb0, mask, mask_fn):
        if mask is None:
            if mask_fn is None or not callable(mask_fn):
                raise ValueError("mask is required (or a callable mask_fn(rgb0) -> mask)")
            mask = mask_fn(rgb0)
        return mask

    def manipulate(
        self,
        rgb0: torch.Tensor,
        mask: torch.Tensor | None,
        R_obj: torch.Tensor,
        t_obj: torch.Tensor,
        depth: torch.Tensor | None = None,
        *,
        K: torch.Tensor,
        pivot: torch.Tensor | None = None,
        depth_fn=None,
        mask_fn=None,
        top_k: int | None = None,
        seed: int = 0,
    ) -> torch.Tensor:
        """Object manipulation: the object in ``mask`` (or ``mask_fn(rgb0)``) moves rigidly by
        ``(R_obj, t_obj)`` about ``pivot`` (default: its centroid); the prompt is RGB0 plus the
        sparse flow (object motion inside the mask, 0 outside) -> edited RGB1."""
        rgb0 = self._check_rgb(rgb0)
        depth = self._depth_of(rgb0, depth, depth_fn)
        mask = self._mask_of(rgb0, mask, mask_fn)
        flow = object_flow(depth, K, mask, R_obj, t_obj, pivot)
        return self.generate_rgb1(rgb0, flow, top_k=top_k, seed=seed)

    def compose(
        self,
        rgb0: torch.Tensor,
        cam,
        K: torch.Tensor,
        mask: torch.Tensor | None,
        R_obj: torch.Tensor,
        t_obj: torch.Tensor,
        depth: torch.Tensor | None = None,
        *,
        pivot: torch.Tensor | None = None,
        depth_fn=None,
        mask_fn=None,
        top_k: int | None = None,
        seed: int = 0,
    ) -> torch.Tensor:
        """Composed pathway: move the object in ``mask`` while the camera moves by ``cam``;
        one flow prompt carries both motions (:func:`composed_flow`) -> RGB1."""
        rgb0 = self._check_rgb(rgb0)
        R, t = self._check_cam(cam, rgb0.shape[0])
        depth = self._depth_of(rgb0, depth, depth_fn)
        mask = self._mask_of(rgb0, mask, mask_fn)
        flow = composed_flow(depth, K, R, t, mask, R_obj, t_obj, pivot)
        return self.generate_rgb1(rgb0, flow, top_k=top_k, seed=seed)

    def predict_flow(self, rgb0: torch.Tensor, cam, *, top_k=None, seed: int = 0):
        """RGB0 + camera node -> generated FLOW tokens -> decoded flow ``(B, 2, H, W)``."""
        rgb0 = self._check_rgb(rgb0)
        b = rgb0.shape[0]
        R, t = self._check_cam(cam, b)
        seed = V.check_int(seed, "seed", low=0)
        c0 = self.rgb_quantizer.encode(rgb0).reshape(b, -1)
        bins = self.serializer.pose_to_bins(R, t)
        prefix = self._prompt([("RGB0", c0), ("CAM", bins)], seed)
        codes = self.generate(prefix, "FLOW", self._order(b, seed), top_k=top_k, seed=seed)
        return self.flow_quantizer.decode(codes.reshape(b, self.grid, self.grid))

    def depth(self, rgb0: torch.Tensor, cam, K: torch.Tensor, *, top_k=None, seed: int = 0):
        """Zero-shot depth: generate the flow that the camera motion ``cam`` would cause,
        then triangulate every pixel with the known pose; clipped to the depth range seen in
        training (triangulation is unbounded where the predicted flow is near zero)."""
        rgb0 = self._check_rgb(rgb0)
        R, t = self._check_cam(cam, rgb0.shape[0])
        if (t.norm(dim=1) < 1e-6).any():
            raise ValueError("cam translation must be non-zero: depth needs a baseline")
        flow = self.predict_flow(rgb0, (R, t), top_k=top_k, seed=seed)
        return self.depth_from_flow(flow, (R, t), K)

    def depth_from_flow(self, flow: torch.Tensor, cam, K: torch.Tensor) -> torch.Tensor:
        """Triangulated depth of a (predicted) flow under the camera motion ``cam``; points
        behind the camera or beyond the training depth range are set to its far end, nearer
        ones to its near end."""
        flow = V.check_tensor(flow, "flow", ndim=4, floating=True)
        R, t = self._check_cam(cam, flow.shape[0])
        z = triangulate_depth(flow, K, R, t)
        lo, hi = float(self.depth_range[0]), float(self.depth_range[1])
        return torch.where(z > 0, z, torch.full_like(z, hi)).clamp(lo, hi)

    def sequence_length(self, pathway: str = "nvs") -> int:
        """Tokens in a full sequence of a pathway (prompt plus generated node)."""
        pathway = V.check_choice(pathway, "pathway", tuple(TEMPLATES))
        given, target, _ = TEMPLATES[pathway]
        if pathway == "reconstruction":
            return self.serializer.node_length("RGB0")
        return sum(self.serializer.node_length(n) for n in (*given, target))

    # ------------------------------------------------------------------ persistence
    def save_pretrained(self, path: str | Path) -> Path:
        """Write config and weights to ``path`` (a file) for :meth:`from_pretrained`."""
        path = Path(path)
        torch.save({"config": self.config, "state_dict": self.state_dict()}, path)
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path) -> WorldModel3WM:
        """Load a model written by :meth:`save_pretrained` (no official weights exist)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path {str(path)!r} is not a saved WorldModel3WM file")
        blob = torch.load(path, map_location="cpu", weights_only=False)
        if not isinstance(blob, dict) or "config" not in blob:
            raise ValueError(f"path {str(path)!r} does not hold a WorldModel3WM checkpoint")
        cfg = dict(blob["config"])
        model = cls(**cfg)
        model.load_state_dict(blob["state_dict"])
        return model.eval()
