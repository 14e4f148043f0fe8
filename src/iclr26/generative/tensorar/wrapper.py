"""TensorAR around an AR image-token model: next-tensor prediction (each step predicts the
window of the next k tokens), training with discrete tensor noising of the input windows and
the slot-wise cross-entropy, and draft-refining generation with one body pass per position."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.generative.tensorar.model import (
    check_labels,
    check_sampling,
    check_tokens_labels,
    sample_logits,
    train_loop,
)
from iclr26.generative.tensorar.tensor import (
    DiscreteTensorNoiser,
    TensorInputEncoder,
    TensorOutputDecoder,
    build_windows,
)

DEFAULT_NOISER = DiscreteTensorNoiser()  # exponential schedule, uniform kernel (stateless)

BASE_PROTOCOL = (
    "embed", "body", "head", "get_input_embeddings", "vocab", "seq_len", "pad_id",
    "n_classes", "null_class", "d",
)  # fmt: skip


class TensorARWrapper(nn.Module):
    """Wrap ``base`` (anything with ``embed``, ``body``, ``head`` and the token embedding, e.g.
    :class:`TinyARImageModel`) for next-tensor prediction with window size ``k``.

    ``noiser=None`` trains without noising (the leakage ablation). ``slot_weights`` are the
    loss weights w_j (default 1 for every slot). With an ``absorbing`` noiser the wrapper owns
    the mask token: id ``mask_id = pad_id + 1`` (outside the base's embedding table) and a
    learnable embedding ``mask_emb`` (initialised to the mean codebook embedding) used for it
    in the draft slots; the base embedding is left untouched."""

    def __init__(
        self,
        base: nn.Module,
        k: int = 4,
        encoder: str = "query",
        noiser: DiscreteTensorNoiser | None = DEFAULT_NOISER,
        encoder_heads: int = 4,
        decoder_hidden: int | None = None,
        slot_weights=None,
        seed: int = 0,
    ):
        super().__init__()
        V.check_module_attrs(base, "base", BASE_PROTOCOL)
        self.k = V.check_int(k, "k", low=1)
        V.check_choice(encoder, "encoder", ("query", "linear"))
        if noiser is not None and not isinstance(noiser, DiscreteTensorNoiser):
            raise TypeError(
                f"noiser must be a DiscreteTensorNoiser or None, got {type(noiser).__name__}"
            )
        if slot_weights is None:
            w = torch.ones(self.k)
        else:
            w = torch.as_tensor(
                V.check_array(slot_weights, "slot_weights", ndim=1, shape=(self.k,), low=0.0)
            ).float()
            if w.sum() <= 0:
                raise ValueError("slot_weights must not all be zero")
        torch.manual_seed(V.check_int(seed, "seed", low=0))
        self.base = base
        self.noiser = noiser
        self.register_buffer("slot_weights", w)
        self.encoder = TensorInputEncoder(base.d, self.k, kind=encoder, heads=encoder_heads)
        self.decoder = TensorOutputDecoder(base.d, self.k, hidden=decoder_hidden)
        self.mask_id = None
        if noiser is not None and noiser.kernel == "absorbing":
            self.mask_id = base.pad_id + 1
            table = base.get_input_embeddings().weight.detach()
            self.mask_emb = nn.Parameter(table[: base.vocab].mean(0).clone())

    @property
    def added_parameters(self) -> int:
        return sum(p.numel() for p in self._added())

    def _added(self) -> list[nn.Parameter]:
        extra = [self.mask_emb] if self.mask_id is not None else []
        return list(self.encoder.parameters()) + list(self.decoder.parameters()) + extra

    def _embed_windows(self, labels, windows, start: int = 0):
        e0 = self.base.embed(labels, windows[..., 0], start=start)
        drafts = windows[..., 1:]
        table = self.base.get_input_embeddings()
        if self.mask_id is None:
            return self.encoder(e0, table(drafts))
        masked = drafts == self.mask_id
        emb = table(drafts.masked_fill(masked, self.base.pad_id))
        return self.encoder(e0, torch.where(masked[..., None], self.mask_emb, emb))

    def forward(self, labels, windows) -> torch.Tensor:
        """Slot logits ``(B, T, k, vocab)`` for input windows ``(B, T, k)`` (step t's window is
        ``[committed x_{t-1}, drafts of x_t..x_{t+k-2}]``)."""
        top = self.base.pad_id if self.mask_id is None else self.mask_id
        w = V.check_tensor(windows, "windows", ndim=3, integer=True, low=0, high=top)
        if w.shape[2] != self.k:
            raise ValueError(f"windows must have k={self.k} slots, got {w.shape[2]}")
        if self.mask_id is not None and bool((w[..., 0] == self.mask_id).any()):
            raise ValueError("windows slot 0 (the committed token) must not be the mask token")
        h, _ = self.base.body(self._embed_windows(labels, w))
        return self.decoder(h, self.base.head)

    def training_windows(self, tokens, generator=None):
        """Noised inputs and targets ``(B, T, k)``. The first step has no drafts at inference,
        so its draft slots are fully corrupted here too (uniform draws, or the mask token under
        the absorbing kernel)."""
        vocab, pad = self.base.vocab, self.base.pad_id
        inp, tgt = build_windows(tokens, self.k, pad)
        if self.noiser is not None:
            inp = self.noiser(inp, vocab, pad, generator, mask_id=self.mask_id)
        if self.k > 1:
            first = inp[:, 0, 1:]
            prior = self._prior(first.shape, generator, first.device)
            inp[:, 0, 1:] = torch.where(first == pad, first, prior)
        return inp, tgt

    def _prior(self, shape, generator, device) -> torch.Tensor:
        if self.noiser is None:
            return torch.randint(0, self.base.vocab, shape, generator=generator).to(device)
        return self.noiser.prior(shape, self.base.vocab, self.base.pad_id, generator,
                                 mask_id=self.mask_id, device=device)  # fmt: skip

    def loss(self, labels, tokens, generator=None) -> torch.Tensor:
        """Slot-weighted cross-entropy ``sum_j w_j CE_j / sum_j w_j``, PAD targets ignored."""
        inp, tgt = self.training_windows(tokens, generator)
        logits = self(labels, inp)
        ce = F.cross_entropy(
            logits.reshape(-1, self.base.vocab),
            tgt.reshape(-1),
            ignore_index=self.base.pad_id,
            reduction="none",
        ).view(tgt.shape)
        valid = (tgt != self.base.pad_id).float()
        per_slot = (ce * valid).sum((0, 1)) / valid.sum((0, 1)).clamp_min(1.0)
        return (self.slot_weights * per_slot).sum() / self.slot_weights.sum()

    def fit(
        self,
        tokens,
        labels,
        steps: int = 1000,
        lr: float = 1e-3,
        batch_size: int = 64,
        train_base: bool = True,
        class_dropout: float = 0.1,
        seed: int = 0,
    ) -> list[float]:
        """Train the encoder/decoder (and the base model unless ``train_base=False``)."""
        b = self.base
        x, y = check_tokens_labels(tokens, labels, b.vocab, b.seq_len, b.n_classes)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        V.check_bool(train_base, "train_base")
        class_dropout = V.check_probability(class_dropout, "class_dropout")
        seed = V.check_int(seed, "seed", low=0)
        params = self._added()
        if train_base:
            params += list(b.parameters())

        dev = b.pos_emb.device if hasattr(b, "pos_emb") else next(b.parameters()).device
        x, y = x.to(dev), y.to(dev)

        def loss_fn(idx, g):
            lab = y[idx].clone()
            lab[(torch.rand(len(idx), generator=g) < class_dropout).to(dev)] = b.null_class
            return self.loss(lab, x[idx], g)

        return train_loop(
            self, loss_fn, params, n=len(x), steps=steps, lr=lr, batch_size=batch_size, seed=seed
        )

    @torch.no_grad()
    def generate(
        self,
        labels,
        temperature: float = 1.0,
        top_k: int | None = None,
        cfg_scale: float = 1.0,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
        return_drafts: bool = False,
    ):
        """Sample ``(B, seq_len)`` tokens. Step t feeds ``[x̂_{t-1}, drafts t..t+k-2]``,
        samples all k slots, commits slot 0 as x̂_t and overwrites the drafts with slots
        1..k-1; one body pass per position. ``return_drafts=True`` also returns every step's
        k sampled slots, ``(seq_len, B, k)``. Under the absorbing kernel, the draft slots that
        training always masks (``beta = 1``) are fed as the mask token, the only input the
        model saw there."""
        b = self.base
        y = check_labels(labels, b.n_classes)
        temperature, top_k, cfg_scale = check_sampling(temperature, top_k, cfg_scale)
        V.check_bool(use_cache, "use_cache")
        V.check_bool(return_drafts, "return_drafts")
        self.eval()
        dev = next(b.parameters()).device
        y = y.to(dev)
        n, t_len, k, guided = len(y), b.seq_len, self.k, cfg_scale != 1.0
        lab = torch.cat([y, torch.full_like(y, b.null_class)]) if guided else y
        # buffer position p holds x̂_p (p = 1..T); 0 is the class slot, > T is PAD
        buf = torch.full((n, t_len + k), b.pad_id, dtype=torch.long, device=dev)
        if k > 1:  # no drafts exist before the first step: pure noise, as in training
            buf[:, 1 : t_len + 1] = self._prior((n, t_len), generator, dev)
        masked = None
        if self.mask_id is not None and bool(self.noiser.always_corrupted(k).any()):
            masked = self.noiser.always_corrupted(k).to(dev)
        cache, seen, drafts = None, [], []
        for s in range(t_len):
            win = buf[:, None, s : s + k]  # (B, 1, k)
            if masked is not None:
                win = torch.where(masked & (win != b.pad_id), self.mask_id, win)
            e = self._embed_windows(lab, torch.cat([win, win]) if guided else win, start=s)
            if use_cache:
                h, cache = b.body(e, cache)
            else:
                seen.append(e)
                h, _ = b.body(torch.cat(seen, 1))
            logits = self.decoder(h[:, -1:], b.head)[:, 0]  # (B', k, V)
            if guided:
                c, u = logits.chunk(2)
                logits = u + cfg_scale * (c - u)
            slots = sample_logits(logits, temperature, top_k, generator)
            end = min(s + 1 + k, t_len + 1)
            buf[:, s + 1 : end] = slots[:, : end - s - 1]
            if return_drafts:
                drafts.append(slots)
        out = buf[:, 1 : t_len + 1].clone()
        return (out, torch.stack(drafts)) if return_drafts else out
