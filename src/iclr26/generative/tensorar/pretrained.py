"""Pretrained AR image-token models as TensorAR bases: a Hugging Face causal LM (through
``transformers.AutoModelForCausalLM``) or a LlamaGen class-conditional checkpoint, each
behind the piece-wise interface the wrapper uses (``embed`` / ``body`` / ``head``), plus the
loading (strict key matching) and the saving of a wrapped model.

Both adapters keep the pretrained network untouched under ``net`` and add one learnable PAD
vector (zero at init): the windows of the last k-1 steps reach past the image and hold PAD,
which a pretrained embedding table has no row for. It is counted with the wrapper's added
parameters."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.generative.tensorar.llamagen import LlamaGenConfig, LlamaGenGPT

CONFIG_FILE = "tensorar_config.json"
WEIGHTS_FILE = "tensorar_weights.pt"
LLAMAGEN_CONFIG_FILE = "llamagen_config.json"
LLAMAGEN_WEIGHTS_FILE = "llamagen.pt"
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".safetensors")
FORMATS = ("auto", "hf", "llamagen", "tensorar")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


class CheckpointMismatchError(ValueError):
    """A checkpoint whose parameter names or shapes do not match the model built for it."""


class _LocalTable:
    """Embedding of local ids: ``0..vocab-1`` -> rows ``offset..offset+vocab-1`` of a pretrained
    table, ``vocab`` (PAD) -> the adapter's PAD vector. ``weight`` is ``(vocab + 1, d)``."""

    def __init__(self, table: nn.Embedding, offset: int, vocab: int, pad: nn.Parameter):
        self.table, self.offset, self.vocab, self.pad = table, offset, vocab, pad

    @property
    def weight(self) -> torch.Tensor:
        rows = self.table.weight[self.offset : self.offset + self.vocab]
        return torch.cat([rows, self.pad[None].to(rows.dtype)])

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        is_pad = ids == self.vocab
        e = self.table(torch.where(is_pad, 0, ids) + self.offset)
        return torch.where(is_pad[..., None], self.pad.to(e.dtype), e)


class _PretrainedBase(nn.Module):
    """Common part of the adapters: ``net`` (the pretrained network), the PAD vector, the
    class embedding at position 0 and the token embedding elsewhere."""

    native_prefix = "net."
    kind = ""

    def _setup(self, net, vocab, seq_len, n_classes, d, offset=0):
        self.net = net
        self.vocab, self.seq_len, self.n_classes, self.d = vocab, seq_len, n_classes, d
        self.pad_id, self.null_class = vocab, n_classes
        self._offset = offset
        param = next(net.parameters())
        self.pad_emb = nn.Parameter(torch.zeros(d, dtype=param.dtype, device=param.device))

    def extra_parameters(self) -> list[nn.Parameter]:
        """Parameters the adapter adds to the pretrained network (the PAD vector)."""
        return [self.pad_emb]

    def input_table(self) -> nn.Embedding:
        """The pretrained network's own token embedding."""
        raise NotImplementedError(f"{type(self).__name__} does not define input_table")

    def get_input_embeddings(self) -> _LocalTable:
        return _LocalTable(self.input_table(), self._offset, self.vocab, self.pad_emb)

    def class_embedding(self, labels) -> torch.Tensor:
        """The condition embedding of ``labels`` at position 0."""
        raise NotImplementedError(f"{type(self).__name__} does not define class_embedding")

    def embed(self, labels, inputs, start: int = 0):
        """Inputs for positions ``start..start+L-1``: the class (condition) embedding at
        position 0, the token embedding of ``inputs`` (B, L) elsewhere."""
        pos = torch.arange(start, start + inputs.shape[1], device=inputs.device)
        e = self.get_input_embeddings()(inputs)
        return torch.where((pos == 0)[None, :, None], self.class_embedding(labels)[:, None], e)

    def shifted_inputs(self, tokens):
        pad = torch.full_like(tokens[:, :1], self.pad_id)
        return torch.cat([pad, tokens[:, :-1]], 1)

    def forward(self, labels, tokens):
        """Next-token logits ``(B, T, vocab)`` through the adapter (teacher forcing)."""
        h, _ = self.body(self.embed(labels, self.shifted_inputs(tokens)))
        return self.head(h)


