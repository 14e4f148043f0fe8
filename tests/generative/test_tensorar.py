import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.claims import contract_problems, run_claim
from iclr26.generative.tensorar import (
    DigitEvaluator,
    DiscreteTensorNoiser,
    TensorARWrapper,
    TensorInputEncoder,
    TensorOutputDecoder,
    TinyARImageModel,
    VQTokenizer,
    build_windows,
    frechet_distance,
    load_digits_split,
)
from iclr26.generative.tensorar.tensor import SCHEDULES

V, T = 6, 10


def _base(seed=0):
    return TinyARImageModel(vocab=V, seq_len=T, n_classes=3, d=16, layers=2, heads=2, seed=seed)


def _data(n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, V, (n, T), generator=g), torch.randint(0, 3, (n,), generator=g)


def _perturb(module, seed=1):
    """Move every parameter off its init (zero-initialised parts included)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return module


@pytest.mark.parametrize("encoder", ["query", "linear"])
@pytest.mark.parametrize("k", [1, 4])
def test_zero_init_slot0_equals_base_bit_for_bit(encoder, k):
    base = _perturb(_base())  # any base weights
    tar = TensorARWrapper(base, k=k, encoder=encoder)
    x, y = _data()
    inp, _ = build_windows(x, k, base.pad_id)
    with torch.no_grad():
        ref = base(y, x)
        out = tar(y, inp)
    assert out.shape == (5, T, k, V)
    assert torch.equal(out[:, :, 0], ref)


def test_k1_generate_equals_base_bit_for_bit():
    base = _perturb(_base())
    tar = TensorARWrapper(base, k=1)
    y = np.array([0, 1, 2, 1])
    for kw in ({}, {"top_k": 3, "temperature": 0.7}, {"cfg_scale": 2.0}):
        a = base.generate(y, generator=torch.Generator().manual_seed(3), **kw)
        b = tar.generate(y, generator=torch.Generator().manual_seed(3), **kw)
        assert torch.equal(a, b)


def test_slot0_is_base_head_after_training_too():
    base = _base()
    tar = _perturb(TensorARWrapper(base, k=3))
    x, y = _data()
    inp, _ = build_windows(x, 3, base.pad_id)
    with torch.no_grad():
        h, _ = base.body(tar._embed_windows(y, inp))
        assert torch.equal(tar(y, inp)[:, :, 0], base.head(h))
        assert not torch.equal(tar(y, inp)[:, :, 1], base.head(h))


def test_windows_targets_leakage_and_pad():
    x = torch.arange(1, T + 1)[None] % V  # x_p = p mod V
    k, pad = 4, V
    inp, tgt = build_windows(x, k, pad)
    assert inp.shape == tgt.shape == (1, T, k)
    padded = torch.cat([torch.tensor([pad]), x[0], torch.full((k - 1,), pad)])  # index p -> x_p
    for s in range(T):  # step t = s + 1
        assert torch.equal(tgt[0, s], padded[s + 1 : s + 1 + k])  # x_t .. x_{t+k-1}
        assert torch.equal(inp[0, s], padded[s : s + k])  # x_{t-1} .. x_{t+k-2}
        if s:
            assert torch.equal(inp[0, s], tgt[0, s - 1])  # input = previous target window
        assert torch.equal(inp[0, s, 1:], tgt[0, s, :-1])  # the overlap that leaks
    assert inp[0, 0, 0] == pad  # class slot
    assert (tgt[0, -1, 1:] == pad).all() and tgt[0, -1, 0] == x[0, -1]
    assert int((tgt == pad).sum()) == k * (k - 1) // 2


def test_loss_is_slot_weighted_ce_without_pad_targets():
    base = _base()
    w = [1.0, 0.5, 0.25]
    tar = _perturb(TensorARWrapper(base, k=3, noiser=None, slot_weights=w))
    x, y = _data()
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    with torch.no_grad():
        loss = tar.loss(y, x, g1)
        inp, tgt = tar.training_windows(x, g2)
        logits = tar(y, inp)
    per_slot = []
    for j in range(3):
        keep = tgt[:, :, j] != base.pad_id
        per_slot.append(F.cross_entropy(logits[:, :, j][keep], tgt[:, :, j][keep]))
    ref = sum(wj * c for wj, c in zip(w, per_slot)) / sum(w)
    assert torch.allclose(loss, ref, atol=1e-6)


def test_first_step_drafts_are_noise_and_no_noise_elsewhere_without_noiser():
    tar = TensorARWrapper(_base(), k=4, noiser=None)
    x, _ = _data(n=200)
    inp, tgt = tar.training_windows(x, torch.Generator().manual_seed(0))
    clean, _ = build_windows(x, 4, V)
    assert torch.equal(inp[:, 1:], clean[:, 1:])  # no noising after step 1
    assert torch.equal(inp[:, 0, 0], clean[:, 0, 0])
    assert (inp[:, 0, 1:] != clean[:, 0, 1:]).float().mean() > 0.7  # 1 - 1/V of them change


def test_first_step_pad_and_greedy_drafts(tmp_path):
    """The reconstructed first step and draft rule are options: PAD drafts in the first
    window (training and generation), argmax drafts with a sampled commit, a linear output
    decoder; saved and reloaded."""
    tar = TensorARWrapper(
        _base(), k=4, noiser=None, decoder="linear", first_step="pad", draft_sampling="greedy"
    )
    x, _ = _data(n=20)
    inp, _ = tar.training_windows(x, torch.Generator().manual_seed(0))
    clean, _ = build_windows(x, 4, V)
    assert (inp[:, 0, 1:] == V).all() and torch.equal(inp[:, 1:], clean[:, 1:])
    _perturb(tar)
    seen, logits = [], []
    orig = tar._embed_windows

    def spy(labels, windows, start=0):
        seen.append(windows.clone())
        return orig(labels, windows, start)

    tar._embed_windows = spy
    hook = tar.decoder.register_forward_hook(lambda mod, args, out: logits.append(out[:, -1]))
    _, drafts = tar.generate(np.array([1, 2]), generator=torch.Generator(), return_drafts=True)
    hook.remove()
    assert (seen[0][:, 0, 1:] == V).all()  # no drafts yet: PAD, as in training
    for s in range(T):
        assert torch.equal(drafts[s][:, 1:], logits[s][:, 1:].argmax(-1))
    assert not all(torch.equal(drafts[s][:, 0], logits[s][:, 0].argmax(-1)) for s in range(T))
    del tar._embed_windows
    back = TensorARWrapper.from_pretrained(tar.save_pretrained(tmp_path / "m"))
    assert (back.first_step, back.draft_sampling, back.decoder.kind) == ("pad", "greedy", "linear")
    assert all(
        torch.equal(a, b) for a, b in zip(tar.state_dict().values(), back.state_dict().values())
    )


def test_noiser_schedules():
    for name in SCHEDULES:
        for k in (2, 4, 8):
            b = DiscreteTensorNoiser(schedule=name).beta(k)
            assert b[0] == 0 and b[-1] == (0.5 if name == "constant" else 1)
            assert (b[1:] >= b[:-1]).all()
    assert DiscreteTensorNoiser("constant", level=0.3).beta(4).tolist() == pytest.approx(
        [0, 0.3, 0.3, 0.3]
    )
    assert DiscreteTensorNoiser("constant").beta(1).tolist() == [0.0]
    u = torch.tensor([0, 1 / 3, 2 / 3, 1])
    # default exponential: the paper's exponent j / (k/2), rescaled to [0, 1]; by hand for
    # k = 4: (e^0.5 - 1) / (e^1.5 - 1) = 0.18632, (e - 1) / (e^1.5 - 1) = 0.49352
    assert DiscreteTensorNoiser().beta(4).tolist() == pytest.approx(
        [0.0, 0.18632, 0.49352, 1.0], abs=1e-5
    )
    # k = 8: exponent j / 4; slot 2 is (e^0.5 - 1) / (e^1.75 - 1) = 0.13644
    assert DiscreteTensorNoiser().beta(8)[2].item() == pytest.approx(0.13644, abs=1e-5)
    exp = (torch.exp(3 * u) - 1) / (math.e**3 - 1)  # a float lam: (e^{lam u} - 1) / (e^lam - 1)
    assert torch.allclose(DiscreteTensorNoiser(lam=3.0).beta(4), exp.float(), atol=1e-6)
    assert torch.allclose(DiscreteTensorNoiser("linear").beta(4), u, atol=1e-6)
    assert torch.allclose(DiscreteTensorNoiser("sqrt").beta(4), u.sqrt(), atol=1e-6)
    assert torch.allclose(DiscreteTensorNoiser("sine").beta(4), torch.sin(math.pi * u / 2))
    assert DiscreteTensorNoiser().beta(1).tolist() == [0.0]


def test_noiser_rates_and_uniform_replacements():
    k, vocab, pad = 4, 8, 8
    noiser = DiscreteTensorNoiser("linear")
    w = torch.randint(0, vocab, (25_000, 1, k), generator=torch.Generator().manual_seed(0))
    w[:10, 0, 2] = pad
    out = noiser(w, vocab, pad, torch.Generator().manual_seed(1))
    assert (out[:10, 0, 2] == pad).all()  # PAD never noised
    assert out.max() < vocab or (out == pad).sum() == 10  # PAD never drawn
    rate = (out != w).float().mean((0, 1))
    expected = noiser.beta(k) * (1 - 1 / vocab)
    assert torch.allclose(rate, expected, atol=0.02)
    assert (out[:, 0, 0] == w[:, 0, 0]).all()
    last = out[10:, 0, 3]  # beta = 1: every entry is a fresh uniform draw
    freq = torch.bincount(last, minlength=vocab).float() / len(last)
    assert torch.allclose(freq, torch.full((vocab,), 1 / vocab), atol=0.01)
    # tau_max scales the schedule per sequence: mean rate is beta * tau_max / 2
    out2 = DiscreteTensorNoiser("linear", tau_max=0.5)(w, vocab, pad, torch.Generator())
    rate2 = (out2 != w).float().mean((0, 1))[3]
    assert abs(rate2 - 0.25 * (1 - 1 / vocab)) < 0.02


def test_causality_of_the_wrapper():
    base = _base()
    tar = _perturb(TensorARWrapper(base, k=3))
    x, y = _data(n=2)
    p = 7  # change x_p: windows of steps t >= p - k + 2 contain it
    x2 = x.clone()
    x2[:, p - 1] = (x2[:, p - 1] + 1) % V
    with torch.no_grad():
        a = tar(y, build_windows(x, 3, V)[0])
        b = tar(y, build_windows(x2, 3, V)[0])
    first = p - 3 + 2  # first affected step, 1-based
    assert torch.equal(a[:, : first - 1], b[:, : first - 1])
    assert not torch.allclose(a[:, first - 1], b[:, first - 1])


def test_generate_commits_refines_and_cache_agrees():
    base = _base()
    tar = _perturb(TensorARWrapper(base, k=4))
    y = np.array([0, 2, 1])
    out, drafts = tar.generate(y, generator=torch.Generator().manual_seed(0), return_drafts=True)
    assert out.shape == (3, T) and out.min() >= 0 and out.max() < V
    assert drafts.shape == (T, 3, 4)
    assert torch.equal(out, drafts[:, :, 0].T)  # position t is slot 0 of step t
    g = torch.Generator().manual_seed(2)
    a = tar.generate(y, temperature=0.0, cfg_scale=1.5, generator=g)
    g = torch.Generator().manual_seed(2)
    b = tar.generate(y, temperature=0.0, cfg_scale=1.5, generator=g, use_cache=False)
    assert torch.equal(a, b)


def test_drafts_feed_the_next_step():
    """The input window of step t is the previous step's sampled window (slot 0 committed)."""
    base = _base()
    tar = _perturb(TensorARWrapper(base, k=3))
    seen = []
    orig = tar._embed_windows

    def spy(labels, windows, start=0):
        seen.append(windows.clone())
        return orig(labels, windows, start)

    tar._embed_windows = spy
    _, drafts = tar.generate(np.array([1]), generator=torch.Generator(), return_drafts=True)
    assert len(seen) == T  # one window (one body pass) per position
    for s in range(1, T - 1):
        assert torch.equal(seen[s][0, 0], drafts[s - 1, 0])
    assert seen[-1][0, 0, 2] == base.pad_id and seen[-1][0, 0, 1] < V  # beyond T: PAD


