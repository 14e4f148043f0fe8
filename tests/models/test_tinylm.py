"""Tests of the shared tiny LM: corpus, tokenizer, configs, training, caching, evaluation."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.data import corpus_fingerprint, stdlib_texts
from iclr26.models import tinylm
from iclr26.models.tinylm.train import _encode_pairs

FILES = 40  # tokenizer and training stream from the first train files only: seconds, not minutes
SMALL = dict(steps=30, seq_len=64, batch=4, threads=1, max_files=FILES)  # cheap test size


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("iclr26-cache")


@pytest.fixture(autouse=True)
def _cache(cache_root, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(cache_root))


@pytest.fixture(scope="session")
def trained(cache_root):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLR26_CACHE", str(cache_root))
        return tinylm.pretrain_tiny_lm("test", **SMALL)


def test_corpus_split_deterministic_and_disjoint():
    keys = {s: [t.key for t in stdlib_texts(s, max_files=40)] for s in ("train", "val", "test")}
    again = [t.key for t in stdlib_texts("test", max_files=40)]
    assert keys["test"] == again
    assert keys["train"] and keys["test"]
    assert not set(keys["train"]) & set(keys["test"])
    assert not set(keys["train"]) & set(keys["val"])
    assert not set(keys["val"]) & set(keys["test"])
    assert tinylm.stdlib_corpus is not None
    assert corpus_fingerprint() == corpus_fingerprint()


def test_tokenizer_round_trip_digits_offsets():
    tok = tinylm.get_tokenizer(max_files=FILES)
    assert len(tok) == tinylm.VOCAB_SIZE
    for special in tinylm.SPECIAL_TOKENS:
        assert len(tok.encode(special, add_special_tokens=False)) == 1
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    text = tinylm.stdlib_corpus("test", max_files=1)[0][:2000]
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert len(ids) < len(text) / 2  # BPE merges compress code
    digits = tok.convert_ids_to_tokens(tok.encode("x = 90210", add_special_tokens=False))
    assert [t for t in digits if t.strip("Ġ").isdigit()] == list("90210")
    enc = tok("total = price * 42  # eur", return_offsets_mapping=True, add_special_tokens=False)
    source = "total = price * 42  # eur"
    assert "".join(source[a:b] for a, b in enc["offset_mapping"]) == source
    assert tinylm.get_tokenizer(max_files=FILES) is tok  # loaded once from the cache
    with pytest.raises(ValueError):
        tinylm.get_tokenizer(max_files=0)


def test_configs_match_table():
    from transformers import LlamaForCausalLM

    counts = {}
    for size in ("test", "quick"):
        cfg = tinylm.tiny_llama_config(size)
        assert cfg.num_key_value_heads < cfg.num_attention_heads  # GQA on
        assert cfg.tie_word_embeddings
        with torch.device("meta"):
            counts[size] = sum(p.numel() for p in LlamaForCausalLM(cfg).parameters())
    assert 0.3e6 < counts["test"] < 0.4e6
    assert 1.2e6 < counts["quick"] < 1.4e6
    assert tinylm.tiny_llama_config("quick", num_hidden_layers=6).num_hidden_layers == 6
    with pytest.raises(ValueError):
        tinylm.tiny_llama_config("huge")


def test_pretraining_loss_goes_down_and_cache_round_trip(trained):
    model, tok = trained
    losses = model.tinylm_meta["losses"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.5
    again, _ = tinylm.pretrain_tiny_lm("test", **SMALL)  # loaded, not retrained
    assert again.tinylm_meta["key"] == model.tinylm_meta["key"]
    ids = torch.tensor([tok.encode("def f(x):\n    return x", add_special_tokens=False)])
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, again(input_ids=ids).logits)
    with pytest.raises(ValueError):
        tinylm.pretrain_tiny_lm("test", steps=0)


def test_warmup_returns_cached_folder():
    path = tinylm.warmup("test", steps=2, seq_len=16, batch=2, threads=1, max_files=FILES)
    assert (path / "meta.json").exists() and (path / "config.json").exists()
    assert path == tinylm.pretrain_dir("test", steps=2, seq_len=16, batch=2, max_files=FILES)
    # a model trained on fewer files never shares a cache folder with the whole-split one
    assert path != tinylm.pretrain_dir("test", steps=2, seq_len=16, batch=2)


def test_load_causal_lm_routes_paths_to_from_pretrained(trained, tmp_path):
    model, tok = trained
    model.save_pretrained(tmp_path / "ckpt")
    tok.save_pretrained(tmp_path / "ckpt")
    loaded, ltok = tinylm.load_causal_lm(str(tmp_path / "ckpt"))
    ids = torch.tensor([[5, 70, 300, 9]])
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, loaded(input_ids=ids).logits)
    assert ltok.encode("a = 1", add_special_tokens=False) == tok.encode(
        "a = 1", add_special_tokens=False
    )
    with pytest.raises(TypeError):
        tinylm.load_causal_lm(3)


def test_finetune_masks_prompt_and_learns(trained, tmp_path):
    model, tok = trained
    _, masks = _encode_pairs(tok, [("abc", "de")], True, None)
    n_prompt = len(tok.encode("abc", add_special_tokens=False))
    assert not any(masks[0][:n_prompt]) and all(masks[0][n_prompt:])
    examples = [(f"{a}+{b}=", str(a + b)) for a in range(5) for b in range(5)]
    base = tinylm.continuation_logprob(model, tok.encode("2+2="), tok.encode("4") + [2])
    model_copy = type(model)(model.config)
    model_copy.load_state_dict(model.state_dict())
    tuned = tinylm.finetune_lm(
        model_copy, tok, examples, steps=40, lr=3e-3, batch=8, cache_name="test-arith", threads=1
    )
    after = tinylm.continuation_logprob(tuned, tok.encode("2+2="), tok.encode("4") + [2])
    assert after > base + 1.0
    with pytest.raises(TypeError):
        tinylm.finetune_lm(model_copy, tok, ["not a pair"], steps=1, lr=1e-3, batch=1)


def test_eval_helpers_agree_with_direct_computation(trained):
    model, tok = trained
    ids = torch.tensor(
        tok.encode(tinylm.stdlib_corpus("test", max_files=1)[0][:400], add_special_tokens=False)[
            :60
        ]
    )
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids[None]).logits[0, :-1], -1)
    nll = -logp.gather(-1, ids[1:, None]).mean()
    assert math.isclose(tinylm.perplexity(model, ids, seq_len=64), math.exp(nll), rel_tol=1e-4)
    # a sliding window scores every token once; with little context the perplexity is higher
    from iclr26.models.tinylm.evaluate import _window_nll

    with torch.no_grad():
        _, count = _window_nll(model, ids, 16, 8, 4)
    assert count == ids.numel() - 1
    lp = tinylm.continuation_logprob(model, ids[:10], ids[10:20])
    assert math.isclose(lp, float(logp[9:19].gather(-1, ids[10:20, None]).sum()), rel_tol=1e-4)
    out = tinylm.greedy_generate(model, ids[:12], max_new_tokens=6)
    seq = ids[:12][None]
    with torch.no_grad():
        for _ in range(6):
            seq = torch.cat([seq, model(input_ids=seq).logits[:, -1:].argmax(-1)], 1)
    assert torch.equal(out, seq)
    acc = tinylm.next_token_accuracy(model, ids, seq_len=64)
    assert 0.0 <= acc <= 1.0
    assert tinylm.time_it(lambda: None, n=3) >= 0.0
    with pytest.raises(ValueError):
        tinylm.perplexity(model, ["text"], seq_len=16)  # strings need a tokenizer


def test_finetune_builds_a_cache_entry_under_its_lock_and_loads_it_after(
    trained, record_build_lock
):
    from iclr26.models.tinylm import train as T

    model, tok = trained
    taken = record_build_lock(T)
    examples = [(f"{a}-", str(a)) for a in range(6)]
    copy = type(model)(model.config)
    copy.load_state_dict(model.state_dict())
    kwargs = dict(steps=2, lr=1e-3, batch=2, cache_name="test-lock", threads=1)
    first = tinylm.finetune_lm(copy, tok, examples, **kwargs)
    assert len(taken) == 1 and taken[0].parent.name == "finetune"
    assert (taken[0] / "meta.json").exists()
    again = type(model)(model.config)
    again.load_state_dict(model.state_dict())
    second = tinylm.finetune_lm(again, tok, examples, **kwargs)
    assert len(taken) == 1  # a built entry is read without the lock
    for a, b in zip(first.state_dict().values(), second.state_dict().values()):
        assert torch.equal(a, b)


def _stream_in_child(cache: str, files: int, queue) -> None:
    import os
    import time

    import numpy as np

    from iclr26.models.tinylm import tokenizer

    os.environ["ICLR26_CACHE"] = cache
    real_save = np.save

    def slow_save(*args, **kwargs):  # both children have written before either renames
        real_save(*args, **kwargs)
        time.sleep(1.0)

    tokenizer.np.save = slow_save
    tok = tinylm.get_tokenizer(max_files=files)
    queue.put(tinylm.token_stream(tok, "test", max_files=files).tolist())


def test_token_stream_built_by_two_processes_at_once(tmp_path, monkeypatch):
    """Two claims that start together both encode a split nobody has cached: neither may fail
    on the other's temporary file, both get the same stream, and no temporary file stays."""
    import multiprocessing as mp

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tinylm.get_tokenizer(max_files=FILES)  # the tokenizer first, so only the stream races
    ctx = mp.get_context("fork")  # the children run this module's function
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_stream_in_child, args=(str(tmp_path), FILES, queue)) for _ in range(2)
    ]
    for p in procs:
        p.start()
    streams = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert streams[0] == streams[1] and len(streams[0]) > 0
    assert not list(tmp_path.rglob("*.tmp.npy"))
