"""The real-CLIP path of DIAL: ``HFCLIPBackend`` (transformers) and ``OpenCLIPBackend``
(open_clip), each on a tiny randomly initialised model built here (no downloads), compared
with a hand computation of CLIP's preprocessing and projection, then fed to DIAL."""

import json
import string

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from iclr26.vision.dial import (
    DIAL,
    HFCLIPBackend,
    OpenCLIPBackend,
    ZeroShot,
    class_prompts,
    spurious_prompts,
)

transformers = pytest.importorskip("transformers")

CLIP_MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
CLIP_STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)


def _images(n=6, size=16, seed=0):
    return np.random.default_rng(seed).random((n, 3, size, size)).astype(np.float32)


def _hf_clip(tmp_path):
    """A tiny CLIPModel with a character-level CLIP tokenizer written to ``tmp_path``."""
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in string.ascii_lowercase:
        vocab[c] = len(vocab)
    for c in string.ascii_lowercase:
        vocab[c + "</w>"] = len(vocab)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    tok = transformers.CLIPTokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    image_proc = transformers.CLIPImageProcessor(
        size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}
    )
    processor = transformers.CLIPProcessor(image_processor=image_proc, tokenizer=tok)
    text = dict(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
                num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=64,
                bos_token_id=0, eos_token_id=1, pad_token_id=1)  # fmt: skip
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, image_size=16, patch_size=8)  # fmt: skip
    torch.manual_seed(0)
    cfg = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)
    return transformers.CLIPModel(cfg).eval(), processor, tok


@torch.no_grad()
def test_hf_clip_backend_matches_a_hand_computation(tmp_path):
    model, processor, tok = _hf_clip(tmp_path)
    backend = HFCLIPBackend(model, processor=processor, batch_size=4)
    x = _images()
    emb = backend.image_embeddings(x)
    # by hand: CLIP's normalisation (16 px images: no resize, no crop); the processor agrees
    # with it up to its 8-bit rounding (the PIL path), and the embeddings are its pixels through
    # the vision tower's pooled output, the visual projection and L2 normalisation
    pv = torch.from_numpy((x - CLIP_MEAN[:, None, None]) / CLIP_STD[:, None, None])
    hwc = list(np.transpose(x, (0, 2, 3, 1)))
    pv_proc = processor(images=hwc, return_tensors="pt", do_rescale=False)["pixel_values"]
    assert (pv_proc - pv).abs().max() <= 1.0 / 255 / CLIP_STD.min() + 1e-4
    ref = model.visual_projection(model.vision_model(pixel_values=pv_proc).pooler_output)
    ref = F.normalize(ref, dim=-1).numpy()
    assert emb.shape == (6, 8) and emb.dtype == np.float32
    np.testing.assert_allclose(emb, ref, atol=1e-5)
    # batching does not change the rows; torch tensors are accepted too
    np.testing.assert_allclose(HFCLIPBackend(model, processor, batch_size=64)
                               .image_embeddings(torch.from_numpy(x)), emb, atol=1e-6)  # fmt: skip

    texts = ["a photo of a circle", "a photo of a square"]
    t = backend.text_embeddings(texts)
    ids = tok(texts, padding=True, return_tensors="pt")
    ref_t = model.text_projection(
        model.text_model(
            input_ids=ids["input_ids"], attention_mask=ids["attention_mask"]
        ).pooler_output
    )
    np.testing.assert_allclose(t, F.normalize(ref_t, dim=-1).numpy(), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-5)
    # padding a short text beside a long one (the attention mask) leaves its embedding alone
    alone = backend.text_embeddings(["a circle"])
    padded = backend.text_embeddings(["a circle", "a photo of a very large red square"])
    np.testing.assert_allclose(padded[:1], alone, atol=1e-5)


def test_hf_clip_backend_loads_a_saved_model_by_name(tmp_path):
    """The ``from_pretrained`` path, offline: a name that is a local folder."""
    model, processor, _ = _hf_clip(tmp_path)
    folder = tmp_path / "tiny-clip"
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    x = _images(3)
    loaded = HFCLIPBackend(str(folder))
    np.testing.assert_allclose(
        loaded.image_embeddings(x), HFCLIPBackend(model, processor).image_embeddings(x),
        atol=1e-5,
    )  # fmt: skip