def test_fit_reduces_loss_and_base_trains():
    x, y = _data(n=40)
    base = _base()
    lb = base.fit(x, y, steps=30, lr=3e-3, batch_size=16)
    tar = TensorARWrapper(_base(), k=2)
    lt = tar.fit(x, y, steps=30, lr=3e-3, batch_size=16)
    assert np.mean(lb[-5:]) < lb[0] and np.mean(lt[-5:]) < lt[0]
    frozen = _base()
    before = [p.clone() for p in frozen.parameters()]
    TensorARWrapper(frozen, k=2).fit(x, y, steps=3, train_base=False)
    assert all(torch.equal(a, b) for a, b in zip(before, frozen.parameters()))


def test_encoder_decoder_shapes_and_zero_init():
    enc, dec = TensorInputEncoder(8, 3, heads=2), TensorOutputDecoder(8, 3)
    e0, slots = torch.randn(2, 5, 8), torch.randn(2, 5, 2, 8)
    assert torch.equal(enc(e0, slots), e0)
    head = torch.nn.Linear(8, 4)
    out = dec(torch.randn(2, 5, 8), head)
    assert out.shape == (2, 5, 3, 4)
    assert torch.equal(out[:, :, 1], out[:, :, 0])  # zero-init drafts = base head
    with pytest.raises(ValueError, match="k"):
        TensorARWrapper(_base(), k=0)
    lin = TensorOutputDecoder(8, 3, kind="linear")  # U_j one zero-initialised linear map
    out = lin(torch.randn(2, 5, 8), head)
    assert torch.equal(out[:, :, 2], out[:, :, 0]) and lin.w.shape == (2, 8, 8)
    base = _base()
    x, y = _data()
    windows, _ = build_windows(x, 4, base.pad_id)
    tar = TensorARWrapper(base, k=4, decoder="linear")
    with torch.no_grad():
        assert torch.equal(tar(y, windows)[:, :, 0], base(y, x))  # slot 0 is still the base


