"""Backends: where the image and text embeddings DIAL works on come from.

Each backend has ``image_embeddings(images) -> (n, d)`` and ``text_embeddings(texts) -> (n, d)``,
both L2-normalised numpy arrays in the same joint space.

- :class:`TinyCLIPBackend`: the project's :class:`~iclr26.vision.dial.tinyclip.TinyCLIP`
  (offline).
- :class:`HFCLIPBackend`: a Hugging Face ``CLIPModel`` (a name for ``from_pretrained``, e.g.
  ``"openai/clip-vit-base-patch32"``, or a loaded model with its processor).
- :class:`OpenCLIPBackend`: an ``open_clip`` model, by name or as a loaded module with its
  tokenizer (``open_clip_torch`` is optional).

Weights are never downloaded by the package itself; the real-CLIP backends are for users who
have them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.vision.dial.text import check_texts
from iclr26.vision.dial.tinyclip import TinyCLIP

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)  # open_clip's defaults (OpenAI CLIP)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def _check_images(images) -> np.ndarray:
    if isinstance(images, torch.Tensor):
        images = images.detach().cpu().numpy()
    arr = V.check_array(images, "images", ndim=4, dtype=np.float32, low=0.0, high=1.0)
    if arr.shape[1] != 3:
        raise ValueError(f"images must be (n, 3, H, W) RGB in [0, 1], got {arr.shape[1]} channels")
    return arr


def _features(out) -> torch.Tensor:
    """A tensor from ``get_*_features`` whichever output type this transformers returns."""
    if isinstance(out, torch.Tensor):
        return out
    for name in ("image_embeds", "text_embeds", "pooler_output"):
        value = getattr(out, name, None)
        if isinstance(value, torch.Tensor):
            return value
    raise TypeError(f"cannot read features from {type(out).__name__}")


class TinyCLIPBackend:
    """Embeddings from a trained :class:`TinyCLIP`."""

    def __init__(self, model: TinyCLIP):
        if not isinstance(model, TinyCLIP):
            raise TypeError(f"model must be a TinyCLIP, got {type(model).__name__}")
        self.model = model

    def image_embeddings(self, images, batch_size: int = 256) -> np.ndarray:
        return self.model.embed_images(_check_images(images), batch_size=batch_size)

    def text_embeddings(self, texts) -> np.ndarray:
        return self.model.embed_texts(check_texts(texts))


class HFCLIPBackend:
    """A Hugging Face CLIP: ``HFCLIPBackend("openai/clip-vit-base-patch32")`` loads model and
    processor with ``from_pretrained`` (local files or the hub cache); ``model=`` and
    ``processor=`` objects are used as given."""

    def __init__(self, model="openai/clip-vit-base-patch32", processor=None,
                 device: str = "cpu", batch_size: int = 64):  # fmt: skip
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.device = str(device)
        if isinstance(model, str):
            from transformers import CLIPModel, CLIPProcessor

            processor = processor or CLIPProcessor.from_pretrained(model)
            model = CLIPModel.from_pretrained(model)
        V.check_module_attrs(model, "model", ("get_image_features", "get_text_features"))
        if processor is None:
            raise ValueError("processor is required when model is an object, not a name")
        self.model = model.to(self.device).eval()
        self.processor = processor

    @torch.no_grad()
    def image_embeddings(self, images) -> np.ndarray:
        arr = _check_images(images)
        out = []
        for i in range(0, len(arr), self.batch_size):
            batch = list(np.transpose(arr[i : i + self.batch_size], (0, 2, 3, 1)))
            inputs = self.processor(images=batch, return_tensors="pt", do_rescale=False)
            feats = _features(self.model.get_image_features(
                pixel_values=inputs["pixel_values"].to(self.device)))  # fmt: skip
            out.append(F.normalize(feats, dim=-1).cpu())
        return torch.cat(out).numpy()

    @torch.no_grad()
    def text_embeddings(self, texts) -> np.ndarray:
        texts = check_texts(texts)
        inputs = self.processor(text=texts, return_tensors="pt", padding=True)
        inputs = {k: v.to(self.device) for k, v in inputs.items() if k != "pixel_values"}
        feats = _features(self.model.get_text_features(**inputs))
        return F.normalize(feats, dim=-1).cpu().numpy()


class OpenCLIPBackend:
    """An ``open_clip`` model: ``OpenCLIPBackend("ViT-B-32", "laion2b_s34b_b79k")`` builds it
    with ``open_clip.create_model_and_transforms`` (needs ``open_clip_torch`` and the weights on
    disk); a model object (``encode_image``, ``encode_text`` and a ``visual`` tower with
    ``image_size``, e.g. an ``open_clip.CLIP`` already loaded) is used as given together with
    its ``tokenizer`` (a callable from a list of texts to token ids)."""

    def __init__(self, model="ViT-B-32", pretrained: str | None = "openai",
                 device: str = "cpu", batch_size: int = 64, tokenizer=None):  # fmt: skip
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.device = str(device)
        if isinstance(model, str):
            if not model:
                raise TypeError(f"model must be an open_clip model name, got {model!r}")
            try:
                import open_clip
            except ImportError:
                raise ImportError(
                    "OpenCLIPBackend needs the optional package open_clip_torch"
                ) from None
            name = model
            model, _, self.preprocess = open_clip.create_model_and_transforms(
                name, pretrained=pretrained, device=self.device
            )
            tokenizer = tokenizer or open_clip.get_tokenizer(name)
        elif isinstance(model, torch.nn.Module):
            V.check_module_attrs(model, "model", ("encode_image", "encode_text", "visual"))
            V.check_module_attrs(model.visual, "model.visual", ("image_size",))
            if tokenizer is None or not callable(tokenizer):
                raise TypeError("tokenizer (a callable) is required when model is an object")
            model = model.to(self.device)
        else:
            raise TypeError(
                f"model must be an open_clip model name or module, got {type(model).__name__}"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer

    @torch.no_grad()
    def image_embeddings(self, images) -> np.ndarray:
        arr = torch.from_numpy(_check_images(images))
        size = self.model.visual.image_size
        size = size if isinstance(size, tuple | list) else (size, size)
        visual = self.model.visual
        mean = torch.tensor(getattr(visual, "image_mean", None) or OPENAI_MEAN)
        std = torch.tensor(getattr(visual, "image_std", None) or OPENAI_STD)
        out = []
        for i in range(0, len(arr), self.batch_size):
            x = F.interpolate(arr[i : i + self.batch_size], size=tuple(size), mode="bicubic",
                              align_corners=False).clamp(0, 1)  # fmt: skip
            x = (x - mean[:, None, None]) / std[:, None, None]
            out.append(F.normalize(self.model.encode_image(x.to(self.device)), dim=-1).cpu())
        return torch.cat(out).numpy()

    @torch.no_grad()
    def text_embeddings(self, texts) -> np.ndarray:
        tokens = self.tokenizer(check_texts(texts)).to(self.device)
        return F.normalize(self.model.encode_text(tokens), dim=-1).cpu().numpy()