class LlamaGenBase(_PretrainedBase):
    """A :class:`LlamaGenGPT` as a TensorAR base: class ``c`` at position 0 (the null class
    ``num_classes`` for CFG), image tokens ``0..vocab_size-1`` after it."""

    kind = "llamagen"

    def __init__(self, net: LlamaGenGPT):
        super().__init__()
        if not isinstance(net, LlamaGenGPT):
            raise TypeError(f"net must be a LlamaGenGPT, got {type(net).__name__}")
        cfg = net.config
        self._setup(net, cfg.vocab_size, cfg.block_size, cfg.num_classes, cfg.dim)

    def input_table(self):
        return self.net.tok_embeddings

    def class_embedding(self, labels):
        return self.net.cls_embedding.embedding_table(labels)

    def body(self, h, cache=None):
        return self.net.body(h, cache)

    def head(self, h):
        return self.net.head(h)

    def describe(self) -> dict:
        return {"kind": self.kind, "config": self.net.config.to_dict()}


class HFCausalLMBase(_PretrainedBase):
    """A Hugging Face causal LM as a TensorAR base. Image token ``i`` (``0 <= i < vocab``) is
    LM token ``token_offset + i``; class ``c`` starts the sequence with LM token
    ``class_token_ids[c]``, and the last entry of ``class_token_ids`` is the null
    (unconditional) one used for classifier-free guidance. By default the whole LM vocabulary
    is the image codebook and the model is unconditional: ``class_token_ids = [bos, bos]``
    (one class, label 0). The transformer body is ``model.get_decoder()`` (its output is the
    final-normed hidden state) and the head is ``model.get_output_embeddings()``."""

    kind = "hf"

    def __init__(
        self,
        model: nn.Module,
        seq_len: int,
        vocab: int | None = None,
        token_offset: int = 0,
        class_token_ids=None,
        check_head: bool = True,
    ):
        super().__init__()
        V.check_module_attrs(
            model,
            "model",
            ("get_input_embeddings", "get_output_embeddings", "get_decoder", "config"),
        )
        table, lm_head = model.get_input_embeddings(), model.get_output_embeddings()
        if lm_head is None:
            raise TypeError("model must have an LM head (get_output_embeddings() is None)")
        n_in, n_out = table.num_embeddings, lm_head.weight.shape[0]
        token_offset = V.check_int(token_offset, "token_offset", low=0, high=n_in - 1)
        vocab = V.check_int(
            n_in - token_offset if vocab is None else vocab,
            "vocab",
            low=2,
            high=min(n_in, n_out) - token_offset,
        )
        seq_len = V.check_int(seq_len, "seq_len", low=1)
        cfg = model.config
        max_pos = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
        if max_pos is not None and seq_len > max_pos:
            raise ValueError(f"seq_len={seq_len} exceeds the model's {max_pos} positions")
        if class_token_ids is None:
            bos = getattr(cfg, "bos_token_id", None)
            if bos is None:
                raise ValueError(
                    "class_token_ids is required: the model config has no bos_token_id"
                )
            class_token_ids = [bos, bos]
        ids = V.check_array(class_token_ids, "class_token_ids", ndim=1, low=0, high=n_in - 1)
        if len(ids) < 2 or not all(float(i).is_integer() for i in ids):
            raise ValueError(
                "class_token_ids must hold >= 2 integer token ids (classes, then null)"
            )
        self.token_offset = token_offset
        self._setup(model, vocab, seq_len, len(ids) - 1, table.embedding_dim, token_offset)
        dev = next(model.parameters()).device
        ids = torch.as_tensor(ids.astype("int64"), device=dev)
        self.register_buffer("class_token_ids", ids, persistent=False)
        if check_head:
            self._check_plain_head()

    def input_table(self):
        return self.net.get_input_embeddings()

    def class_embedding(self, labels):
        return self.input_table()(self.class_token_ids[labels])

    def body(self, h, cache=None):
        """``model.get_decoder()`` on ``inputs_embeds``; a KV cache is kept when one is passed
        or gradients are off (generation)."""
        from iclr26.models import hf_compat

        decoder = self.net.get_decoder()
        use_cache = cache is not None or not torch.is_grad_enabled()
        kwargs = {hf_compat.cache_kwarg(decoder): cache} if use_cache else {}
        out = decoder(inputs_embeds=h, use_cache=use_cache, **kwargs)
        new = getattr(out, "cache", None)
        if new is None:
            new = getattr(out, "past_key_values", None)
        return out.last_hidden_state, new

    def head(self, h):
        logits = self.net.get_output_embeddings()(h)
        if self.token_offset or self.vocab != logits.shape[-1]:
            logits = logits[..., self.token_offset : self.token_offset + self.vocab]
        return logits

    @torch.no_grad()
    def _check_plain_head(self):
        """The residual decoder needs logits = LM head of the decoder's last hidden state; a
        model that changes them afterwards (soft-capping, scaling) is refused."""
        was = self.training
        self.eval()
        probe = torch.tensor(
            [[int(self.class_token_ids[0]), self.token_offset, self.token_offset + self.vocab - 1]],
            device=self.class_token_ids.device,
        )
        ref = self.net(input_ids=probe).logits
        h, _ = self.body(self.input_table()(probe))
        got = self.net.get_output_embeddings()(h)
        self.train(was)
        scale = float(ref.abs().max()) + 1e-6
        if ref.shape != got.shape or not torch.allclose(
            got.float(), ref.float(), rtol=1e-4, atol=1e-5 * scale
        ):
            raise ValueError(
                "model: its logits are not get_output_embeddings() of get_decoder()'s last "
                "hidden state (e.g. logit soft-capping or scaling); TensorAR's residual output "
                "decoder needs a plain LM head"
            )

    def describe(self) -> dict:
        return {
            "kind": self.kind,
            "seq_len": self.seq_len,
            "vocab": self.vocab,
            "token_offset": self.token_offset,
            "class_token_ids": [int(i) for i in self.class_token_ids],
        }