def test_frechet_distance_matches_scipy_and_is_zero_on_itself():
    from scipy import linalg

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(400, 5)), rng.normal(0.5, 2.0, size=(300, 5)) @ rng.normal(size=(5, 5))
    sa, sb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    mu = a.mean(0) - b.mean(0)
    ref = mu @ mu + np.trace(sa + sb - 2 * np.real(linalg.sqrtm(sa @ sb)))
    assert frechet_distance(a, b) == pytest.approx(ref, rel=1e-8)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)


def test_vq_tokenizer_roundtrip_and_evaluator():
    xtr, ytr, xte, yte = load_digits_split()
    assert len(xtr) == 1500 and len(xte) == 297 and xtr.shape[1:] == (8, 8)
    vq = VQTokenizer(codebook_size=16, patch=2).fit(xtr[:300])
    tok = vq.encode(xtr[:50])
    assert tok.shape == (50, 16) and vq.seq_len == 16
    rec = vq.decode(tok)
    assert np.array_equal(vq.encode(rec), tok)  # centroids encode to themselves
    assert np.abs(rec - xtr[:50]).mean() < np.abs(xtr[:50] - xtr[:50].mean()).mean()
    ev = DigitEvaluator(epochs=8).fit(xtr[:300], ytr[:300])
    assert ev.features(xte[:20]).shape == (20, 64)
    assert ev.accuracy(xte, yte) > 0.5


