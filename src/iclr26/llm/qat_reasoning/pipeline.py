"""The paper's two-stage QAT recipe for reasoning LLMs, end to end.

``ReasoningQAT.fit`` copies the full-precision reasoning model (the teacher), swaps its decoder
linears for :class:`QuantLinear` (RTN init), runs stage 1 (block-wise calibration on a
mixed-domain set, 80 % reasoning / 20 % pre-training text) and stage 2 (end-to-end
fine-tuning of weights, scales and zero points with the reward-rectification loss against the
frozen teacher; AdamW, cosine schedule). ``loss="S"`` (plain SFT) and ``loss="KD"`` (top-k KL
only) are the paper's ablations; ``stage1=False`` drops the calibration ("R" instead of "C+R").
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.calibrate import (
    CalibrationReport,
    blockwise_calibrate,
    model_device,
)
from iclr26.llm.qat_reasoning.loss import RewardRectificationLoss
from iclr26.llm.qat_reasoning.quant import QuantLinear, check_bits, quant_layers, quantize_model
from iclr26.llm.qat_reasoning.tasks import MixedDomainCalibration
from iclr26.llm.qat_reasoning.teacher import head_and_body, length_groups
from iclr26.models.tinylm import cosine_with_warmup

LOSSES = ("R", "S", "KD")


def encode_sft(tokenizer, pairs: Sequence[tuple[str, str]], max_len: int | None = None):
    """Token ids and labels of ``(prompt, response)`` pairs; labels are -100 on the prompt (only
    response tokens count) and the response ends with ``<eos>``."""
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError("sft_pairs must be a list of (prompt, response) string pairs")
    if not pairs:
        raise ValueError("sft_pairs is empty")
    rows = []
    eos = tokenizer.eos_token_id
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError("sft_pairs must be a list of (prompt, response) string pairs")
        prompt, response = pair
        if not (isinstance(prompt, str) and isinstance(response, str)):
            raise TypeError("sft_pairs must hold strings")
        p = tokenizer.encode(prompt, add_special_tokens=False)
        r = tokenizer.encode(response, add_special_tokens=False) + (
            [eos] if eos is not None else []
        )
        if not r:
            raise ValueError("sft_pairs: a response is empty")
        ids = p + r
        labels = [-100] * len(p) + r
        if max_len is not None:
            ids, labels = ids[:max_len], labels[:max_len]
        rows.append((ids, labels))
    return rows


def _collate(rows, pad_id: int):
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for r, (i, lab) in enumerate(rows):
        ids[r, : len(i)] = torch.tensor(i)
        labels[r, : len(lab)] = torch.tensor(lab)
        attn[r, : len(i)] = 1
    return ids, labels, attn


def label_logits(model_q: nn.Module, teacher: nn.Module | None, batch, pad_id: int):
    """Student logits (with grad) and teacher logits (without) at the positions of ``batch``
    whose next token carries a label, as ``(1, M, vocab)``, with those labels ``(1, M)`` (for a
    loss with ``shift_labels=False``); ``(None, None, None)`` when no label is left. Rows run in
    groups of similar length, right-padded without an attention mask (under the causal mask a
    real position never sees the padding after it), and the output layer runs only at the
    labelled positions: the per-token losses are those of the padded batch."""
    device = model_device(model_q)
    lengths = [len(ids) for ids, _ in batch]
    students, teachers, targets = [], [], []
    for group in length_groups(lengths):
        width = max(lengths[g] for g in group)
        ids = torch.full((len(group), width), pad_id, dtype=torch.long)
        r_idx, p_idx, tgt = [], [], []
        for r, g in enumerate(group):
            seq, lab = batch[g]
            ids[r, : len(seq)] = torch.tensor(seq)
            for t in range(1, len(lab)):
                if lab[t] != -100:
                    r_idx.append(r)
                    p_idx.append(t - 1)
                    tgt.append(lab[t])
        if not tgt:
            continue
        ids = ids.to(device)
        r_t, p_t = torch.tensor(r_idx, device=device), torch.tensor(p_idx, device=device)
        body, head = head_and_body(model_q)
        students.append(head(body(input_ids=ids, use_cache=False).last_hidden_state[r_t, p_t]))
        if teacher is not None:
            body_t, head_t = head_and_body(teacher)
            with torch.no_grad():
                h_t = body_t(input_ids=ids, use_cache=False).last_hidden_state
                teachers.append(head_t(h_t[r_t, p_t]))
        targets.append(torch.tensor(tgt, device=device))
    if not targets:
        return None, None, None
    student = torch.cat(students)[None]
    teacher_logits = torch.cat(teachers)[None] if teacher is not None else None
    return student, teacher_logits, torch.cat(targets)[None]


class ReasoningQAT:
    """Two-stage QAT of a reasoning causal LM to ``bits``-bit weights (W``bits``/A16).

    Defaults are the paper's: group 128, 80/20 calibration of 4096 x 2048 tokens for 2 epochs
    (lr 1e-4 for scales/zeros, 1e-5 for weights, 2e-5 at 2 bits), then stage 2 with
    ``alpha=0.2, beta=1.0, kl_topk=20``, batch 64, weight lr 1e-6 (``lr_quant`` defaults to
    ``lr_weight``). ``ft_steps`` fixes the number of stage-2 steps (otherwise ``ft_epochs``
    passes over the SFT pairs). Fitted attributes: ``calibration_report_``, ``history_``."""

    def __init__(
        self,
        bits: int = 2,
        group_size: int = 128,
        ratio_reasoning: float = 0.8,
        n_calib: int = 4096,
        calib_seq_len: int = 2048,
        calib_epochs: int = 2,
        calib_batch: int = 4,
        calib_lr_quant: float = 1e-4,
        calib_lr_weight: float | None = None,
        alpha: float = 0.2,
        beta: float = 1.0,
        kl_topk: int = 20,
        loss: str = "R",
        weight_source: str = "teacher",
        stage1: bool = True,
        ft_steps: int | None = None,
        ft_epochs: int = 1,
        ft_batch: int = 64,
        lr_weight: float = 1e-6,
        lr_quant: float | None = None,
        max_len: int | None = None,
        targets: Sequence[str] | None = None,
        seed: int = 0,
    ):
        self.bits = check_bits(bits)
        self.group_size = V.check_int(group_size, "group_size", low=1)
        self.ratio_reasoning = V.check_probability(ratio_reasoning, "ratio_reasoning")
        self.n_calib = V.check_int(n_calib, "n_calib", low=1)
        self.calib_seq_len = V.check_int(calib_seq_len, "calib_seq_len", low=2)
        self.calib_epochs = V.check_int(calib_epochs, "calib_epochs", low=0)
        self.calib_batch = V.check_int(calib_batch, "calib_batch", low=1)
        self.calib_lr_quant = V.check_scalar(calib_lr_quant, "calib_lr_quant", low=0.0)
        self.calib_lr_weight = V.check_scalar(
            calib_lr_weight, "calib_lr_weight", low=0.0, allow_none=True
        )
        self.loss = V.check_choice(loss, "loss", LOSSES)
        if self.loss == "S":
            alpha, beta, weight_source = 1.0, 0.0, "none"
        elif self.loss == "KD":
            alpha = 0.0
        self.criterion = RewardRectificationLoss(
            alpha=alpha, beta=beta, kl_topk=kl_topk, weight_source=weight_source
        )
        self.stage1 = V.check_bool(stage1, "stage1")
        self.ft_steps = V.check_int(ft_steps, "ft_steps", low=0, allow_none=True)
        self.ft_epochs = V.check_int(ft_epochs, "ft_epochs", low=0)
        self.ft_batch = V.check_int(ft_batch, "ft_batch", low=1)
        self.lr_weight = V.check_scalar(lr_weight, "lr_weight", low=0.0)
        lr_quant = self.lr_weight if lr_quant is None else lr_quant
        self.lr_quant = V.check_scalar(lr_quant, "lr_quant", low=0.0)
        self.max_len = V.check_int(max_len, "max_len", low=2, allow_none=True)
        if isinstance(targets, str):
            raise TypeError("targets must be a sequence of module names, not one string")
        self.targets = None if targets is None else list(targets)
        self.seed = V.check_int(seed, "seed", low=0)
        self.calibration_report_: CalibrationReport | None = None
        self.history_: dict[str, list[float]] = {}

    # ------------------------------------------------------------------ pieces

    def quantize(self, teacher: nn.Module) -> nn.Module:
        """A deep copy of ``teacher`` with RTN-initialised QuantLinear modules."""
        _check_teacher(teacher)
        return quantize_model(copy.deepcopy(teacher), self.bits, self.group_size, self.targets)

    def calibration_set(self, tokenizer, reasoning, pretrain) -> MixedDomainCalibration:
        return MixedDomainCalibration(
            reasoning,
            pretrain,
            self.ratio_reasoning,
            self.n_calib,
            self.calib_seq_len,
            tokenizer=tokenizer,
            seed=self.seed,
        )

    def calibrate(
        self, model_q: nn.Module, teacher: nn.Module, tokenizer, reasoning, pretrain, progress=None
    ) -> CalibrationReport:
        """Stage 1 on the mixed-domain calibration set (``model_q`` changes in place)."""
        calib = self.calibration_set(tokenizer, reasoning, pretrain)
        torch.manual_seed(self.seed)
        self.calibration_report_ = blockwise_calibrate(
            model_q,
            teacher,
            calib.input_ids,
            epochs=self.calib_epochs,
            lr_quant=self.calib_lr_quant,
            lr_weight=self.calib_lr_weight,
            batch_size=self.calib_batch,
            progress=progress,
        )
        return self.calibration_report_

    def finetune(
        self,
        model_q: nn.Module,
        teacher: nn.Module,
        sft_pairs: Sequence[tuple[str, str]],
        tokenizer,
        progress: Callable[[int, int, float], None] | None = None,
    ) -> dict[str, list[float]]:
        """Stage 2: end-to-end training of the QuantLinear weights, scales and zero points with
        the configured loss against the frozen ``teacher``. ``model_q`` changes in place and is
        restored if an error interrupts training. Returns the loss history."""
        layers = quant_layers(model_q)
        if not layers:
            raise ValueError("model_q has no QuantLinear modules; call quantize first")
        if self.criterion.needs_teacher:
            _check_teacher(teacher)
        rows = encode_sft(tokenizer, sft_pairs, self.max_len)
        if all(all(v == -100 for v in lab[1:]) for _, lab in rows):
            raise ValueError("sft_pairs: no response token survives max_len truncation")
        steps = self.ft_steps
        if steps is None:
            steps = self.ft_epochs * -(-len(rows) // self.ft_batch)
        saved = {k: v.detach().clone() for k, v in model_q.state_dict().items()}
        flags = {n: p.requires_grad for n, p in model_q.named_parameters()}
        was_training = model_q.training
        try:
            self.history_ = self._finetune(model_q, teacher, rows, tokenizer, steps, progress)
        except BaseException:
            model_q.load_state_dict(saved)
            raise
        finally:
            for n, p in model_q.named_parameters():
                p.requires_grad_(flags[n])
            model_q.train(was_training)
        model_q.eval()
        return self.history_

    def _finetune(self, model_q, teacher, rows, tokenizer, steps, progress):
        device = model_device(model_q)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        for p in model_q.parameters():
            p.requires_grad_(False)
        quant = [m for m in model_q.modules() if isinstance(m, QuantLinear)]
        weights = [m.weight for m in quant] + [m.bias for m in quant if m.bias is not None]
        qparams = [p for m in quant for p in m.quant_parameters()]
        groups = []
        if self.lr_weight > 0:
            groups.append({"params": weights, "lr": self.lr_weight})
        if self.lr_quant > 0:
            groups.append({"params": qparams, "lr": self.lr_quant})
        history = {"loss": [], "rectified_ce": [], "kl": []}
        if steps == 0 or not groups:
            return history
        for g in groups:
            for p in g["params"]:
                p.requires_grad_(True)
        opt = torch.optim.AdamW(groups, weight_decay=0.0)
        sched = cosine_with_warmup(opt, steps)
        rng = np.random.default_rng(self.seed)
        teacher_needed = self.criterion.needs_teacher
        if teacher_needed:
            teacher_training = teacher.training
            teacher.eval()
        model_q.train()
        torch.manual_seed(self.seed)
        # per-token loss on models whose logits are a linear map of the last hidden state:
        # the output layer runs at the labelled positions only, rows in groups of similar
        # length (the same loss and gradient as the padded batch, see label_logits)
        flat = self.criterion.granularity == "token" and head_and_body(model_q) is not None
        flat = flat and (not teacher_needed or head_and_body(teacher) is not None)
        criterion = self.criterion
        if flat:
            criterion = copy.copy(self.criterion)
            criterion.shift_labels = False
        try:
            for step in range(steps):
                pick = rng.integers(0, len(rows), size=self.ft_batch)
                batch = [rows[i] for i in pick]
                if flat:
                    student, teacher_logits, labels = label_logits(
                        model_q, teacher if teacher_needed else None, batch, pad
                    )
                    if student is None:
                        continue
                else:
                    ids, labels, attn = (t.to(device) for t in _collate(batch, pad))
                    if not bool((labels[:, 1:] != -100).any()):
                        continue
                    student = model_q(input_ids=ids, attention_mask=attn).logits
                    teacher_logits = None
                    if teacher_needed:
                        with torch.no_grad():
                            teacher_logits = teacher(input_ids=ids, attention_mask=attn).logits
                loss, terms = criterion(student, teacher_logits, labels, return_terms=True)
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"stage-2 loss became {float(loss)} at step {step}; lower lr_weight"
                    )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], 1.0)
                opt.step()
                sched.step()
                history["loss"].append(float(loss.detach()))
                history["rectified_ce"].append(float(terms["rectified_ce"]))
                history["kl"].append(float(terms["kl"]))
                if progress is not None:
                    progress(step + 1, steps, history["loss"][-1])
        finally:
            if teacher_needed:
                teacher.train(teacher_training)
        return history

    # ------------------------------------------------------------------ end to end

    def fit(
        self,
        teacher: nn.Module,
        tokenizer,
        reasoning_texts,
        pretrain_texts,
        sft_pairs: Sequence[tuple[str, str]] | None = None,
        progress: Callable[[str, float], None] | None = None,
    ) -> nn.Module:
        """Quantize a copy of ``teacher`` (left unchanged), calibrate it (stage 1, unless
        ``stage1=False``) and fine-tune it on ``sft_pairs`` (stage 2, when given); returns the
        quantized model in eval mode. ``fit_seconds_`` holds the wall time of the call (a plain
        timer for the user's information; no claim check reads it)."""
        started = time.perf_counter()
        model_q = self.quantize(teacher)
        if self.stage1:
            self.calibrate(
                model_q,
                teacher,
                tokenizer,
                reasoning_texts,
                pretrain_texts,
                progress=None if progress is None else lambda b, n, _: progress("stage1", b / n),
            )
        if sft_pairs is not None:
            self.finetune(
                model_q,
                teacher,
                sft_pairs,
                tokenizer,
                progress=None if progress is None else lambda s, n, _: progress("stage2", s / n),
            )
        self.fit_seconds_ = time.perf_counter() - started
        model_q.eval()
        return model_q


def _check_teacher(teacher) -> None:
    if not isinstance(teacher, nn.Module):
        raise TypeError(f"teacher must be a torch.nn.Module, got {type(teacher).__name__}")
    if quant_layers(teacher):
        raise ValueError("teacher must be the full-precision model, but it holds QuantLinear")
