"""TensorAR around an AR image-token model: next-tensor prediction (each step predicts the
window of the next k tokens), training with discrete tensor noising of the input windows and
the slot-wise cross-entropy, and draft-refining generation with one body pass per position."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.generative.tensorar.model import (
    check_generator,
    check_labels,
    check_sampling,
    check_tokens_labels,
    sample_logits,
    train_loop,
)
from iclr26.generative.tensorar.pretrained import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    HFCausalLMBase,
    check_device,
    check_dtype,
    check_source,
    check_state_dict,
    load_hf,
    load_llamagen,
    load_saved_base,
    native_prefix,
    save_base,
)
from iclr26.generative.tensorar.tensor import (
    DiscreteTensorNoiser,
    TensorInputEncoder,
    TensorOutputDecoder,
    build_windows,
)

DECODERS = ("mlp", "linear")  # the output decoder's residual maps U_j (R)
FIRST_STEP = ("noise", "pad")  # what the first step's draft slots hold (R)
DRAFT_SAMPLING = ("sample", "greedy")  # how the draft slots are drawn at inference (R)
DEFAULT_NOISER = DiscreteTensorNoiser()  # exponential schedule, uniform kernel (stateless)

BASE_PROTOCOL = (
    "embed", "body", "head", "get_input_embeddings", "vocab", "seq_len", "pad_id",
    "n_classes", "null_class", "d",
)  # fmt: skip


class TensorARWrapper(nn.Module):
    """Wrap ``base`` (anything with ``embed``, ``body``, ``head`` and the token embedding, e.g.
    :class:`TinyARImageModel`) for next-tensor prediction with window size ``k``.

    ``noiser=None`` trains without noising (the leakage ablation). ``slot_weights`` are the
    loss weights w_j (default 1 for every slot). ``decoder`` is the output decoder's residual
    map (``"mlp"`` or ``"linear"``, see :class:`TensorOutputDecoder`); ``first_step`` what the
    first step's draft slots hold, in training and generation alike (``"noise"``: prior draws;
    ``"pad"``: PAD); ``draft_sampling`` how generation draws the draft slots (``"sample"``:
    each slot from its own logits; ``"greedy"``: their argmax). These three are
    reconstructions the sources leave open. With an ``absorbing`` noiser the wrapper owns
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
        decoder: str = "mlp",
        first_step: str = "noise",
        draft_sampling: str = "sample",
        seed: int = 0,
    ):
        super().__init__()
        V.check_module_attrs(base, "base", BASE_PROTOCOL)
        self.k = V.check_int(k, "k", low=1)
        V.check_choice(encoder, "encoder", ("query", "linear"))
        V.check_choice(decoder, "decoder", DECODERS)
        self.first_step = V.check_choice(first_step, "first_step", FIRST_STEP)
        self.draft_sampling = V.check_choice(draft_sampling, "draft_sampling", DRAFT_SAMPLING)
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
        self.options = {
            "k": self.k,
            "encoder": encoder,
            "encoder_heads": encoder_heads,
            "decoder_hidden": decoder_hidden,
            "decoder": decoder,
            "first_step": self.first_step,
            "draft_sampling": self.draft_sampling,
        }
        self.load_report = None  # set by from_pretrained: the key checks of what was loaded
        self.register_buffer("slot_weights", w)
        self.encoder = TensorInputEncoder(base.d, self.k, kind=encoder, heads=encoder_heads)
        self.decoder = TensorOutputDecoder(base.d, self.k, hidden=decoder_hidden, kind=decoder)
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
        if hasattr(self.base, "extra_parameters"):  # e.g. a pretrained base's PAD vector
            extra += list(self.base.extra_parameters())
        return list(self.encoder.parameters()) + list(self.decoder.parameters()) + extra

    def parameter_counts(self) -> dict:
        """``{"base", "added", "added_fraction", "added_names"}``: parameters of the base model
        and those TensorAR adds to it (encoder, decoder, mask / PAD embeddings)."""
        added = {id(p) for p in self._added()}
        names = [n for n, p in self.named_parameters() if id(p) in added]
        n_added = sum(p.numel() for p in self._added())
        n_base = sum(p.numel() for p in self.base.parameters() if id(p) not in added)
        return {
            "base": n_base,
            "added": n_added,
            "added_fraction": n_added / max(n_base, 1),
            "added_names": names,
        }

    def _added_keys(self) -> list[str]:
        """State-dict keys outside the base's own (natively saved) weights."""
        own = "base." + native_prefix(self.base)
        return [k for k in self.state_dict() if not k.startswith(own)]

    def save_pretrained(self, folder) -> Path:
        """Write the wrapped model to ``folder``: ``tensorar_config.json`` (k, encoder,
        noiser, slot weights, how to rebuild the base), ``tensorar_weights.pt`` (what TensorAR
        adds) and ``base/`` in the base's own format (Hugging Face ``save_pretrained``, a
        LlamaGen ``{"model": state_dict}`` checkpoint with its config, or a
        ``TinyARImageModel`` state dict). :meth:`from_pretrained` reads it back."""
        if not isinstance(folder, str | Path):
            raise TypeError(f"folder must be a path, got {type(folder).__name__}")
        folder = Path(folder).expanduser()
        if folder.exists() and not folder.is_dir():
            raise FileExistsError(f"folder={str(folder)!r} exists and is not a folder")
        desc = save_base(self.base, folder / "base")
        nz = self.noiser
        meta = {
            "format": "tensorar",
            "version": 1,
            **self.options,
            "base": desc,
            "noiser": None
            if nz is None
            else {
                "schedule": nz.schedule,
                "kernel": nz.kernel,
                "tau_max": nz.tau_max,
                "lam": nz.lam,
                "level": nz.level,
            },
            "slot_weights": self.slot_weights.tolist(),
        }
        state = self.state_dict()
        torch.save({k: state[k] for k in self._added_keys()}, folder / WEIGHTS_FILE)
        (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=1))
        return folder

    @classmethod
    def from_pretrained(
        cls,
        source,
        k: int | None = None,
        *,
        format: str = "auto",
        config=None,
        seq_len: int | None = None,
        vocab: int | None = None,
        token_offset: int = 0,
        class_token_ids=None,
        strict: bool = True,
        weights_only: bool = True,
        dtype=None,
        device=None,
        encoder: str = "query",
        noiser: DiscreteTensorNoiser | None = DEFAULT_NOISER,
        encoder_heads: int = 4,
        decoder_hidden: int | None = None,
        slot_weights=None,
        decoder: str = "mlp",
        first_step: str = "noise",
        draft_sampling: str = "sample",
        seed: int = 0,
        **hf_kwargs,
    ) -> TensorARWrapper:
        """Wrap a pretrained AR image-token model with zero-initialised TensorAR parts (k=4 by
        default), or load a wrapped model written by :meth:`save_pretrained`.

        ``source`` (``format="auto"`` tells them apart):
        - a Hugging Face causal LM: a local folder with ``config.json`` or a hub id, loaded
          with ``AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **hf_kwargs)``;
          ``seq_len`` (image tokens per sample) is required, and ``vocab``,
          ``token_offset``, ``class_token_ids`` place the codebook and the condition in the
          LM's vocabulary (see :class:`HFCausalLMBase`);
        - a LlamaGen ``c2i`` checkpoint: a ``.pt`` / ``.pth`` / ``.bin`` / ``.safetensors``
          file with the state dict (plain or under ``"model"`` / ``"module"`` /
          ``"state_dict"``) and ``config`` (a :class:`LlamaGenConfig`, a dict or a JSON file
          of its fields; a folder with ``llamagen_config.json`` beside the checkpoint needs
          none). ``weights_only=False`` unpickles checkpoints that also store other objects;
        - a folder written by :meth:`save_pretrained` (``k``, if given, must match it; the
          other wrapper options are read from it).

        Keys are matched strictly: missing, unexpected or wrongly shaped parameters raise
        :class:`CheckpointMismatchError` naming them (``strict=False`` loads the rest and
        records them in ``load_report``). ``dtype`` (a floating torch dtype or its name;
        ``"auto"`` for a Hugging Face checkpoint's own) applies to the base and the added
        parts; ``device`` moves the loaded model. The added parameters are reported by
        :meth:`parameter_counts`."""
        k_given = None if k is None else V.check_int(k, "k", low=1)
        V.check_bool(strict, "strict")
        V.check_bool(weights_only, "weights_only")
        dtype = check_dtype(dtype)
        device = None if device is None else check_device(device)
        V.check_choice(encoder, "encoder", ("query", "linear"))  # before any weights are read
        V.check_choice(decoder, "decoder", DECODERS)
        V.check_choice(first_step, "first_step", FIRST_STEP)
        V.check_choice(draft_sampling, "draft_sampling", DRAFT_SAMPLING)
        fmt = check_source(source, format)
        hf_only = {
            "seq_len": seq_len,
            "vocab": vocab,
            "class_token_ids": class_token_ids,
            "token_offset": token_offset or None,
        }
        if fmt != "hf":
            given = [name for name, value in hf_only.items() if value is not None]
            if given:
                raise ValueError(
                    f"{', '.join(given)} only apply to a Hugging Face model; a {fmt} source "
                    "sets them itself"
                )
        if fmt != "llamagen" and config is not None:
            raise ValueError("config only applies to a LlamaGen checkpoint")
        if fmt == "tensorar":
            chosen = {
                "encoder": encoder != "query",
                "noiser": noiser is not DEFAULT_NOISER,
                "encoder_heads": encoder_heads != 4,
                "decoder_hidden": decoder_hidden is not None,
                "slot_weights": slot_weights is not None,
                "decoder": decoder != "mlp",
                "first_step": first_step != "noise",
                "draft_sampling": draft_sampling != "sample",
                "seed": seed != 0,
            }
            if any(chosen.values()):
                raise ValueError(
                    f"{', '.join(n for n, c in chosen.items() if c)}: a saved TensorAR model "
                    "keeps its own options; build a new wrapper around its base to change them"
                )
            tar = cls._load_saved(Path(source).expanduser(), k_given, strict, dtype, hf_kwargs)
        else:
            if fmt == "hf":
                if seq_len is None:
                    raise ValueError(
                        "seq_len (image tokens per sample) is required for a Hugging Face model"
                    )
                V.check_int(seq_len, "seq_len", low=1)
                model, report = load_hf(str(source), strict, dtype, **hf_kwargs)
                base = HFCausalLMBase(model, seq_len, vocab, token_offset, class_token_ids)
            else:
                if hf_kwargs:
                    raise TypeError(
                        f"unexpected arguments for a LlamaGen checkpoint: "
                        f"{', '.join(sorted(hf_kwargs))}"
                    )
                base, report = load_llamagen(
                    Path(source).expanduser(), config, strict, weights_only
                )
                if dtype not in (None, "auto"):
                    base.to(dtype)
            tar = cls(
                base,
                k=4 if k_given is None else k_given,
                encoder=encoder,
                noiser=noiser,
                encoder_heads=encoder_heads,
                decoder_hidden=decoder_hidden,
                slot_weights=slot_weights,
                decoder=decoder,
                first_step=first_step,
                draft_sampling=draft_sampling,
                seed=seed,
            )
            tar._match_base_dtype()
            tar.load_report = {"base": report}
        if device is not None:
            tar.to(device)
        return tar.eval()

    def _match_base_dtype(self) -> None:
        """Put the added parts on the device and in the float dtype of the base weights."""
        ref = next(p for p in self.base.parameters() if p.is_floating_point())
        self.encoder.to(ref.device, ref.dtype)
        self.decoder.to(ref.device, ref.dtype)
        self.slot_weights = self.slot_weights.to(ref.device)
        if self.mask_id is not None:
            self.mask_emb.data = self.mask_emb.data.to(ref.device, ref.dtype)

    @classmethod
    def _load_saved(cls, folder: Path, k, strict, dtype, hf_kwargs) -> TensorARWrapper:
        meta = json.loads((folder / CONFIG_FILE).read_text())
        if meta.get("format") != "tensorar":
            raise ValueError(f"source={str(folder)!r}: {CONFIG_FILE} is not a TensorAR config")
        if k is not None and k != meta["k"]:
            raise ValueError(f"k={k} differs from the saved model's k={meta['k']}")
        base, base_report = load_saved_base(
            folder / "base", meta["base"], strict, dtype, **hf_kwargs
        )
        nz = meta["noiser"]
        tar = cls(
            base,
            k=meta["k"],
            encoder=meta["encoder"],
            noiser=None if nz is None else DiscreteTensorNoiser(**nz),
            encoder_heads=meta["encoder_heads"],
            decoder_hidden=meta["decoder_hidden"],
            slot_weights=meta["slot_weights"],
            decoder=meta.get("decoder", "mlp"),  # configs saved before these options
            first_step=meta.get("first_step", "noise"),
            draft_sampling=meta.get("draft_sampling", "sample"),
        )
        tar._match_base_dtype()
        added = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        report = check_state_dict(tar, added, WEIGHTS_FILE, strict, keys=set(tar._added_keys()))
        tar.load_report = {"base": base_report, "added": report}
        return tar

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
        so its draft slots are fully corrupted here too (``first_step="noise"``: uniform draws,
        or the mask token under the absorbing kernel; ``"pad"``: the PAD token, as past the
        end)."""
        vocab, pad = self.base.vocab, self.base.pad_id
        inp, tgt = build_windows(tokens, self.k, pad)
        if self.noiser is not None:
            inp = self.noiser(inp, vocab, pad, generator, mask_id=self.mask_id)
        if self.k > 1:
            first = inp[:, 0, 1:]
            if self.first_step == "pad":
                prior = torch.full_like(first, pad)
            else:
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
        if train_base:  # the base's own parameters (a pretrained base's PAD vector is added)
            added = {id(p) for p in params}
            params += [p for p in b.parameters() if id(p) not in added]

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
        1..k-1; one body pass per position (``draft_sampling="greedy"``: the draft slots 1..k-1
        take their argmax, slot 0 is still sampled). ``return_drafts=True`` also returns every
        step's k slots, ``(seq_len, B, k)``. Under the absorbing kernel, the draft slots that
        training always masks (``beta = 1``) are fed as the mask token, the only input the
        model saw there."""
        b = self.base
        y = check_labels(labels, b.n_classes)
        temperature, top_k, cfg_scale = check_sampling(temperature, top_k, cfg_scale)
        V.check_bool(use_cache, "use_cache")
        V.check_bool(return_drafts, "return_drafts")
        check_generator(generator)
        self.eval()
        dev = next(b.parameters()).device
        y = y.to(dev)
        n, t_len, k, guided = len(y), b.seq_len, self.k, cfg_scale != 1.0
        lab = torch.cat([y, torch.full_like(y, b.null_class)]) if guided else y
        # buffer position p holds x̂_p (p = 1..T); 0 is the class slot, > T is PAD
        buf = torch.full((n, t_len + k), b.pad_id, dtype=torch.long, device=dev)
        if k > 1 and self.first_step == "noise":  # no drafts yet: pure noise, as in training
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
            if self.draft_sampling == "greedy" and k > 1:  # drafts: argmax, commit: sampled
                slots[:, 1:] = logits[:, 1:].argmax(-1)
            end = min(s + 1 + k, t_len + 1)
            buf[:, s + 1 : end] = slots[:, : end - s - 1]
            if return_drafts:
                drafts.append(slots)
        out = buf[:, 1 : t_len + 1].clone()
        return (out, torch.stack(drafts)) if return_drafts else out
