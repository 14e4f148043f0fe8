"""TensorARWrapper.from_pretrained / save_pretrained on tiny randomly initialised models saved
to a temporary folder: a Hugging Face causal LM (Llama, GPT-2) and a LlamaGen checkpoint."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from iclr26.generative.tensorar import (
    CheckpointMismatchError,
    DiscreteTensorNoiser,
    HFCausalLMBase,
    LlamaGenConfig,
    LlamaGenGPT,
    TensorARWrapper,
    TinyARImageModel,
    build_windows,
)
from iclr26.models.tinylm.config import tiny_llama_config

T = 9  # image tokens (a 3 x 3 grid for LlamaGen)


def _perturb(module, seed=1, scale=0.1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g).to(p.dtype))
    return module


def _hf(kind="llama", vocab=40):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaForCausalLM

    torch.manual_seed(0)
    if kind == "llama":
        return LlamaForCausalLM(tiny_llama_config("test", vocab_size=vocab)).eval()
    cfg = GPT2Config(
        vocab_size=vocab, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=1
    )
    return GPT2LMHeadModel(cfg).eval()


def _lg_config(**kw):
    fields = dict(
        dim=32,
        n_layer=2,
        n_head=2,
        n_kv_head=1,
        multiple_of=16,
        vocab_size=24,
        num_classes=5,
        block_size=T,
    )
    return LlamaGenConfig(**{**fields, **kw})


def _lg_net(seed=1):
    return _perturb(LlamaGenGPT(_lg_config(), seed=seed), scale=0.05).eval()


def _state_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _data(vocab, n_classes, n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n, T), generator=g), torch.randint(
        0, n_classes, (n,), generator=g
    )


# -- Hugging Face causal LM ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["llama", "gpt2"])
@pytest.mark.parametrize("k", [1, 4])
def test_hf_slot0_reproduces_base_logits_bit_for_bit(kind, k, tmp_path):
    lm = _hf(kind)
    lm.save_pretrained(tmp_path / "lm")
    cls_ids, offset, vocab = [1, 2, 3, 0], 8, 30  # 3 classes + null; codebook = LM ids 8..37
    tar = TensorARWrapper.from_pretrained(
        tmp_path / "lm", k=k, seq_len=T, vocab=vocab, token_offset=offset, class_token_ids=cls_ids
    )
    assert _state_equal(tar.base.net.state_dict(), lm.state_dict())  # loaded = saved weights
    x, y = _data(vocab, 3)
    windows, _ = build_windows(x, k, tar.base.pad_id)
    ids = torch.cat([torch.tensor(cls_ids)[y, None], x[:, :-1] + offset], 1)
    with torch.no_grad():
        ref = lm(input_ids=ids).logits[..., offset : offset + vocab]
        out = tar(y, windows)
    assert out.shape == (3, T, k, vocab)
    assert torch.equal(out[:, :, 0], ref)


def test_hf_defaults_whole_vocab_unconditional(tmp_path):
    lm = _hf("llama")
    lm.save_pretrained(tmp_path)
    tar = TensorARWrapper.from_pretrained(str(tmp_path), seq_len=T)
    assert tar.k == 4 and tar.base.vocab == 40 and tar.base.n_classes == 1
    x = _data(40, 1)[0]
    windows, _ = build_windows(x, 4, tar.base.pad_id)
    bos = lm.config.bos_token_id
    with torch.no_grad():
        ref = lm(input_ids=torch.cat([torch.full((3, 1), bos), x[:, :-1]], 1)).logits
        assert torch.equal(tar(torch.zeros(3, dtype=torch.long), windows)[:, :, 0], ref)


def test_hf_generate_cache_agrees_and_fit_trains(tmp_path):
    _hf("llama").save_pretrained(tmp_path)
    tar = TensorARWrapper.from_pretrained(tmp_path, k=3, seq_len=T, class_token_ids=[1, 2, 0])
    _perturb(tar.encoder), _perturb(tar.decoder)
    kw = dict(temperature=0.0, cfg_scale=1.5, return_drafts=True)
    a, da = tar.generate([0, 1], generator=torch.Generator().manual_seed(0), **kw)
    b, db = tar.generate([0, 1], generator=torch.Generator().manual_seed(0), use_cache=False, **kw)
    assert a.shape == (2, T) and torch.equal(a, b) and torch.equal(da, db)
    x, y = _data(40, 2, n=8)
    before = tar.base.net.model.layers[0].mlp.down_proj.weight.clone()
    losses = tar.fit(x, y, steps=4, lr=3e-3, batch_size=8)
    assert np.isfinite(losses).all()
    assert not torch.equal(before, tar.base.net.model.layers[0].mlp.down_proj.weight)


def test_hf_added_parameters_are_reported(tmp_path):
    lm = _hf("llama")
    lm.save_pretrained(tmp_path)
    tar = TensorARWrapper.from_pretrained(tmp_path, k=4, seq_len=T)
    counts = tar.parameter_counts()
    own = sum(p.numel() for p in tar.encoder.parameters()) + sum(
        p.numel() for p in tar.decoder.parameters()
    )
    assert counts["base"] == sum(p.numel() for p in lm.parameters())
    assert counts["added"] == own + lm.config.hidden_size == tar.added_parameters  # + PAD vector
    assert counts["added_fraction"] == pytest.approx(counts["added"] / counts["base"])
    assert "base.pad_emb" in counts["added_names"]
    assert all(
        n.startswith(("encoder.", "decoder.", "base.pad_emb")) for n in counts["added_names"]
    )


def test_hf_missing_and_unexpected_keys_are_named(tmp_path):
    _hf("llama").save_pretrained(tmp_path)
    (file,) = tmp_path.glob("*.safetensors")
    state = load_file(str(file))
    del state["model.layers.1.mlp.down_proj.weight"]
    state["model.layers.1.mlp.extra_proj.weight"] = torch.zeros(2, 2)
    save_file(state, str(file), metadata={"format": "pt"})
    with pytest.raises(CheckpointMismatchError, match=r"down_proj.*extra_proj|missing.*down_proj"):
        TensorARWrapper.from_pretrained(tmp_path, seq_len=T)
    with pytest.raises(CheckpointMismatchError, match="extra_proj"):
        TensorARWrapper.from_pretrained(tmp_path, seq_len=T)
    tar = TensorARWrapper.from_pretrained(tmp_path, seq_len=T, strict=False)
    assert "model.layers.1.mlp.down_proj.weight" in tar.load_report["base"]["missing"]
    assert "model.layers.1.mlp.extra_proj.weight" in tar.load_report["base"]["unexpected"]


def test_hf_model_with_a_transformed_head_is_refused():
    lm = _hf("llama")
    plain = lm.forward

    def capped(*a, **kw):
        out = plain(*a, **kw)
        out.logits = 3.0 * torch.tanh(out.logits / 3.0)
        return out

    lm.forward = capped
    with pytest.raises(ValueError, match="plain LM head"):
        HFCausalLMBase(_perturb(lm, scale=1.0), seq_len=T)


# -- LlamaGen ----------------------------------------------------------------------------------
def _reference_llamagen_logits(state, cfg, labels, tokens):
    """LlamaGen's c2i forward written out from its definitions, straight from the state dict:
    complex-number 2-D RoPE (row angles on the first half of the pairs, column angles on the
    second, zero rotation rows for the class token), explicit softmax attention."""
    hd, nh, nkv = cfg.dim // cfg.n_head, cfg.n_head, cfg.n_kv_head or cfg.n_head
    grid = math.isqrt(cfg.block_size)

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg.norm_eps) * w

    quarter = hd // 4
    f = cfg.rope_base ** (-torch.arange(quarter, dtype=torch.float64) * 2 / (hd // 2))
    n = tokens.shape[1]
    rot = torch.zeros(n, hd // 2, dtype=torch.complex128)  # position 0: zero (class token)
    for p in range(1, n):
        r, c = divmod(p - 1, grid)
        rot[p] = torch.polar(torch.ones(hd // 2, dtype=torch.float64), torch.cat([r * f, c * f]))

    def rope(x):  # (B, L, H, hd)
        z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], hd // 2, 2).contiguous())
        return torch.view_as_real(z * rot[None, :, None]).reshape(x.shape).float()

    h = torch.cat(
        [
            state["cls_embedding.embedding_table.weight"][labels][:, None],
            state["tok_embeddings.weight"][tokens[:, :-1]],
        ],
        1,
    )
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    for i in range(cfg.n_layer):
        s = {k[len(f"layers.{i}.") :]: v for k, v in state.items() if k.startswith(f"layers.{i}.")}
        x = rms(h, s["attention_norm.weight"])
        q, k, v = (x @ s["attention.wqkv.weight"].T).split([cfg.dim, nkv * hd, nkv * hd], -1)
        q = rope(q.view(*q.shape[:2], nh, hd)).transpose(1, 2)
        k = rope(k.view(*k.shape[:2], nkv, hd)).repeat_interleave(nh // nkv, 2).transpose(1, 2)
        v = v.view(*v.shape[:2], nkv, hd).repeat_interleave(nh // nkv, 2).transpose(1, 2)
        att = (q @ k.transpose(-1, -2) / math.sqrt(hd)).masked_fill(~mask, float("-inf"))
        a = (att.softmax(-1) @ v).transpose(1, 2).reshape(h.shape)
        h = h + a @ s["attention.wo.weight"].T
        x = rms(h, s["ffn_norm.weight"])
        ff = F.silu(x @ s["feed_forward.w1.weight"].T) * (x @ s["feed_forward.w3.weight"].T)
        h = h + ff @ s["feed_forward.w2.weight"].T
    return rms(h, state["norm.weight"]) @ state["output.weight"].T


def test_llamagen_module_matches_reference_and_has_llamagen_keys():
    net = _lg_net()
    names = {n.replace("layers.0.", "layers.1.") for n in net.state_dict()}
    assert {
        "cls_embedding.embedding_table.weight",
        "tok_embeddings.weight",
        "norm.weight",
        "output.weight",
        "layers.1.attention.wqkv.weight",
        "layers.1.attention.wo.weight",
        "layers.1.feed_forward.w1.weight",
        "layers.1.feed_forward.w2.weight",
        "layers.1.feed_forward.w3.weight",
        "layers.1.attention_norm.weight",
        "layers.1.ffn_norm.weight",
    } == names
    cfg = net.config
    assert net.state_dict()["cls_embedding.embedding_table.weight"].shape == (6, 32)  # + null
    assert net.state_dict()["layers.0.attention.wqkv.weight"].shape == ((2 + 2 * 1) * 16, 32)
    assert net.state_dict()["layers.0.feed_forward.w1.weight"].shape == (96, 32)  # 2/3 * 4d -> 16
    x, y = _data(24, 5)
    with torch.no_grad():
        got = net(y, x)
    ref = _reference_llamagen_logits(net.state_dict(), cfg, y, x)
    assert torch.allclose(got, ref, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(got[:, 1:], net(y, x.flip(1))[:, 1:])


@pytest.mark.parametrize("layout", ["plain", "model", "module", "orig_mod", "safetensors"])
def test_llamagen_checkpoint_loads_strictly_and_k1_is_base(layout, tmp_path):
    net = _lg_net()
    state = net.state_dict()
    path = tmp_path / ("gpt.safetensors" if layout == "safetensors" else "gpt.pt")
    if layout == "safetensors":
        save_file(state, str(path))
    else:
        prefix = {"module": "module.", "orig_mod": "_orig_mod."}.get(layout, "")
        payload = {prefix + k: v for k, v in state.items()}
        if layout == "plain":
            payload["freqs_cis"] = torch.zeros(3)  # stored by some checkpoints, derived
            payload["layers.0.attention.kv_cache.k_cache"] = torch.zeros(1, 2, 8, 16)
        torch.save(payload if layout != "model" else {"model": payload, "steps": 7}, path)
    tar = TensorARWrapper.from_pretrained(path, k=1, config=_lg_config().to_dict())
    assert _state_equal(tar.base.net.state_dict(), state)
    x, y = _data(24, 5)
    windows, _ = build_windows(x, 1, tar.base.pad_id)
    with torch.no_grad():
        assert torch.equal(tar(y, windows)[:, :, 0], net(y, x))


def test_llamagen_k4_slot0_generate_cache_and_counts(tmp_path):
    net = _lg_net()
    torch.save({"model": net.state_dict()}, tmp_path / "gpt.pt")
    tar = TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config())
    assert tar.k == 4 and tar.base.vocab == 24 and tar.base.null_class == 5
    x, y = _data(24, 5)
    windows, _ = build_windows(x, 4, tar.base.pad_id)
    with torch.no_grad():
        assert torch.equal(tar(y, windows)[:, :, 0], net(y, x))
    counts = tar.parameter_counts()
    assert counts["base"] == sum(p.numel() for p in net.parameters())
    assert counts["added"] == tar.added_parameters > 0
    _perturb(tar.encoder), _perturb(tar.decoder)
    kw = dict(temperature=0.0, cfg_scale=2.0)
    a = tar.generate([0, 4], generator=torch.Generator().manual_seed(0), **kw)
    b = tar.generate([0, 4], generator=torch.Generator().manual_seed(0), use_cache=False, **kw)
    assert a.shape == (2, T) and torch.equal(a, b)


def test_llamagen_key_mismatches_are_named(tmp_path):
    state = _lg_net().state_dict()
    del state["layers.1.ffn_norm.weight"]
    state["layers.1.adaLN.weight"] = torch.zeros(3)
    torch.save(state, tmp_path / "gpt.pt")
    with pytest.raises(CheckpointMismatchError, match=r"missing keys \(1\): layers.1.ffn_norm"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config())
    with pytest.raises(CheckpointMismatchError, match=r"unexpected keys \(1\): layers.1.adaLN"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config())
    tar = TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config(), strict=False)
    assert tar.load_report["base"]["missing"] == ["layers.1.ffn_norm.weight"]
    assert tar.load_report["base"]["unexpected"] == ["layers.1.adaLN.weight"]
    with pytest.raises(CheckpointMismatchError, match=r"tok_embeddings.weight \(checkpoint"):
        TensorARWrapper.from_pretrained(
            tmp_path / "gpt.pt", config=_lg_config(vocab_size=30), strict=False
        )


# -- refused inputs ---------------------------------------------------------------------------
def test_bad_k_and_paths_are_refused(tmp_path):
    _hf("llama").save_pretrained(tmp_path / "lm")
    torch.save(_lg_net().state_dict(), tmp_path / "gpt.pt")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="k must be >= 1"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", k=0, seq_len=T)
    with pytest.raises(TypeError, match="k"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", k=2.5, seq_len=T)
    with pytest.raises(FileNotFoundError, match="source.*does not exist"):
        TensorARWrapper.from_pretrained(tmp_path / "missing", seq_len=T)
    with pytest.raises(FileNotFoundError, match="source.*folder with none"):
        TensorARWrapper.from_pretrained(tmp_path / "empty", seq_len=T)
    with pytest.raises(ValueError, match="source.*unknown kind"):
        TensorARWrapper.from_pretrained(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="seq_len"):
        TensorARWrapper.from_pretrained(tmp_path / "lm")
    with pytest.raises(ValueError, match="seq_len=600 exceeds"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=600)  # 512 positions
    with pytest.raises(ValueError, match="config is required"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt")
    with pytest.raises(ValueError, match="seq_len only apply"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config(), seq_len=T)
    with pytest.raises(ValueError, match="format"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", format="onnx", seq_len=T)
    with pytest.raises(ValueError, match="config.block_size"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config(block_size=8))
    with pytest.raises(ValueError, match="config.model_type"):
        TensorARWrapper.from_pretrained(tmp_path / "gpt.pt", config=_lg_config(model_type="t2i"))
    with pytest.raises(ValueError, match="class_token_ids"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=T, class_token_ids=[1])
    with pytest.raises(ValueError, match="vocab"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=T, token_offset=8, vocab=33)
    # refused before the weights are read (nothing is loaded for a bad option)
    with pytest.raises(ValueError, match="device"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=T, device="gpu0")
    with pytest.raises(TypeError, match="device"):
        TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=T, device=1.5)
    with pytest.raises(ValueError, match="encoder"):
        TensorARWrapper.from_pretrained(tmp_path / "missing", seq_len=T, encoder="conv")


# -- save / load round trip -------------------------------------------------------------------
def _tiny_tar():
    base = TinyARImageModel(vocab=6, seq_len=T, n_classes=3, d=16, layers=1, heads=2)
    noiser = DiscreteTensorNoiser("sine", kernel="absorbing")
    return TensorARWrapper(base, k=3, encoder="linear", noiser=noiser, slot_weights=[1, 0.5, 2])


@pytest.mark.parametrize("kind", ["tiny", "hf", "llamagen"])
def test_save_load_round_trip(kind, tmp_path):
    if kind == "tiny":
        tar, vocab, n_cls = _tiny_tar(), 6, 3
    elif kind == "hf":
        _hf("gpt2").save_pretrained(tmp_path / "lm")
        tar = TensorARWrapper.from_pretrained(
            tmp_path / "lm", k=2, seq_len=T, token_offset=4, vocab=20, class_token_ids=[1, 2, 0]
        )
        vocab, n_cls = 20, 2
    else:
        torch.save({"model": _lg_net().state_dict()}, tmp_path / "gpt.pt")
        tar = TensorARWrapper.from_pretrained(
            tmp_path / "gpt.pt", config=_lg_config(), decoder_hidden=8, noiser=None
        )
        vocab, n_cls = 24, 5
    _perturb(tar)  # base and added parts off their saved / initial values
    tar.save_pretrained(tmp_path / "tar")
    back = TensorARWrapper.from_pretrained(tmp_path / "tar")
    assert _state_equal(back.state_dict(), tar.state_dict())
    assert back.options == tar.options and back.mask_id == tar.mask_id
    assert repr(back.noiser) == repr(tar.noiser)
    assert back.load_report["added"] == {"missing": [], "unexpected": [], "mismatched": []}
    x, y = _data(vocab, n_cls)
    windows, _ = build_windows(x, tar.k, tar.base.pad_id)
    with torch.no_grad():
        assert torch.equal(back(y, windows), tar.eval()(y, windows))
    with pytest.raises(ValueError, match="k=5 differs"):
        TensorARWrapper.from_pretrained(tmp_path / "tar", k=5)
    with pytest.raises(ValueError, match="encoder: a saved TensorAR model keeps"):
        TensorARWrapper.from_pretrained(tmp_path / "tar", encoder="linear")


def test_saved_added_weights_are_checked(tmp_path):
    tar = _tiny_tar()
    tar.save_pretrained(tmp_path)
    added = torch.load(tmp_path / "tensorar_weights.pt", weights_only=True)
    assert "encoder.out.weight" in added and not any(k.startswith("base.") for k in added)
    del added["encoder.out.weight"]
    torch.save(added, tmp_path / "tensorar_weights.pt")
    with pytest.raises(CheckpointMismatchError, match="missing keys.*encoder.out.weight"):
        TensorARWrapper.from_pretrained(tmp_path)


def test_dtype_is_carried_to_the_added_parts(tmp_path):
    lm = _hf("llama")
    lm.save_pretrained(tmp_path / "lm")
    tar = TensorARWrapper.from_pretrained(tmp_path / "lm", seq_len=T, dtype=torch.bfloat16)
    assert {p.dtype for p in tar.parameters()} == {torch.bfloat16}
    x = _data(40, 1)[0]
    windows, _ = build_windows(x, 4, tar.base.pad_id)
    ids = torch.cat([torch.full((3, 1), lm.config.bos_token_id), x[:, :-1]], 1)
    with torch.no_grad():
        ref = tar.base.net(input_ids=ids).logits
        assert torch.equal(tar(torch.zeros(3, dtype=torch.long), windows)[:, :, 0], ref)
    torch.save(_lg_net().state_dict(), tmp_path / "gpt.pt")
    tar = TensorARWrapper.from_pretrained(
        tmp_path / "gpt.pt", config=_lg_config(), dtype="bfloat16"
    )
    assert {p.dtype for p in tar.parameters()} == {torch.bfloat16}
    assert tar.generate([0, 1], temperature=0.0).shape == (2, T)