@pytest.mark.parametrize("schedule", ["constant", "exponential"])
def test_absorbing_kernel_rates_and_only_mask_or_original(schedule):
    k, vocab, pad = 4, 8, 8
    mask = pad + 1
    noiser = DiscreteTensorNoiser(schedule, kernel="absorbing", level=0.4)
    w = torch.randint(0, vocab, (25_000, 1, k), generator=torch.Generator().manual_seed(0))
    w[:10, 0, 2] = pad
    out = noiser(w, vocab, pad, torch.Generator().manual_seed(1))
    assert (out[:10, 0, 2] == pad).all()  # PAD never masked
    assert ((out == w) | (out == mask)).all()  # never a codebook token other than the original
    rate = (out == mask).float().mean((0, 1))  # every corruption shows: rate = beta exactly
    assert torch.allclose(rate, noiser.beta(k), atol=0.02)
    assert (out[:, 0, 0] == w[:, 0, 0]).all()
    assert noiser.always_corrupted(k).tolist() == [False, False, False, schedule != "constant"]
    out7 = noiser(w, vocab, pad, torch.Generator().manual_seed(1), mask_id=20)
    assert torch.equal(out7 == 20, out == mask)  # an explicit mask id, same draws
    with pytest.raises(ValueError, match="mask_id"):
        noiser(w, vocab, pad, mask_id=3)  # a codebook id cannot be the mask
    with pytest.raises(ValueError, match="mask_id"):
        noiser(w, vocab, pad, mask_id=pad)


def test_constant_schedule_uniform_rates():
    k, vocab, pad = 4, 8, 8
    noiser = DiscreteTensorNoiser("constant", level=0.6)
    w = torch.randint(0, vocab, (25_000, 1, k), generator=torch.Generator().manual_seed(0))
    rate = (noiser(w, vocab, pad, torch.Generator().manual_seed(2)) != w).float().mean((0, 1))
    expected = torch.tensor([0, 0.6, 0.6, 0.6]) * (1 - 1 / vocab)
    assert torch.allclose(rate, expected, atol=0.02)


def test_noiser_validates_arguments():
    for kw, arg in (({"kernel": "mask"}, "kernel"), ({"schedule": "cosine"}, "schedule"),
                    ({"level": 0.0}, "level"), ({"level": 1.5}, "level"),
                    ({"level": float("nan")}, "level"), ({"lam": -1.0}, "lam")):  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=arg):
            DiscreteTensorNoiser(**kw)


