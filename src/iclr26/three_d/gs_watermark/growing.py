"""Scaffold-GS anchor growing and pruning, and CompMarkGS's frequency-aware anchor growing (FAG).

Statistics (Scaffold-GS): per neural Gaussian, the running sum and count of the norm of its
view-space (NDC) position gradient; per anchor, the summed non-negative opacity of its K
Gaussians and how often it was in view. Every ``check_interval`` steps, Gaussians seen often
enough whose mean gradient passes a threshold seed new anchors on a multi-level voxel grid
(``update_depth`` levels of voxel ``voxel * (init_factor // hierarchy_factor**i)``, threshold
``x (hierarchy_factor // 2)**i``, a random keep of ``1 - 0.5**(i + 1)``); a new anchor takes the
voxel centre, scaling log(voxel), zero offsets and the element-wise max of the features (and of
any inherited tensor, e.g. the watermark embedding f') of the Gaussians that seeded it. Anchors
seen often enough whose mean opacity is below ``min_opacity`` are pruned.

FAG (CompMarkGS): only Gaussians whose projected centre falls on a pixel with
``median(P_err) + 0.1 <= P_err <= median(P_err) + 0.3`` (P_err = 1 - SSIM map of the high-passed
grey images) add to the gradient statistics, with the high-frequency thresholds
:data:`HIGH_FREQUENCY` instead of :data:`ORDINARY`."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

#: Thresholds of the ordinary phase (CompMarkGS release script: grad 7e-4, success 0.8,
#: min opacity 0.005).
ORDINARY = dict(grad_threshold=7e-4, success_threshold=0.8, min_opacity=0.005)
#: Thresholds of frequency-aware growing (grad 1.5e-4, success 0.6, min opacity 0.15).
HIGH_FREQUENCY = dict(grad_threshold=1.5e-4, success_threshold=0.6, min_opacity=0.15)


def check_growth_schedule(every, start, until, steps: int):
    """Validate (grow_every, grow_from, grow_until) for a run of ``steps`` steps."""
    every = V.check_int(every, "grow_every", low=1, allow_none=True)
    start = V.check_int(start, "grow_from", low=0)
    until = steps if until is None else V.check_int(until, "grow_until", low=0)
    return every, start, until


def high_frequency_mask(p_err: torch.Tensor, low: float = 0.1, high: float = 0.3) -> torch.Tensor:
    """Pixels with ``median + low <= p_err <= median + high`` (the FAG pixel mask)."""
    V.check_tensor(p_err, "p_err", ndim=2, floating=True)
    low = V.check_scalar(low, "low")
    high = V.check_scalar(high, "high", low=low)
    med = torch.median(p_err.detach())
    return (p_err >= med + low) & (p_err <= med + high)


def pixel_filter(means2d: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(M,) bool: Gaussians whose projected centre (pixel coordinates, centres at +0.5) lies
    inside the image on a pixel where ``mask`` (H, W) is set."""
    V.check_tensor(means2d, "means2d", ndim=2, shape=(None, 2), floating=True, nonempty=False)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 2:
        raise TypeError("mask must be a 2-D bool tensor")
    h, w = mask.shape
    px = torch.floor(means2d.detach()).long()
    inside = (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)
    hit = torch.zeros_like(inside)
    hit[inside] = mask[px[inside, 1], px[inside, 0]]
    return hit


def _swap(opt: torch.optim.Optimizer | None, old: nn.Parameter, new: nn.Parameter, edit) -> None:
    """Replace ``old`` by ``new`` in ``opt``; Adam's moments follow through ``edit``."""
    if opt is None:
        return
    for group in opt.param_groups:
        for j, p in enumerate(group["params"]):
            if p is old:
                group["params"][j] = new
    state = opt.state.pop(old, None)
    if state:
        for key in ("exp_avg", "exp_avg_sq"):
            if key in state:
                state[key] = edit(state[key])
        opt.state[new] = state


