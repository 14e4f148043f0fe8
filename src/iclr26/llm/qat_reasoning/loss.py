"""Stage 2 objective: the teacher-guided reward-rectification loss.

DFT (Wu et al. 2025) reads SFT as a policy gradient whose implicit reward is ``1 / p_S(y)`` and
rescales each token's cross-entropy by the model's own stop-gradient probability. The paper
replaces the student's (quantized, unreliable) probability by the full-precision teacher's:

    L_t  = mean_t [ -log p_S(y_t) * sg(p_T(y_t)) ]          (rectified CE)
    L_KD = mean_t KL(pi_T || pi_S) over the teacher's top-k tokens
    L    = alpha * L_t + beta * L_KD                         (alpha = 0.2, beta = 1.0)

Only response tokens (label != ignore_index) count. Logits are ``(batch, seq, vocab)`` and
labels ``(batch, seq)``; with ``shift_labels`` (the Hugging Face convention) position t's
logits predict label t + 1, so the module is a drop-in ``compute_loss`` body for a
``transformers.Trainer`` subclass that runs the teacher beside the student.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

WEIGHTS = ("teacher", "student", "none")
GRANULARITIES = ("token", "sequence")


class RewardRectificationLoss(nn.Module):
    """``alpha * rectified CE + beta * top-k KL(teacher || student)``.

    ``weight_source``: whose stop-gradient label probability weights the CE — ``"teacher"``
    (the paper), ``"student"`` (plain DFT) or ``"none"`` (plain CE, the "S" ablation with
    ``alpha=1, beta=0``). ``granularity="sequence"`` uses one weight per sequence, the
    length-normalised sequence probability ``exp(mean_t log p(y_t))``, instead of one per token.
    ``normalize_topk`` renormalises both distributions over the teacher's top-k set; otherwise
    the full-vocabulary probabilities at those indices are used."""

    def __init__(
        self,
        alpha: float = 0.2,
        beta: float = 1.0,
        kl_topk: int = 20,
        weight_source: str = "teacher",
        granularity: str = "token",
        normalize_topk: bool = True,
        ignore_index: int = -100,
        shift_labels: bool = True,
    ):
        super().__init__()
        self.alpha = V.check_scalar(alpha, "alpha", low=0.0)
        self.beta = V.check_scalar(beta, "beta", low=0.0)
        if self.alpha == 0 and self.beta == 0:
            raise ValueError("alpha and beta are both 0: the loss would be identically 0")
        self.kl_topk = V.check_int(kl_topk, "kl_topk", low=1)
        self.weight_source = V.check_choice(weight_source, "weight_source", WEIGHTS)
        self.granularity = V.check_choice(granularity, "granularity", GRANULARITIES)
        self.normalize_topk = V.check_bool(normalize_topk, "normalize_topk")
        self.ignore_index = V.check_int(ignore_index, "ignore_index")
        self.shift_labels = V.check_bool(shift_labels, "shift_labels")

    @property
    def needs_teacher(self) -> bool:
        return self.beta > 0 or (self.alpha > 0 and self.weight_source == "teacher")

    def _check(self, student_logits, teacher_logits, labels):
        V.check_tensor(student_logits, "student_logits", ndim=3, floating=True)
        if teacher_logits is None:
            if self.needs_teacher:
                raise ValueError("teacher_logits is required (beta > 0 or teacher weights)")
        else:
            V.check_tensor(
                teacher_logits, "teacher_logits", shape=tuple(student_logits.shape), floating=True
            )
        V.check_tensor(labels, "labels", shape=tuple(student_logits.shape[:2]), integer=True)
        vocab = student_logits.shape[-1]
        valid = labels != self.ignore_index
        if bool(((labels < 0) | (labels >= vocab))[valid].any()):
            raise ValueError(f"labels must be in [0, {vocab}) or ignore_index={self.ignore_index}")
        if self.kl_topk > vocab and self.beta > 0:
            raise ValueError(f"kl_topk={self.kl_topk} exceeds the vocabulary size {vocab}")

    def forward(
        self,
        student_logits: torch.Tensor,
        teacher_logits: torch.Tensor | None,
        labels: torch.Tensor,
        return_terms: bool = False,
    ):
        self._check(student_logits, teacher_logits, labels)
        if self.shift_labels:
            student_logits = student_logits[:, :-1]
            teacher_logits = None if teacher_logits is None else teacher_logits[:, :-1]
            labels = labels[:, 1:]
        mask = labels != self.ignore_index
        count = mask.sum()
        if int(count) == 0:
            raise ValueError("labels: every token is ignore_index; nothing to learn from")
        target = labels.clamp(min=0)
        logp_s = torch.log_softmax(student_logits.float(), dim=-1)
        token_logp_s = logp_s.gather(-1, target[..., None]).squeeze(-1)
        zero = student_logits.new_zeros((), dtype=torch.float32)
        ce = kl = zero
        if self.alpha > 0:
            weight = self._weights(token_logp_s, teacher_logits, target, mask)
            ce = -(token_logp_s * weight * mask).sum() / count
        if self.beta > 0:
            kl = self._topk_kl(logp_s, teacher_logits.float(), mask, count)
        total = self.alpha * ce + self.beta * kl
        if return_terms:
            return total, {"rectified_ce": ce.detach(), "kl": kl.detach()}
        return total

    def _weights(self, token_logp_s, teacher_logits, target, mask) -> torch.Tensor:
        if self.weight_source == "none":
            return torch.ones_like(token_logp_s)
        if self.weight_source == "student":
            token_logp = token_logp_s.detach()
        else:
            with torch.no_grad():
                logp_t = torch.log_softmax(teacher_logits.detach().float(), dim=-1)
                token_logp = logp_t.gather(-1, target[..., None]).squeeze(-1)
        if self.granularity == "sequence":
            per_seq = (token_logp * mask).sum(1) / mask.sum(1).clamp(min=1)
            token_logp = per_seq[:, None].expand_as(token_logp)
        return token_logp.exp().detach()

    def _topk_kl(self, logp_s, teacher_logits, mask, count) -> torch.Tensor:
        teacher_logits = teacher_logits.detach()
        top_t, index = teacher_logits.topk(self.kl_topk, dim=-1)
        if self.normalize_topk:
            logp_t = torch.log_softmax(top_t, dim=-1)
            logq = torch.log_softmax(logp_s.gather(-1, index), dim=-1)
        else:
            logp_t = torch.log_softmax(teacher_logits, dim=-1).gather(-1, index)
            logq = logp_s.gather(-1, index)
        per_token = (logp_t.exp() * (logp_t - logq)).sum(-1)
        return (per_token * mask).sum() / count

    def extra_repr(self) -> str:
        return (
            f"alpha={self.alpha}, beta={self.beta}, kl_topk={self.kl_topk}, "
            f"weight_source={self.weight_source!r}, granularity={self.granularity!r}"
        )
