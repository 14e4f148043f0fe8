"""``TinyCLIP``: the small CLIP-style model the claim checks debias.

The image tower is the shared ``TinyConvNet`` followed by a linear map to the joint space; the
text tower is a frozen sentence encoder (all-MiniLM-L6-v2 by default) followed by a trainable
``Linear(384 -> 128)``. Both outputs are L2-normalised before the logits, and the temperature
is learned (CLIP's ``logit_scale``). Trained with the symmetric contrastive loss on captions of
``make_spurious_shapes`` images in which the background phrase is dropped from half of the
captions, the class prompts ("a photo of a circle") absorb the background that co-occurs with
the class: the planted spurious correlation the DIAL claim checks then remove.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.data.vision import BACKGROUNDS, FAMILY_A
from iclr26.models.vision import TinyConvNet
from iclr26.vision.dial.text import check_texts, default_text_encoder

WITH_BACKGROUND = (
    "a photo of a {shape} on a {background} background",
    "a {shape} in front of a {background} background",
    "a picture of a {shape} over {background}",
)
WITHOUT_BACKGROUND = ("a photo of a {shape}", "a picture of a {shape}", "a {shape}")
CLASS_PROMPT = "a photo of a {shape}"
SPURIOUS_PROMPT = "a photo of a {background} background"


def class_prompts(class_names) -> list[str]:
    """``"a photo of a {class}"`` for every class name."""
    return [
        CLASS_PROMPT.format(shape=c.replace("_", " "))
        for c in check_texts(class_names, "class_names")
    ]


def spurious_prompts(values=BACKGROUNDS) -> list[str]:
    """``"a photo of a {value} background"`` for every value of the spurious attribute."""
    return [SPURIOUS_PROMPT.format(background=v) for v in check_texts(values, "values")]


def make_captions(
    labels,
    backgrounds,
    drop_background: float = 0.5,
    seed: int = 0,
    class_names=FAMILY_A,
    background_names=BACKGROUNDS,
) -> list[str]:
    """Template captions: with probability ``drop_background`` the background phrase is left
    out ("a photo of a circle"), otherwise it is named ("a circle in front of a water
    background"); the template is drawn uniformly."""
    labels = V.check_array(labels, "labels", ndim=1, dtype=np.int64, low=0)
    backgrounds = V.check_array(
        backgrounds, "backgrounds", ndim=1, dtype=np.int64, n_rows=len(labels), low=0
    )
    drop_background = V.check_probability(drop_background, "drop_background")
    class_names = check_texts(class_names, "class_names")
    background_names = check_texts(background_names, "background_names")
    if labels.max() >= len(class_names):
        raise ValueError(f"labels must be < {len(class_names)} (the class names given)")
    if backgrounds.max() >= len(background_names):
        raise ValueError(f"backgrounds must be < {len(background_names)} (the names given)")
    rng = np.random.default_rng(seed)
    drop = rng.random(len(labels)) < drop_background
    pick = rng.integers(0, 3, len(labels))
    out = []
    for y, b, d, t in zip(labels, backgrounds, drop, pick):
        shape = class_names[y].replace("_", " ")
        template = (WITHOUT_BACKGROUND if d else WITH_BACKGROUND)[t]
        out.append(template.format(shape=shape, background=background_names[b]))
    return out


class TinyCLIP(nn.Module):
    """Image tower ``TinyConvNet -> [mean-pool, max-pool] -> Linear(-> embed_dim)``; text tower ``frozen encoder ->
    Linear(text_dim -> embed_dim)``; learned temperature (``logit_scale``, init 1 / 0.07).

    ``text_encoder`` is a callable ``list[str] -> (n, text_dim)`` (default: MiniLM, loaded on
    first use); its outputs are memoised per string, so each caption is encoded once."""

    def __init__(
        self,
        text_encoder: Callable | None = None,
        embed_dim: int = 128,
        width: int = 16,
        image_dim: int = 64,
        stride: int = 4,
        init_temperature: float = 0.07,
    ):
        super().__init__()
        embed_dim = V.check_int(embed_dim, "embed_dim", low=1)
        init_temperature = V.check_scalar(init_temperature, "init_temperature", low=0.0,
                                          low_open=True)  # fmt: skip
        if text_encoder is not None and not callable(text_encoder):
            raise TypeError("text_encoder must be callable (list[str] -> array), got "
                            f"{type(text_encoder).__name__}")  # fmt: skip
        self._text_encoder = text_encoder
        text_dim = getattr(text_encoder, "dim", None) if text_encoder is not None else 384
        text_dim = V.check_int(text_dim, "text_encoder.dim", low=1)
        self.image_tower = TinyConvNet(width=width, out_dim=image_dim, stride=stride)
        # centre the pooled features across the batch before projecting: ReLU features share a
        # large common component that would make all normalised image embeddings parallel
        self.image_norm = nn.BatchNorm1d(2 * image_dim)
        self.image_proj = nn.Linear(2 * image_dim, embed_dim)
        self.text_proj = nn.Linear(text_dim, embed_dim)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1.0 / init_temperature)))
        self.embed_dim = embed_dim
        self.text_dim = text_dim
        self._memo: dict[str, torch.Tensor] = {}
        # the mean frozen text feature of the training captions: subtracted before the
        # projection, since sentence embeddings of template captions are nearly parallel
        self.register_buffer("text_mean", torch.zeros(text_dim))

    @property
    def text_encoder(self) -> Callable:
        if self._text_encoder is None:
            self._text_encoder = default_text_encoder()
        return self._text_encoder

    def text_features(self, texts) -> torch.Tensor:
        """The frozen encoder's features (n, text_dim), computed once per distinct string."""
        texts = check_texts(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            vecs = np.asarray(self.text_encoder(missing), dtype=np.float32)
            if vecs.shape != (len(missing), self.text_dim):
                raise ValueError(
                    f"text_encoder must return shape ({len(missing)}, {self.text_dim}), "
                    f"got {vecs.shape}"
                )
            V.check_array(vecs, "text_encoder output", ndim=2)
            for t, v in zip(missing, torch.from_numpy(vecs)):
                self._memo[t] = v
        device = self.text_proj.weight.device
        return torch.stack([self._memo[t] for t in texts]).to(device)

    def project_text(self, feats: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.text_proj(feats - self.text_mean), dim=-1)

    def encode_text(self, texts) -> torch.Tensor:
        return self.project_text(self.text_features(texts))

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        images = V.check_tensor(images, "images", ndim=4, floating=True)
        if images.shape[1] != 3:
            raise ValueError(f"images must have 3 channels, got {images.shape[1]}")
        fmap = self.image_tower.forward_features(images)
        pooled = torch.cat([fmap.mean((2, 3)), fmap.amax((2, 3))], 1)  # mean and max pooling
        return F.normalize(self.image_proj(self.image_norm(pooled)), dim=-1)

    def forward(self, images: torch.Tensor, texts) -> torch.Tensor:
        """Image-to-text logits ``exp(logit_scale) * cos`` (B, n_texts)."""
        return self.logit_scale.exp() * self.encode_image(images) @ self.encode_text(texts).T

    @torch.no_grad()
    def embed_images(self, images, batch_size: int = 256) -> np.ndarray:
        """L2-normalised image embeddings of a float array/tensor (n, 3, H, W), in eval mode."""
        if not isinstance(images, torch.Tensor):
            images = torch.from_numpy(
                V.check_array(images, "images", ndim=4, dtype=np.float32, low=0.0, high=1.0)
            )
        V.check_tensor(images, "images", ndim=4, floating=True)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        was_training = self.training
        self.eval()
        device = self.image_proj.weight.device
        out = [
            self.encode_image(images[i : i + batch_size].to(device)).cpu()
            for i in range(0, len(images), batch_size)
        ]
        self.train(was_training)
        return torch.cat(out).numpy()

    @torch.no_grad()
    def embed_texts(self, texts) -> np.ndarray:
        return self.encode_text(texts).cpu().numpy()


def clip_loss(logits: torch.Tensor, caption_ids: torch.Tensor) -> torch.Tensor:
    """Symmetric contrastive loss over a batch; items with the same caption string are all
    positives (uniform soft targets), since the template captions repeat within a batch."""
    logits = V.check_tensor(logits, "logits", ndim=2, floating=True)
    if logits.shape[0] != logits.shape[1]:
        raise ValueError(f"logits must be square (n, n), got {tuple(logits.shape)}")
    V.check_tensor(caption_ids, "caption_ids", ndim=1, shape=(logits.shape[0],))
    same = (caption_ids[:, None] == caption_ids[None, :]).float()
    targets = same / same.sum(1, keepdim=True)
    loss_i = -(targets * F.log_softmax(logits, 1)).sum(1).mean()
    loss_t = -(targets * F.log_softmax(logits.T, 1)).sum(1).mean()
    return 0.5 * (loss_i + loss_t)


def train_epoch(
    model: TinyCLIP,
    images: torch.Tensor,
    captions: list[str],
    optimizer: torch.optim.Optimizer,
    batch_size: int = 128,
    generator: torch.Generator | None = None,
    loss_kind: str = "captions",
) -> float:
    """One pass over ``(images, captions)`` in random order; returns the mean loss."""
    device = model.image_proj.weight.device
    unique = {c: i for i, c in enumerate(dict.fromkeys(captions))}
    ids = torch.tensor([unique[c] for c in captions])
    feats = model.text_features(list(unique)).to(device)
    order = torch.randperm(len(images), generator=generator)
    model.train()
    losses = []
    for start in range(0, len(images), batch_size):
        idx = order[start : start + batch_size]
        if len(idx) < 2:
            continue
        img = model.encode_image(images[idx].to(device))
        batch_ids = ids[idx].to(device)
        if loss_kind == "captions":
            # every distinct caption is a candidate for every image (CLIP over the caption set)
            txt = model.project_text(feats)
            loss = F.cross_entropy(model.logit_scale.exp() * img @ txt.T, batch_ids)
        else:
            txt = model.project_text(feats[batch_ids])
            loss = clip_loss(model.logit_scale.exp() * img @ txt.T, batch_ids)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0.0, math.log(100.0))  # CLIP's cap on the scale
        losses.append(float(loss.detach()))
    return float(np.mean(losses)) if losses else float("nan")