def _scatter_max(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """Row-wise maximum of ``src`` rows grouped by ``index`` (``size`` groups)."""
    out = src.new_zeros(size, *src.shape[1:])
    idx = index.reshape(-1, *([1] * (src.dim() - 1))).expand_as(src)
    return out.scatter_reduce(0, idx, src, "amax", include_self=False)


class AnchorGrowth:
    """Growing statistics and the grow/prune step of a Scaffold-GS :class:`AnchorGS`.

    ``inherit``: extra per-anchor parameters as ``(module, attribute)`` pairs (first dimension
    = anchors) that new anchors inherit by scatter-max and pruning removes, e.g. the watermark
    embedding of :class:`CompMarkGS`. ``max_anchors`` caps the anchor count (new anchors with
    the largest seeding gradient first); None, the paper's behaviour, does not cap. ``voxel``:
    the finest growing voxel (default: the anchor model's voxel, as Scaffold-GS)."""

    def __init__(
        self,
        gs,
        *,
        inherit=(),
        update_depth: int = 3,
        init_factor: int = 16,
        hierarchy_factor: int = 4,
        max_anchors: int | None = None,
        voxel: float | None = None,
        generator: torch.Generator | None = None,
    ):
        from .anchor import AnchorGS

        if not isinstance(gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(gs).__name__}")
        self.gs = gs
        self.inherit = list(inherit)
        for mod, attr in self.inherit:
            t = getattr(mod, attr, None)
            if not isinstance(t, nn.Parameter) or t.shape[0] != gs.n_anchors:
                raise ValueError(f"inherit: {attr} must be a parameter with one row per anchor")
        self.update_depth = V.check_int(update_depth, "update_depth", low=1)
        self.init_factor = V.check_int(init_factor, "init_factor", low=1)
        self.hierarchy_factor = V.check_int(hierarchy_factor, "hierarchy_factor", low=1)
        self.max_anchors = V.check_int(max_anchors, "max_anchors", low=1, allow_none=True)
        self.voxel = (
            gs.voxel if voxel is None else V.check_scalar(voxel, "voxel", low=0, low_open=True)
        )
        self.generator = generator
        n, k = gs.n_anchors, gs.k
        self.device = dev = gs.anchor.device  # the statistics live beside the model
        self.opacity_accum = torch.zeros(n, device=dev)
        self.anchor_denom = torch.zeros(n, device=dev)
        self.grad_accum = torch.zeros(n * k, device=dev)
        self.grad_denom = torch.zeros(n * k, device=dev)
        self.history: list[dict[str, int]] = []

    @torch.no_grad()
    def accumulate(self, info: dict, out, visible: torch.Tensor, camera, pixel_mask=None) -> int:
        """Add one step's statistics. ``info``: :meth:`AnchorGS.neural_gaussians` of the step;
        ``out``: its ``RenderOutput`` after ``backward`` with ``out.means2d.retain_grad()``;
        ``visible``: :meth:`AnchorGS.visible_anchors`; ``pixel_mask`` (H, W) bool restricts
        the gradient statistics to Gaussians centred on masked pixels (FAG). Returns how
        many Gaussians added a gradient."""
        k = self.gs.k
        vis = visible.bool()
        op = info["opacity_all"].detach().clamp_min(0).reshape(-1, k)
        self.opacity_accum[vis] += op[vis].sum(dim=1)
        self.anchor_denom[vis] += 1
        keep = info["keep"]
        if out.means2d.grad is None:
            raise ValueError("out.means2d has no gradient: call retain_grad() before backward")
        # 3DGS measures the gradient w.r.t. NDC positions: d/d(ndc) = d/d(pixel) * size / 2
        size = torch.tensor([camera.width / 2, camera.height / 2], device=out.means2d.device)
        grad = out.means2d.grad * size
        ok = (out.radii > 0) & vis.repeat_interleave(k)[keep]
        if pixel_mask is not None:
            ok = ok & pixel_filter(out.means2d, pixel_mask)
        rows = torch.nonzero(keep).squeeze(1)[ok]
        self.grad_accum[rows] += grad[ok].norm(dim=1)
        self.grad_denom[rows] += 1
        return int(ok.sum())

    def _resize(self, opt, mod, attr: str, new_rows: torch.Tensor | None, keep=None) -> None:
        old = getattr(mod, attr)
        if keep is not None:
            data = old.detach()[keep]

            def edit(m):
                return m[keep]
        else:
            data = torch.cat([old.detach(), new_rows.to(old)])
            pad = new_rows.shape[0]

            def edit(m):
                return torch.cat([m, m.new_zeros(pad, *m.shape[1:])])

        new = nn.Parameter(data, requires_grad=old.requires_grad)
        setattr(mod, attr, new)
        _swap(opt, old, new, edit)

    def _per_anchor(self):
        gs = self.gs
        return [(gs, "anchor"), (gs, "feature"), (gs, "scaling"), (gs, "offset"), *self.inherit]

    @torch.no_grad()
    def _grow(self, opt, grads: torch.Tensor, threshold: float, offset_mask: torch.Tensor) -> int:
        gs, k = self.gs, self.gs.k
        init_len = gs.n_anchors * k
        grown = 0
        for level in range(self.update_depth):
            thr = threshold * (self.hierarchy_factor // 2) ** level
            cand = (grads >= thr) & offset_mask
            # drawn on the CPU (the generator's device): the same stream on every device
            keep = torch.rand(cand.shape, generator=self.generator).to(cand.device)
            keep = keep > 0.5 ** (level + 1)
            cand = cand & keep
            inc = gs.n_anchors * k - init_len
            if inc == 0 and level > 0:
                continue  # as Scaffold-GS: finer levels only after a coarser one grew
            dev = cand.device
            cand = torch.cat([cand, torch.zeros(inc, dtype=torch.bool, device=dev)])
            cand_grad = torch.cat([grads, torch.zeros(inc, device=dev)])[cand]
            size = self.voxel * (self.init_factor // self.hierarchy_factor**level)
            if size <= 0 or not bool(cand.any()):
                continue
            scale = torch.exp(gs.scaling[:, :3])
            xyz = (gs.anchor[:, None, :] + gs.offset * scale[:, None, :]).reshape(-1, 3)
            cells = torch.round(xyz[cand] / size).long()
            uniq, inv = torch.unique(cells, dim=0, return_inverse=True)
            occupied = torch.round(gs.anchor / size).long()
            taken = (uniq[:, None, :] == occupied[None, :, :]).all(-1).any(-1)
            fresh = ~taken
            if not bool(fresh.any()):
                continue
            m = uniq.shape[0]
            seed_grad = torch.zeros(m, device=dev)
            seed_grad = seed_grad.scatter_reduce(0, inv, cand_grad, "amax", include_self=False)
            order = torch.nonzero(fresh).squeeze(1)
            if self.max_anchors is not None:
                room = self.max_anchors - gs.n_anchors
                if room <= 0:
                    break
                order = order[torch.argsort(seed_grad[order], descending=True)[:room]]

            def inherit(t, cand=cand, inv=inv, m=m, order=order):
                return _scatter_max(t.detach().repeat_interleave(k, dim=0)[cand], inv, m)[order]

            n_new = order.numel()
            new_rows = {
                "anchor": uniq[order].to(gs.anchor.dtype) * size,
                "feature": inherit(gs.feature),
                "scaling": torch.full((n_new, 6), float(torch.log(torch.tensor(size))), device=dev),
                "offset": torch.zeros(n_new, k, 3, device=dev),
            }
            inherited = [inherit(getattr(mod, attr)) for mod, attr in self.inherit]
            for (mod, attr), rows in zip(self._per_anchor()[:4], new_rows.values(), strict=True):
                self._resize(opt, mod, attr, rows)
            for (mod, attr), rows in zip(self.inherit, inherited, strict=True):
                self._resize(opt, mod, attr, rows)
            self.opacity_accum = torch.cat([self.opacity_accum, torch.zeros(n_new, device=dev)])
            self.anchor_denom = torch.cat([self.anchor_denom, torch.zeros(n_new, device=dev)])
            grown += n_new
        return grown

    @torch.no_grad()
    def adjust(
        self,
        opt: torch.optim.Optimizer | None,
        *,
        grad_threshold: float,
        success_threshold: float,
        min_opacity: float,
        check_interval: int = 100,
    ) -> dict[str, int]:
        """Grow, then prune (Scaffold-GS ``adjust_anchor``); ``opt``'s Adam moments follow the
        parameters (zeros for new anchors). Returns counts of anchors grown / pruned / after."""
        thr = V.check_scalar(grad_threshold, "grad_threshold", low=0)
        success = V.check_probability(success_threshold, "success_threshold")
        min_op = V.check_scalar(min_opacity, "min_opacity", low=0)
        interval = V.check_int(check_interval, "check_interval", low=1)
        gs, k = self.gs, self.gs.k
        grads = torch.nan_to_num(self.grad_accum / self.grad_denom, nan=0.0)
        offset_mask = self.grad_denom > interval * success * 0.5
        n_before = gs.n_anchors
        grown = self._grow(opt, grads, thr, offset_mask)
        pad = gs.n_anchors * k - self.grad_denom.numel()
        self.grad_denom[offset_mask] = 0
        self.grad_accum[offset_mask] = 0
        self.grad_denom = torch.cat([self.grad_denom, torch.zeros(pad, device=self.device)])
        self.grad_accum = torch.cat([self.grad_accum, torch.zeros(pad, device=self.device)])
        # prune anchors seen often enough whose mean opacity is too low
        prune = (self.opacity_accum < min_op * self.anchor_denom) & (
            self.anchor_denom > interval * success
        )
        checked = self.anchor_denom > interval * success
        self.opacity_accum[checked] = 0
        self.anchor_denom[checked] = 0
        if bool(prune.all()):
            prune[:] = False  # never prune the whole scene away
        keep = ~prune
        self.opacity_accum = self.opacity_accum[keep]
        self.anchor_denom = self.anchor_denom[keep]
        self.grad_accum = self.grad_accum.reshape(-1, k)[keep].reshape(-1)
        self.grad_denom = self.grad_denom.reshape(-1, k)[keep].reshape(-1)
        if bool(prune.any()):
            for mod, attr in self._per_anchor():
                self._resize(opt, mod, attr, None, keep=keep)
        record = dict(grown=grown, pruned=int(prune.sum()), anchors=gs.n_anchors, before=n_before)
        self.history.append(record)
        return record
