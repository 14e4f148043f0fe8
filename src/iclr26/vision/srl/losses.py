"""SRL's objectives and the SlotContrast objective they are added to.

Base (SlotContrast): feature reconstruction ``L_rec`` = MSE(F^, F) and the temporal slot
contrast ``L_sc`` (SupCon, tau 0.1): a slot at frame t and the same slot at t + 1 are
positives, every other slot of the batch is a negative, the same slot at non-adjacent frames
is ignored.

SRL adds, over groups of G consecutive frames (G * N patch tokens):
- decoder deblurring ``L_dec``: queries P1(F^) against keys sg(P1(F)); positives are the same
  patch, semi-positives the patches with the same *encoder* argmax slot (sharp assignments);
- encoder denoising ``L_enc``: u = P2(X) against itself (self-pairs masked); positives are the
  top-(k * G) patches under the frozen backbone similarity sg(F F^T), semi-positives the patches
  with the same *decoder* argmax slot (spatially consistent masks);
- each is 1/2 (L_pos + L_semi) with L = -(tau / tau_b) * mean over positives of log p_ij;
- the warm-up slot-redundancy regularizer ``L_reg``: greedily take the most similar slot pairs
  (last-frame slots), in each pair the slot whose attention over patches is flatter (lower
  KL to uniform), and push that slot's attention further to uniform.

Total: L_rec + 0.25 L_sc + 0.1 L_dec [t > 0.2 S] + 0.1 L_enc [t > 0.2 S] + 0.1 L_reg [t <= 0.1 S].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

__all__ = [
    "SRLLoss",
    "SlotContrastLoss",
    "decoder_deblur_loss",
    "encoder_denoise_loss",
    "redundant_slots",
    "slot_contrast_loss",
    "slot_redundancy_loss",
]


def _temperatures(temperature, base_temperature) -> tuple[float, float]:
    tau = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    tau_b = V.check_scalar(base_temperature, "base_temperature", low=0.0, low_open=True)
    return float(tau), float(tau_b)


def _masked_log_softmax(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """log p_ij = l_ij - log sum_{j allowed} exp l_ij (rows with nothing allowed give -inf)."""
    return logits - logits.masked_fill(~allowed, float("-inf")).logsumexp(-1, keepdim=True)


def _mean_over_positives(log_prob: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    pos = positives.to(log_prob.dtype)
    # zero where a pair is not positive, even where log_prob is -inf (masked pairs)
    total = torch.where(positives, log_prob, torch.zeros_like(log_prob)).sum(-1)
    return total / pos.sum(-1).clamp_min(1.0)


def slot_contrast_loss(
    slots: torch.Tensor, temperature: float = 0.1, base_temperature: float = 0.07
) -> torch.Tensor:
    """SlotContrast's temporal slot-slot contrast over ``slots`` (B, T, K, d), T >= 2."""
    V.check_tensor(slots, "slots", ndim=4, floating=True)
    if slots.shape[1] < 2:
        raise ValueError(f"slots must have at least 2 frames, got T = {slots.shape[1]}")
    tau, tau_b = _temperatures(temperature, base_temperature)
    b, t, k, d = slots.shape
    z = F.normalize(slots, dim=-1).permute(0, 2, 1, 3).reshape(b * k * t, d)
    track = torch.arange(b * k, device=z.device).repeat_interleave(t)
    frame = torch.arange(t, device=z.device).repeat(b * k)
    same = track[:, None] == track[None, :]
    adjacent = (frame[:, None] - frame[None, :]).abs() == 1
    positives = same & adjacent
    allowed = ~same | adjacent  # the same slot at other, non-adjacent frames is ignored
    log_prob = _masked_log_softmax(z @ z.T / tau, allowed)
    return -(tau / tau_b) * _mean_over_positives(log_prob, positives).mean()