def train_tinyclip(
    images,
    captions,
    text_encoder: Callable | None = None,
    epochs: int = 10,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    device: str = "cpu",
    model: TinyCLIP | None = None,
    class_names=None,
    **model_kwargs,
) -> TinyCLIP:
    """Train a :class:`TinyCLIP` (or continue training ``model``) with AdamW; the per-epoch
    losses are kept in ``model.history_``. With ``class_names`` every class must be named by
    at least one caption (a class no caption mentions cannot be prompted zero-shot)."""
    if not isinstance(images, torch.Tensor):
        images = torch.from_numpy(
            V.check_array(images, "images", ndim=4, dtype=np.float32, low=0.0, high=1.0)
        )
    V.check_tensor(images, "images", ndim=4, floating=True)
    captions = check_texts(captions, "captions")
    V.check_same_length(images=images, captions=captions)
    if class_names is not None:
        lowered = [c.lower() for c in captions]
        for name in check_texts(class_names, "class_names"):
            word = name.replace("_", " ").lower()
            if not any(word in c for c in lowered):
                raise ValueError(f"captions: no caption mentions the class {name!r}")
    epochs = V.check_int(epochs, "epochs", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=2)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    if model is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = TinyCLIP(text_encoder=text_encoder, **model_kwargs)
    model.to(device)
    if not getattr(model, "history_", None):
        with torch.no_grad():
            model.text_mean.copy_(model.text_features(list(dict.fromkeys(captions))).mean(0))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    history = list(getattr(model, "history_", []))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for _ in range(epochs):
            history.append(train_epoch(model, images, captions, optimizer, batch_size, generator))
    model.history_ = history
    model.eval()
    return model