# -- state dicts ------------------------------------------------------------------------------
def check_state_dict(
    module: nn.Module, state: dict, what: str, strict: bool = True, keys=None
) -> dict:
    """Load ``state`` into ``module`` by name (only the entries named in ``keys``, if given).
    Missing, unexpected and wrongly shaped keys raise :class:`CheckpointMismatchError` naming
    them (``strict``; a shape mismatch always), or are skipped and returned. Returns
    ``{"missing": [...], "unexpected": [...], "mismatched": [...]}``."""
    expected = {k: v for k, v in module.state_dict().items() if keys is None or k in keys}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    mismatched = sorted(
        f"{k} (checkpoint {tuple(state[k].shape)}, model {tuple(expected[k].shape)})"
        for k in set(state) & set(expected)
        if tuple(state[k].shape) != tuple(expected[k].shape)
    )
    report = {"missing": missing, "unexpected": unexpected, "mismatched": mismatched}
    if mismatched or (strict and (missing or unexpected)):
        parts = [
            f"{name} keys ({len(keys)}): {_listing(keys)}" for name, keys in report.items() if keys
        ]
        raise CheckpointMismatchError(f"{what} does not match the model: " + "; ".join(parts))
    ok = {k: v for k, v in state.items() if k in expected}
    module.load_state_dict(ok, strict=False)
    return report


def _listing(keys, limit: int = 12) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