def _grouped(x: torch.Tensor, group_frames: int, name: str) -> torch.Tensor:
    """(B, T, N, C) -> (B * T / G, G * N, C)."""
    b, t, n, c = x.shape
    if t % group_frames:
        raise ValueError(
            f"{name} has T = {t} frames, which group_frames = {group_frames} does not divide"
        )
    return x.reshape(b * t // group_frames, group_frames * n, c)


def _argmax_groups(masks: torch.Tensor, group_frames: int) -> torch.Tensor:
    """Hard slot ids (B * T / G, G * N) of masks (B, T, K, N)."""
    labels = masks.detach().argmax(2)  # (B, T, N)
    b, t, n = labels.shape
    return labels.reshape(b * t // group_frames, group_frames * n)


def _check_pair(
    a: torch.Tensor, b: torch.Tensor, masks: torch.Tensor, na: str, nb: str, nm: str
) -> None:
    V.check_tensor(a, na, ndim=4, floating=True)
    V.check_tensor(b, nb, ndim=4, floating=True)
    V.check_tensor(masks, nm, ndim=4, floating=True)
    if a.shape[:3] != b.shape[:3]:
        raise ValueError(f"{na} and {nb} must share (B, T, N), got {a.shape} and {b.shape}")
    if masks.shape[:2] != a.shape[:2] or masks.shape[3] != a.shape[2]:
        raise ValueError(
            f"{nm} must be (B, T, K, N) = ({a.shape[0]}, {a.shape[1]}, K, {a.shape[2]}), got "
            f"{tuple(masks.shape)}"
        )


def decoder_deblur_loss(
    proj_recon: torch.Tensor,
    proj_feats: torch.Tensor,
    enc_masks: torch.Tensor,
    group_frames: int = 4,
    temperature: float = 0.1,
    base_temperature: float = 0.07,
) -> torch.Tensor:
    """``L_dec``: the projected reconstruction (B, T, N, C) is contrasted against the
    stop-gradient projected backbone features (B, T, N, C); positives are the same patch,
    semi-positives every patch of the group with the same encoder argmax slot (``enc_masks``
    (B, T, K, N), detached)."""
    _check_pair(proj_recon, proj_feats, enc_masks, "proj_recon", "proj_feats", "enc_masks")
    if proj_recon.shape[-1] != proj_feats.shape[-1]:
        raise ValueError("proj_recon and proj_feats must have the same channel count")
    group_frames = V.check_int(group_frames, "group_frames", low=1)
    tau, tau_b = _temperatures(temperature, base_temperature)
    q = F.normalize(_grouped(proj_recon, group_frames, "proj_recon"), dim=-1)
    key = F.normalize(_grouped(proj_feats.detach(), group_frames, "proj_feats"), dim=-1)
    labels = _argmax_groups(enc_masks, group_frames)
    eye = torch.eye(labels.shape[1], dtype=torch.bool, device=labels.device)
    semi = (labels[:, :, None] == labels[:, None, :]) | eye
    log_prob = (q @ key.transpose(1, 2) / tau).log_softmax(-1)
    pos_loss = -(tau / tau_b) * log_prob.diagonal(dim1=1, dim2=2)
    semi_loss = -(tau / tau_b) * _mean_over_positives(log_prob, semi)
    return (pos_loss + semi_loss).mean() / 2


def encoder_denoise_loss(
    proj_x: torch.Tensor,
    feats: torch.Tensor,
    dec_masks: torch.Tensor,
    topk: int = 8,
    group_frames: int = 4,
    temperature: float = 0.1,
    base_temperature: float = 0.07,
) -> torch.Tensor:
    """``L_enc``: the projected encoder features u = P2(X) (B, T, N, C) are contrasted among
    themselves (self-pairs masked); positives are the top-(``topk`` * G) patches of the group
    under the frozen backbone similarity of ``feats`` (B, T, N, D), semi-positives the patches
    with the same decoder argmax slot (``dec_masks`` (B, T, K, N), detached)."""
    _check_pair(proj_x, feats, dec_masks, "proj_x", "feats", "dec_masks")
    group_frames = V.check_int(group_frames, "group_frames", low=1)
    topk = V.check_int(topk, "topk", low=1)
    n = proj_x.shape[2]
    if topk > n:
        raise ValueError(f"topk must be at most the number of patches per frame ({n}), got {topk}")
    tau, tau_b = _temperatures(temperature, base_temperature)
    u = F.normalize(_grouped(proj_x, group_frames, "proj_x"), dim=-1)
    f = F.normalize(_grouped(feats.detach(), group_frames, "feats"), dim=-1)
    sim = f @ f.transpose(1, 2)
    kth = sim.topk(topk * group_frames, dim=-1).values[..., -1:]
    eye = torch.eye(sim.shape[1], dtype=torch.bool, device=sim.device)
    positives = (sim >= kth) & ~eye
    labels = _argmax_groups(dec_masks, group_frames)
    semi = (labels[:, :, None] == labels[:, None, :]) & ~eye
    log_prob = _masked_log_softmax(u @ u.transpose(1, 2) / tau, ~eye)
    pos_loss = -(tau / tau_b) * _mean_over_positives(log_prob, positives)
    semi_loss = -(tau / tau_b) * _mean_over_positives(log_prob, semi)
    return (pos_loss + semi_loss).mean() / 2


def _kl_to_uniform(attn: torch.Tensor) -> torch.Tensor:
    """KL(a || U_N) = sum_n a log a + log N over the last axis."""
    return (attn * torch.log(attn + 1e-8)).sum(-1) + math.log(attn.shape[-1])


def _check_redundancy_inputs(attn_patches: torch.Tensor, slots: torch.Tensor) -> None:
    V.check_tensor(attn_patches, "attn_patches", ndim=4, floating=True, low=0.0)
    V.check_tensor(slots, "slots", ndim=4, floating=True)
    if slots.shape[:3] != attn_patches.shape[:3]:
        raise ValueError(
            f"slots and attn_patches must share (B, T, K), got {tuple(slots.shape)} and "
            f"{tuple(attn_patches.shape)}"
        )


def redundant_slots(attn_patches: torch.Tensor, slots: torch.Tensor, n_pairs: int) -> torch.Tensor:
    """The slots the regularizer flattens, (B, n_pairs) with -1 where no pair is left: the
    most cosine-similar pair of last-frame slots not yet chosen, then the next, ...; in each
    pair the slot with the lower mean KL to uniform. Only the chosen slot leaves the pool."""
    _check_redundancy_inputs(attn_patches, slots)
    n_pairs = V.check_int(n_pairs, "n_pairs", low=1)
    b, _, k, _ = attn_patches.shape
    z = F.normalize(slots[:, -1].detach(), dim=-1)
    sim = z @ z.transpose(1, 2)
    ii, jj = torch.triu_indices(k, k, offset=1, device=slots.device)
    pair_sim = sim[:, ii, jj]
    kl = _kl_to_uniform(attn_patches.detach()).mean(1)  # (B, K), mean over frames
    rows = torch.arange(b, device=slots.device)
    banned = torch.zeros(b, k, dtype=torch.bool, device=slots.device)
    chosen = torch.full((b, n_pairs), -1, dtype=torch.long, device=slots.device)
    for step in range(n_pairs):
        valid = ~banned[:, ii] & ~banned[:, jj]
        if not valid.any():
            break
        best = pair_sim.masked_fill(~valid, float("-inf")).argmax(1)
        i, j = ii[best], jj[best]
        pick = torch.where(kl[rows, i] <= kl[rows, j], i, j)
        has = valid.any(1)
        chosen[:, step] = torch.where(has, pick, torch.full_like(pick, -1))
        banned[rows[has], pick[has]] = True
    return chosen


def slot_redundancy_loss(
    attn_patches: torch.Tensor, slots: torch.Tensor, n_pairs: int = 5
) -> torch.Tensor:
    """``L_reg``: mean over frames and chosen slots of KL(a_k || U_N), where ``attn_patches``
    (B, T, K, N) is each slot's attention distribution over the patches and ``slots``
    (B, T, K, d) picks the redundant pairs (see :func:`redundant_slots`)."""
    _check_redundancy_inputs(attn_patches, slots)
    n_pairs = V.check_int(n_pairs, "n_pairs", low=1)
    b, t, k, n = attn_patches.shape
    chosen = redundant_slots(attn_patches, slots, n_pairs)
    valid = chosen >= 0
    index = chosen.clamp_min(0)[:, None, :, None].expand(b, t, n_pairs, n)
    kl = _kl_to_uniform(attn_patches.gather(2, index))  # (B, T, n_pairs)
    kl = torch.where(valid[:, None, :], kl, torch.zeros_like(kl))
    per_frame = kl.sum(-1) / valid.sum(-1, keepdim=True).clamp_min(1)
    return per_frame.mean()


class SlotContrastLoss(nn.Module):
    """The base objective: ``w_rec`` MSE(F^, F) + ``w_sc`` slot-slot contrast.

    ``forward(out, step=None, total_steps=None)`` takes the dict of
    :class:`~iclr26.vision.srl.SlotVideoModel` and returns ``(loss, parts)`` with the
    unweighted active parts as floats."""

    def __init__(
        self,
        w_rec: float = 1.0,
        w_sc: float = 0.25,
        tau: float = 0.1,
        tau_base: float = 0.07,
    ):
        super().__init__()
        self.w_rec = V.check_scalar(w_rec, "w_rec", low=0.0)
        self.w_sc = V.check_scalar(w_sc, "w_sc", low=0.0)
        self.tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        self.tau_base = V.check_scalar(tau_base, "tau_base", low=0.0, low_open=True)

    def _need(self, out, key: str) -> torch.Tensor:
        if not isinstance(out, dict):
            raise TypeError(f"out must be the model's output dict, got {type(out).__name__}")
        if key not in out:
            hint = " (build the model with srl_heads=True)" if key.startswith("proj_") else ""
            raise KeyError(f"out lacks {key!r}{hint}")
        return out[key]

    def active(self, step: int | None, total_steps: int | None) -> dict[str, bool]:
        return {"rec": self.w_rec > 0, "sc": self.w_sc > 0}

    def _check_step(self, step, total_steps) -> tuple[int | None, int | None]:
        if (step is None) != (total_steps is None):
            raise ValueError("step and total_steps must be given together")
        if step is None:
            return None, None
        total_steps = V.check_int(total_steps, "total_steps", low=1)
        step = V.check_int(step, "step", low=0, high=total_steps)
        return step, total_steps

    def terms(self, out, active: dict[str, bool]) -> dict[str, torch.Tensor]:
        parts = {}
        if active["rec"]:
            parts["rec"] = F.mse_loss(self._need(out, "recon"), self._need(out, "feats"))
        if active["sc"]:
            parts["sc"] = slot_contrast_loss(self._need(out, "slots"), self.tau, self.tau_base)
        return parts

    def weights(self) -> dict[str, float]:
        return {"rec": self.w_rec, "sc": self.w_sc}

    def forward(
        self, out: dict, step: int | None = None, total_steps: int | None = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        step, total_steps = self._check_step(step, total_steps)
        parts = self.terms(out, self.active(step, total_steps))
        if not parts:
            raise ValueError("no loss term is active (every weight is 0)")
        w = self.weights()
        loss = sum(w[name] * value for name, value in parts.items())
        return loss, {name: float(value.detach()) for name, value in parts.items()}


class SRLLoss(SlotContrastLoss):
    """SlotContrast plus SRL's deblurring (``w_dec``), denoising (``w_enc``) and warm-up
    redundancy (``w_reg``) terms on the paper's schedule: ``L_reg`` while
    step <= ``reg_until`` * total_steps, ``L_dec`` and ``L_enc`` once step > ``synergy_from``
    * total_steps. Without ``step``/``total_steps`` every weighted term is active."""

    def __init__(
        self,
        w_rec: float = 1.0,
        w_sc: float = 0.25,
        w_dec: float = 0.1,
        w_enc: float = 0.1,
        w_reg: float = 0.1,
        tau: float = 0.1,
        tau_base: float = 0.07,
        topk: int = 8,
        group_frames: int = 4,
        reg_pairs: int = 5,
        reg_until: float = 0.1,
        synergy_from: float = 0.2,
    ):
        super().__init__(w_rec, w_sc, tau, tau_base)
        self.w_dec = V.check_scalar(w_dec, "w_dec", low=0.0)
        self.w_enc = V.check_scalar(w_enc, "w_enc", low=0.0)
        self.w_reg = V.check_scalar(w_reg, "w_reg", low=0.0)
        self.topk = V.check_int(topk, "topk", low=1)
        self.group_frames = V.check_int(group_frames, "group_frames", low=1)
        self.reg_pairs = V.check_int(reg_pairs, "reg_pairs", low=1)
        self.reg_until = V.check_probability(reg_until, "reg_until")
        self.synergy_from = V.check_probability(synergy_from, "synergy_from")

    def weights(self) -> dict[str, float]:
        return {**super().weights(), "dec": self.w_dec, "enc": self.w_enc, "reg": self.w_reg}

    def active(self, step: int | None, total_steps: int | None) -> dict[str, bool]:
        on = super().active(step, total_steps)
        warm = synergy = True
        if step is not None:
            warm = step <= self.reg_until * total_steps
            synergy = step > self.synergy_from * total_steps
        on.update(dec=self.w_dec > 0 and synergy, enc=self.w_enc > 0 and synergy,
                  reg=self.w_reg > 0 and warm)  # fmt: skip
        return on

    def terms(self, out, active: dict[str, bool]) -> dict[str, torch.Tensor]:
        parts = super().terms(out, active)
        g, tau, tau_b = self.group_frames, self.tau, self.tau_base
        if active["dec"]:
            parts["dec"] = decoder_deblur_loss(
                self._need(out, "proj_recon"), self._need(out, "proj_feats"),
                self._need(out, "enc_masks"), g, tau, tau_b,
            )  # fmt: skip
        if active["enc"]:
            parts["enc"] = encoder_denoise_loss(
                self._need(out, "proj_x"), self._need(out, "feats"),
                self._need(out, "dec_masks"), self.topk, g, tau, tau_b,
            )  # fmt: skip
        if active["reg"]:
            parts["reg"] = slot_redundancy_loss(
                self._need(out, "enc_attn_patches"), self._need(out, "slots"), self.reg_pairs
            )
        return parts