def test_hf_clip_embeddings_drive_zero_shot_and_dial(tmp_path):
    """The README's Waterbirds recipe on the tiny model: embeddings of a user's CLIP go
    through the same DIAL / ZeroShot entry points as TinyCLIP's."""
    model, processor, _ = _hf_clip(tmp_path)
    clip = HFCLIPBackend(model, processor=processor)
    E = clip.image_embeddings(_images(48, seed=1))
    T = clip.text_embeddings(class_prompts(("landbird", "waterbird")))
    S = clip.text_embeddings(spurious_prompts(("land", "water")))
    zs = ZeroShot(temperature=0.1).fit(E, T)
    np.testing.assert_array_equal(zs.predict(E), np.argmax(E @ T.T, axis=1))
    dial = DIAL(sae_width=2, sae_k=4, sae_steps=20, k_grid=(1, 2), alpha_grid=(0.5, 1.0),
                temperature=0.1).fit(E, T, S)  # fmt: skip
    Z = dial.transform(E)
    assert Z.shape == E.shape and np.isfinite(Z).all()
    assert dial.report_["k"] in (1, 2) and dial.report_["alpha"] in (0.5, 1.0)
    assert set(np.unique(dial.predict(E))) <= {0, 1}


class _ToyOpenCLIP(nn.Module):
    """The open_clip model interface: ``encode_image``, ``encode_text``, ``visual`` with
    ``image_size`` / ``image_mean`` / ``image_std``."""

    def __init__(self, size=12):
        super().__init__()
        torch.manual_seed(0)
        self.visual = nn.Linear(3 * size * size, 6)
        self.visual.image_size = size
        self.visual.image_mean = (0.5, 0.4, 0.3)
        self.visual.image_std = (0.2, 0.25, 0.3)
        self.token_embedding = nn.Embedding(32, 6)

    def encode_image(self, x):
        return self.visual(x.flatten(1))

    def encode_text(self, tokens):
        return self.token_embedding(tokens).mean(1)


def _toy_tokenizer(texts):
    return torch.tensor([[ord(c) % 32 for c in t[:8].ljust(8)] for t in texts])


@torch.no_grad()
def test_open_clip_backend_on_a_module_matches_a_hand_computation():
    model = _ToyOpenCLIP()
    backend = OpenCLIPBackend(model, tokenizer=_toy_tokenizer, batch_size=4)
    x = _images(5, size=20)
    # by hand: bicubic resize to the tower's size, clamp, the tower's own mean / std
    r = F.interpolate(torch.from_numpy(x), size=(12, 12), mode="bicubic", align_corners=False)
    r = (r.clamp(0, 1) - torch.tensor((0.5, 0.4, 0.3))[:, None, None]) / torch.tensor(
        (0.2, 0.25, 0.3)
    )[:, None, None]
    ref = F.normalize(model.visual(r.flatten(1)), dim=-1).numpy()
    np.testing.assert_allclose(backend.image_embeddings(x), ref, atol=1e-5)
    texts = ["circle", "square"]
    ref_t = F.normalize(model.token_embedding(_toy_tokenizer(texts)).mean(1), dim=-1).numpy()
    np.testing.assert_allclose(backend.text_embeddings(texts), ref_t, atol=1e-6)
    with pytest.raises(TypeError, match="tokenizer"):
        OpenCLIPBackend(model)
    with pytest.raises(TypeError, match="encode_image"):
        OpenCLIPBackend(nn.Linear(2, 2), tokenizer=_toy_tokenizer)


@torch.no_grad()
def test_open_clip_backend_on_a_tiny_open_clip_model():
    open_clip = pytest.importorskip("open_clip")
    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=8,
        vision_cfg=open_clip.CLIPVisionCfg(layers=1, width=16, head_width=8, patch_size=8,
                                           image_size=16),
        text_cfg=open_clip.CLIPTextCfg(context_length=16, vocab_size=49408, width=16, heads=2,
                                       layers=1),
    ).eval()  # fmt: skip
    tokenizer = open_clip.SimpleTokenizer(context_length=16)  # ships its BPE vocabulary
    backend = OpenCLIPBackend(model, tokenizer=tokenizer)
    x = _images(4)
    pv = torch.from_numpy((x - CLIP_MEAN[:, None, None]) / CLIP_STD[:, None, None])
    ref = F.normalize(model.encode_image(pv), dim=-1).numpy()
    np.testing.assert_allclose(backend.image_embeddings(x), ref, atol=1e-5)
    texts = class_prompts(("circle", "square"))
    ref_t = F.normalize(model.encode_text(tokenizer(texts)), dim=-1).numpy()
    np.testing.assert_allclose(backend.text_embeddings(texts), ref_t, atol=1e-5)