def _absorbing(k, base=None):
    noiser = DiscreteTensorNoiser(kernel="absorbing")
    return TensorARWrapper(base if base is not None else _base(), k=k, noiser=noiser)


@pytest.mark.parametrize("k", [1, 4])
def test_absorbing_wrapper_is_base_at_init_and_k1_bit_for_bit(k):
    base = _perturb(_base())
    tar = _absorbing(k, base)
    assert tar.mask_id == base.pad_id + 1 and tar.mask_emb.shape == (16,)
    x, y = _data()
    inp, _ = build_windows(x, k, base.pad_id)
    inp = tar.noiser(inp, V, base.pad_id, torch.Generator().manual_seed(0), mask_id=tar.mask_id)
    with torch.no_grad():
        assert torch.equal(tar(y, inp)[:, :, 0], base(y, x))
    if k == 1:
        labels = np.array([0, 1, 2, 1])
        for kw in ({}, {"cfg_scale": 2.0}):
            a = base.generate(labels, generator=torch.Generator().manual_seed(3), **kw)
            b = tar.generate(labels, generator=torch.Generator().manual_seed(3), **kw)
            assert torch.equal(a, b)


def test_absorbing_wrapper_embeds_mask_and_trains():
    base = _base()
    tar = _perturb(_absorbing(4, base))
    x, y = _data(n=200)
    inp, tgt = tar.training_windows(x, torch.Generator().manual_seed(0))
    mask = tar.mask_id
    assert (inp[:, 0, 1:] == mask).all()  # first step: fully corrupted = all mask
    assert ((inp[:, 1:, 3] == mask) | (inp[:, 1:, 3] == base.pad_id)).all()  # beta(3) = 1
    assert (inp[..., 0] != mask).all()
    assert 0.2 < float((inp[:, 1:, 2] == mask).float().mean()) < 0.45  # beta(2) = 0.33
    # the mask embedding is what a masked draft slot sees: moving it moves the drafts' logits
    with torch.no_grad():
        a = tar(y, inp)
        tar.mask_emb.add_(1.0)
        b = tar(y, inp)
    assert not torch.allclose(a[:, :, 1:], b[:, :, 1:])
    with pytest.raises(ValueError, match="slot 0"):
        tar(y, torch.full_like(inp, mask))
    with pytest.raises(ValueError, match="windows"):
        tar(y, inp + 2)  # ids beyond the mask token
    before = tar.mask_emb.detach().clone()
    losses = tar.fit(x[:40], y[:40], steps=20, lr=3e-3, batch_size=16)
    assert np.mean(losses[-5:]) < losses[0]
    assert not torch.equal(before, tar.mask_emb.detach())
    assert tar.added_parameters == TensorARWrapper(_base(), k=4).added_parameters + 16


def test_absorbing_generate_feeds_mask_where_training_always_masks():
    base = _base()
    tar = _perturb(_absorbing(4, base))
    seen = []
    orig = tar._embed_windows

    def spy(labels, windows, start=0):
        seen.append(windows.clone())
        return orig(labels, windows, start)

    tar._embed_windows = spy
    out, drafts = tar.generate(np.array([1, 0]), generator=torch.Generator(), return_drafts=True)
    assert out.max() < V and torch.equal(out, drafts[:, :, 0].T)  # no mask is ever committed
    mask, pad = tar.mask_id, base.pad_id
    assert (seen[0][:, 0, 1:] == mask).all()  # no drafts yet
    for s in range(1, T):
        last = seen[s][:, 0, 3]
        assert ((last == mask) | (last == pad)).all()  # beta(3) = 1: the mask, as in training
        assert torch.equal(seen[s][:, 0, :3], drafts[s - 1, :, :3]) or s > T - 3  # drafts fed
        assert (seen[s][:, 0, :3] != mask).all()
    g = torch.Generator().manual_seed(4)
    a = tar.generate(np.array([1, 0]), temperature=0.0, generator=g)
    g = torch.Generator().manual_seed(4)
    b = tar.generate(np.array([1, 0]), temperature=0.0, generator=g, use_cache=False)
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "name",
    [
        "quality-gain",
        "class-fidelity",
        "noising-needed",
        "latency",
        "schedule-ablation",
        "k-ablation",
    ],
)
def test_claims_smoke(name, tmp_path):
    rec = run_claim("tensorar", name, scale="smoke", out_dir=tmp_path)
    assert rec["verdict"] in {"reproduced", "not reproduced", "inconclusive"}, rec
    assert not contract_problems(rec), contract_problems(rec)