def read_checkpoint(path: Path, weights_only: bool = True) -> dict:
    """A state dict from a LlamaGen-style checkpoint file: a plain state dict, or one under
    ``"model"`` (DDP), ``"module"`` (DeepSpeed) or ``"state_dict"``, as LlamaGen's samplers
    read them. ``module.`` / ``_orig_mod.`` prefixes (DDP, ``torch.compile``) carried by every
    key are stripped; a stored ``freqs_cis`` and KV-cache buffers (derived state) are dropped."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        ckpt = load_file(str(path))
    else:
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=weights_only)
        except pickle.UnpicklingError as err:
            raise ValueError(
                f"source={str(path)!r} holds objects other than tensors; if you trust the file, "
                f"pass weights_only=False ({err})"
            ) from err
    if not isinstance(ckpt, dict):
        raise TypeError(f"source={str(path)!r} does not hold a state dict")
    for key in ("model", "module", "state_dict"):
        if isinstance(ckpt.get(key), dict):
            ckpt = ckpt[key]
            break
    for prefix in ("module.", "_orig_mod."):
        if ckpt and all(k.startswith(prefix) for k in ckpt):
            ckpt = {k[len(prefix) :]: v for k, v in ckpt.items()}
    if not all(isinstance(v, torch.Tensor) for v in ckpt.values()):
        raise TypeError(f"source={str(path)!r}: the state dict holds non-tensor entries")
    # derived state, not weights: the rotary table and KV-cache buffers of a model saved
    # after LlamaGen's setup_caches
    return {
        k: v
        for k, v in ckpt.items()
        if k != "freqs_cis" and not k.endswith((".kv_cache.k_cache", ".kv_cache.v_cache"))
    }


def llamagen_config(config) -> LlamaGenConfig:
    if isinstance(config, LlamaGenConfig):
        return config.validated()
    if isinstance(config, dict):
        return LlamaGenConfig.from_dict(config)
    if isinstance(config, str | Path) and Path(config).is_file():
        return LlamaGenConfig.from_dict(json.loads(Path(config).read_text()))
    raise TypeError(
        "config must be a LlamaGenConfig, a dict of its fields or a JSON file of them (a "
        f"LlamaGen checkpoint stores none); got {type(config).__name__}"
    )


def load_llamagen(path: Path, config, strict: bool = True, weights_only: bool = True):
    """``(LlamaGenBase, key report)`` from a checkpoint file or a folder holding
    ``llamagen.pt`` (or another single checkpoint) and, unless ``config`` is given,
    ``llamagen_config.json``."""
    if path.is_dir():
        if config is None and (path / LLAMAGEN_CONFIG_FILE).is_file():
            config = path / LLAMAGEN_CONFIG_FILE
        files = sorted(p for p in path.iterdir() if p.suffix in CHECKPOINT_SUFFIXES)
        if (path / LLAMAGEN_WEIGHTS_FILE).is_file():
            files = [path / LLAMAGEN_WEIGHTS_FILE]
        if len(files) != 1:
            raise FileNotFoundError(
                f"source={str(path)!r}: expected one checkpoint file ({', '.join(CHECKPOINT_SUFFIXES)}), "
                f"found {len(files)}"
            )
        path = files[0]
    if config is None:
        raise ValueError(
            "config is required for a LlamaGen checkpoint (e.g. "
            "LlamaGenConfig.preset('GPT-B', block_size=256, vocab_size=16384))"
        )
    net = LlamaGenGPT(llamagen_config(config))
    report = check_state_dict(
        net, read_checkpoint(path, weights_only), f"checkpoint {path.name}", strict
    )
    return LlamaGenBase(net), report


def load_hf(source: str, strict: bool = True, dtype=None, **hf_kwargs):
    """``(model, key report)`` from ``AutoModelForCausalLM.from_pretrained``."""
    from transformers import AutoModelForCausalLM

    if dtype is not None:
        hf_kwargs["dtype"] = dtype
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            source, output_loading_info=True, **hf_kwargs
        )
    except (OSError, ValueError) as err:
        msg = f"source={source!r} could not be loaded as a Hugging Face causal LM: {err}"
        raise OSError(msg) from err
    report = {
        "missing": sorted(info.get("missing_keys", [])),
        "unexpected": sorted(info.get("unexpected_keys", [])),
        "mismatched": sorted(str(m) for m in info.get("mismatched_keys", [])),
    }
    if strict and any(report.values()):
        parts = [
            f"{name} keys ({len(keys)}): {_listing(keys)}" for name, keys in report.items() if keys
        ]
        raise CheckpointMismatchError(
            f"source={source!r} does not match its model: " + "; ".join(parts)
        )
    model.eval()
    return model, report


def check_dtype(dtype):
    """``None``, ``"auto"`` (Hugging Face: the checkpoint's dtype), or a floating torch dtype
    (a ``torch.dtype`` or its name, e.g. ``"bfloat16"``)."""
    if dtype is None or dtype == "auto":
        return dtype
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None) if dtype.isidentifier() else None
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be None, 'auto' or a floating torch dtype; got {dtype!r}")
    return dtype


def check_device(device) -> torch.device:
    """A device name (``"cuda:0"``) or ``torch.device``, refused with a named error otherwise."""
    if not isinstance(device, str | torch.device):
        raise TypeError(f"device must be a device name or torch.device, got {device!r}")
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device must name a torch device, got {device!r}") from err


def detect_format(source) -> str:
    """``tensorar`` (a saved wrapper), ``llamagen`` (a checkpoint file, or a folder with
    ``llamagen_config.json``), ``hf`` (a folder with ``config.json``, or a hub id)."""
    if not isinstance(source, str | Path):
        raise TypeError(
            f"source must be a path or a Hugging Face hub id, got {type(source).__name__}"
        )
    path = Path(source).expanduser()
    if path.is_dir():
        if (path / CONFIG_FILE).is_file():
            return "tensorar"
        if (path / LLAMAGEN_CONFIG_FILE).is_file():
            return "llamagen"
        if (path / "config.json").is_file():
            return "hf"
        raise FileNotFoundError(
            f"source={str(source)!r} is a folder with none of {CONFIG_FILE}, "
            f"{LLAMAGEN_CONFIG_FILE} (with a checkpoint) or config.json (Hugging Face)"
        )
    if path.is_file():
        if path.suffix in CHECKPOINT_SUFFIXES:
            return "llamagen"
        raise ValueError(
            f"source={str(source)!r} is a file of unknown kind (a LlamaGen checkpoint ends in "
            f"{', '.join(CHECKPOINT_SUFFIXES)})"
        )
    text = str(source)
    if HUB_ID.match(text) and not text.startswith((".", "~")):
        return "hf"
    raise FileNotFoundError(f"source={text!r} does not exist and is not a Hugging Face hub id")


def check_source(source, fmt: str) -> str:
    V.check_choice(fmt, "format", FORMATS)
    found = detect_format(source)
    if fmt == "auto":
        return found
    if fmt == "tensorar" and found != "tensorar":
        raise FileNotFoundError(f"source={str(source)!r} has no {CONFIG_FILE}")
    if fmt == "llamagen" and not Path(source).exists():
        raise FileNotFoundError(f"source={str(source)!r} does not exist")
    return fmt


# -- saving and loading a wrapped model's base ------------------------------------------------
def base_description(base) -> dict:
    """What :func:`load_saved_base` needs to rebuild ``base``."""
    from iclr26.generative.tensorar.model import TinyARImageModel

    if isinstance(base, _PretrainedBase):
        return base.describe()
    if isinstance(base, TinyARImageModel):
        blk = base.blocks[0]
        return {
            "kind": "tiny",
            "config": {
                "vocab": base.vocab,
                "seq_len": base.seq_len,
                "n_classes": base.n_classes,
                "d": base.d,
                "layers": len(base.blocks),
                "heads": base.heads,
                "mlp_ratio": blk.mlp[0].out_features // base.d,
            },
        }
    raise TypeError(
        "save_pretrained supports TinyARImageModel, LlamaGen and Hugging Face bases; got "
        f"{type(base).__name__}"
    )


def native_prefix(base) -> str:
    """State-dict prefix (inside the base) of the weights saved in the base's own format."""
    return base.native_prefix if isinstance(base, _PretrainedBase) else ""


def save_base(base, folder: Path) -> dict:
    """Write ``base``'s own weights to ``folder`` in its native format; returns its
    description."""
    desc = base_description(base)
    folder.mkdir(parents=True, exist_ok=True)
    if desc["kind"] == "hf":
        base.net.save_pretrained(folder)
    elif desc["kind"] == "llamagen":
        (folder / LLAMAGEN_CONFIG_FILE).write_text(json.dumps(desc["config"], indent=1))
        torch.save({"model": base.net.state_dict()}, folder / LLAMAGEN_WEIGHTS_FILE)
    else:
        torch.save(base.state_dict(), folder / "tiny.pt")
    return desc


def load_saved_base(folder: Path, desc: dict, strict: bool = True, dtype=None, **hf_kwargs):
    """Rebuild a base written by :func:`save_base`; returns ``(base, key report)``."""
    from iclr26.generative.tensorar.model import TinyARImageModel

    kind = V.check_choice(desc.get("kind"), "base kind", ("hf", "llamagen", "tiny"))
    if kind == "hf":
        model, report = load_hf(str(folder), strict, dtype, **hf_kwargs)
        base = HFCausalLMBase(
            model, desc["seq_len"], desc["vocab"], desc["token_offset"], desc["class_token_ids"]
        )
        return base, report
    if kind == "llamagen":
        base, report = load_llamagen(folder, desc["config"], strict)
    else:
        base = TinyARImageModel(**desc["config"])
        state = torch.load(folder / "tiny.pt", map_location="cpu", weights_only=True)
        report = check_state_dict(base, state, "saved base", strict)
    if isinstance(dtype, torch.dtype):
        base.to(dtype)
    return base, report
