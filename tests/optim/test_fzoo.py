"""Tests of FZOO and MeZO: estimator, invariances, memory contract, bookkeeping, claims."""

from __future__ import annotations

import hashlib
import math

import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.optim.fzoo import (
    FZOO,
    MeZO,
    direction_vector,
    flat_update_direction,
    make_closure,
    zo_fit,
)


def _quadratic(d=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(30, d, generator=g, dtype=torch.float64)
    b = torch.randn(30, generator=g, dtype=torch.float64)
    theta = nn.Parameter(torch.randn(d, generator=g, dtype=torch.float64))
    loss = lambda: 0.5 * ((a @ theta - b) ** 2).sum()
    grad = a.T @ (a @ theta.detach() - b)
    return theta, loss, grad


def test_estimator_points_along_normalized_gradient():
    theta, loss, grad = _quadratic()
    opt = FZOO([theta], lr=1e-14, eps=1e-7, n_perturb=8, seed=1)
    total = torch.zeros_like(grad)
    for _ in range(120):
        opt.step(loss)
        total += flat_update_direction(opt)
    cos = torch.nn.functional.cosine_similarity(total, grad, dim=0)
    assert cos > 0.95


def test_step_is_invariant_to_eps():
    updates = []
    for eps in (1e-3, 1e-4):
        theta, loss, _ = _quadratic()
        start = theta.detach().clone()
        FZOO([theta], lr=1e-2, eps=eps, n_perturb=8, seed=3).step(loss)
        updates.append(theta.detach() - start)
    cos = torch.nn.functional.cosine_similarity(updates[0], updates[1], dim=0)
    assert cos > 0.999
    assert abs(updates[0].norm() / updates[1].norm() - 1) < 0.01


def test_parameters_restored_and_directions_regenerated_from_seeds():
    theta, loss, _ = _quadratic()
    start = theta.detach().clone()
    seen = []

    def closure():
        seen.append(hashlib.sha256((theta.detach() - start).numpy().tobytes()).hexdigest())
        return loss()

    opt = FZOO([theta], lr=1e-2, eps=1e-3, n_perturb=4, std_floor=float("inf"), seed=5)
    opt.step(closure)  # std_floor=inf: evaluate, skip the update
    assert torch.allclose(theta.detach(), start, rtol=0, atol=1e-15)
    assert opt.skipped_steps == 1
    for seed, digest in zip(opt.last_seeds, seen[1:]):
        u = direction_vector([theta], seed, "rademacher")
        assert set(u.abs().tolist()) == {1.0}
        assert len(digest) == 64
    assert theta.grad is None and not opt.state


def test_seen_perturbation_matches_regenerated_direction():
    theta, loss, _ = _quadratic()
    start = theta.detach().clone()
    deltas = []

    def closure():
        deltas.append((theta.detach() - start).clone())
        return loss()

    opt = FZOO([theta], lr=1e-2, eps=1e-3, n_perturb=3, seed=7)
    opt.step(closure)
    for seed, delta in zip(opt.last_seeds, deltas[1:]):
        assert torch.allclose(
            delta / 1e-3, direction_vector([theta], seed, "rademacher"), atol=1e-9
        )


def test_zero_sigma_means_no_update_and_no_nan():
    theta = nn.Parameter(torch.ones(5, dtype=torch.float64))
    opt = FZOO([theta], lr=1.0, n_perturb=4)
    loss = opt.step(lambda: torch.tensor(2.0))
    assert loss == 2.0 and opt.last_sigma == 0.0 and opt.skipped_steps == 1
    # un-perturbing in place is exact up to one rounding (as in the official trainer)
    assert torch.allclose(theta.detach(), torch.ones(5, dtype=torch.float64), rtol=0, atol=1e-15)
    assert not torch.isnan(theta).any()


def test_forward_pass_counting():
    theta, loss, _ = _quadratic()
    fz = FZOO([theta], lr=1e-3, n_perturb=6)
    fz.step(loss)
    fz.step(loss)
    assert fz.forward_passes == 14
    mz = MeZO([theta], lr=1e-4, n_directions=2)
    mz.step(loss)
    assert mz.forward_passes == 4


def test_batched_and_sequential_agree():
    results = []
    for batched in (False, True):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).double().eval()
        x = torch.randn(16, 6, dtype=torch.float64)
        y = torch.randint(0, 3, (16,))
        opt = FZOO(model.parameters(), lr=1e-2, n_perturb=5, batched=batched, seed=2)
        for _ in range(3):
            opt.step(make_closure(model, (x, y), nn.functional.cross_entropy))
        results.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    assert (results[0] - results[1]).abs().max() <= 1e-10


def test_mezo_decreases_a_quadratic_in_expectation():
    finals = []
    for seed in range(10):
        theta = nn.Parameter(torch.tensor([3.0, -2.0], dtype=torch.float64))
        loss = lambda t=theta: (t**2 * torch.tensor([1.0, 4.0], dtype=torch.float64)).sum()
        start = float(loss().detach())
        opt = MeZO([theta], lr=0.02, eps=1e-4, seed=seed)
        for _ in range(50):
            opt.step(loss)
        finals.append(float(loss().detach()) / start)
    assert sum(finals) / len(finals) < 0.5


def test_bad_input_is_rejected():
    theta, loss, _ = _quadratic()
    with pytest.raises(ValueError, match="n_perturb"):
        FZOO([theta], n_perturb=1)
    with pytest.raises(ValueError, match="lr"):
        FZOO([theta], lr=0.0)
    with pytest.raises(ValueError, match="lr"):
        MeZO([theta], lr=-1.0)
    with pytest.raises(ValueError, match="scalar"):
        FZOO([theta]).step(lambda: torch.ones(3))
    with pytest.raises(TypeError, match="scalar"):
        MeZO([theta]).step(lambda: "loss")
    with pytest.raises(TypeError, match="batched"):
        FZOO([theta], batched=True).step(loss)


def test_only_trainable_parameters_move_and_no_grad_buffers():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    model[0].requires_grad_(False)  # frozen, PEFT-style
    frozen = model[0].weight.detach().clone()
    head = model[2].weight.detach().clone()
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    opt = FZOO(model.parameters(), lr=1e-2, n_perturb=4)
    history = zo_fit(
        model,
        [(x, y)],
        opt,
        loss_fn=nn.functional.cross_entropy,
        max_forward_passes=50,
        eval_every_passes=20,
    )
    assert torch.equal(model[0].weight.detach(), frozen)
    assert not torch.equal(model[2].weight.detach(), head)
    assert all(p.grad is None for p in model.parameters())
    assert history[-1]["forward_passes"] >= 50 and len(history) >= 3
    assert opt.state_bytes() == 0


def test_zo_fit_reports_progress_after_every_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 2))
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    opt = FZOO(model.parameters(), lr=1e-2, n_perturb=4)  # 5 forward passes per step
    seen = []
    zo_fit(
        model,
        [(x, y)],
        opt,
        loss_fn=nn.functional.cross_entropy,
        max_forward_passes=23,
        progress=lambda done, total, loss: seen.append((done, total, loss)),
    )
    assert [d for d, _, _ in seen] == [5, 10, 15, 20, 23]
    assert all(t == 23 for _, t, _ in seen) and all(math.isfinite(v) for _, _, v in seen)
    with pytest.raises(TypeError, match="progress"):
        zo_fit(model, [(x, y)], opt, loss_fn=nn.functional.cross_entropy, progress=3)


@pytest.mark.parametrize("name", ["passes-to-target", "minilm-peft", "normalized-sgd"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("fzoo", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"] and record["figures"]


# ------------------------------------------------------------------ resume, groups, errors
def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _batches(k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(16, 6, generator=g), torch.randint(0, 3, (16,), generator=g)) for _ in range(k)
    ]


def _decay_split(model):
    """The usual decay / no-decay split: weights decay, biases do not."""
    decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return [
        {"params": decay, "weight_decay": 0.1},
        {"params": no_decay, "weight_decay": 0.0, "eps": 3e-3, "lr": 5e-3},
    ]


def _make(cls, model, groups, **kwargs):
    params = _decay_split(model) if groups else model.parameters()
    if cls is FZOO:
        return FZOO(params, lr=1e-2, n_perturb=4, seed=11, **kwargs)
    return MeZO(params, lr=1e-3, n_directions=2, seed=11, **kwargs)


def _train(model, opt, batches):
    for xb, yb in batches:
        opt.step(make_closure(model, (xb, yb), nn.functional.cross_entropy))


@pytest.mark.parametrize("cls", [FZOO, MeZO])
@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("exact_restore", [False, True])
def test_resume_from_state_dict_is_bit_for_bit(cls, groups, exact_restore, tmp_path):
    batches = _batches(8)
    straight = _mlp()
    opt = _make(cls, straight, groups, exact_restore=exact_restore)
    _train(straight, opt, batches)

    first = _mlp()
    opt1 = _make(cls, first, groups, exact_restore=exact_restore)
    _train(first, opt1, batches[:3])
    torch.save({"model": first.state_dict(), "opt": opt1.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = torch.load(tmp_path / "ckpt.pt")  # weights_only: the state is plain data
    resumed = _mlp(seed=99)  # a fresh model copy with other weights, overwritten by the load
    resumed.load_state_dict(ckpt["model"])
    opt2 = _make(cls, resumed, groups, exact_restore=exact_restore)
    opt2._seeds = __import__("numpy").random.default_rng(12345)  # a different stream, replaced
    opt2.load_state_dict(ckpt["opt"])
    _train(resumed, opt2, batches[3:])

    for p, q in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(p, q)
    assert opt2.forward_passes == opt.forward_passes and opt2.steps == opt.steps == 8


def test_state_dict_refuses_another_configuration():
    model = _mlp()
    state = FZOO(model.parameters(), n_perturb=4).state_dict()
    with pytest.raises(ValueError, match="n_perturb"):
        FZOO(model.parameters(), n_perturb=8).load_state_dict(state)


def test_fzoo_groups_perturb_by_their_own_eps():
    model = _mlp()
    opt = _make(FZOO, model, groups=True)
    xb, yb = _batches(1)[0]
    seen = []
    start = {n: p.detach().clone() for n, p in model.named_parameters()}

    def closure():
        seen.append({n: (p.detach() - start[n]).clone() for n, p in model.named_parameters()})
        return nn.functional.cross_entropy(model(xb), yb)

    opt.step(closure)
    for n, d in seen[1].items():  # weights by +-1e-3, biases by their group's eps 3e-3
        eps = 1e-3 if n.endswith("weight") else 3e-3
        assert torch.allclose(d.abs(), torch.full_like(d, eps), rtol=1e-3)


def test_mezo_estimate_is_unbiased_in_every_group_whatever_its_eps():
    g = torch.Generator().manual_seed(0)
    a, b = (
        torch.randn(5, generator=g, dtype=torch.float64),
        torch.randn(4, generator=g, dtype=torch.float64),
    )
    u = nn.Parameter(torch.randn(5, generator=g, dtype=torch.float64))
    w = nn.Parameter(torch.randn(4, generator=g, dtype=torch.float64))
    loss = lambda: (a * u).sum() + 0.5 * (b * w).sum()  # gradients a and b / 2
    opt = MeZO([{"params": [u], "eps": 1e-3}, {"params": [w], "eps": 2e-3}], lr=1e-8, seed=3)
    total_u, total_w = torch.zeros(5, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    steps = 1500
    for _ in range(steps):
        u0, w0 = u.detach().clone(), w.detach().clone()
        opt.step(loss)
        total_u += (u0 - u.detach()) / 1e-8
        total_w += (w0 - w.detach()) / 1e-8
        with torch.no_grad():
            u.copy_(u0)
            w.copy_(w0)
    for est, grad in ((total_u / steps, a), (total_w / steps, b / 2)):
        assert torch.nn.functional.cosine_similarity(est, grad, dim=0) > 0.9
        assert 0.75 < float(est.norm() / grad.norm()) < 1.25


def test_weight_decay_of_each_group_alone():
    model = _mlp()
    groups = _decay_split(model)
    opt = FZOO(groups, lr=1e-2, n_perturb=4)
    # an update with no direction term: only each group's own decay acts
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt._apply([], "rademacher", per_eps=False)
    for n, p in model.named_parameters():
        factor = 1 - 1e-2 * 0.1 if n.endswith("weight") else 1.0
        assert torch.equal(p.detach(), before[n] * factor)


@pytest.mark.parametrize("cls", [FZOO, MeZO])
@pytest.mark.parametrize("fail_at", [1, 2, 4])
def test_closure_that_raises_leaves_weights_and_stream_as_they_were(cls, fail_at):
    xb, yb = _batches(1)[0]
    for exact in (True, False):
        model = _mlp()
        opt = _make(cls, model, groups=True, exact_restore=exact)
        before = [p.detach().clone() for p in model.parameters()]
        calls = []

        def closure(calls=calls, model=model):
            calls.append(1)
            if len(calls) == fail_at:
                raise RuntimeError("out of memory (simulated)")
            return nn.functional.cross_entropy(model(xb), yb)

        with pytest.raises(RuntimeError, match="simulated"):
            opt.step(closure)
        for p, b in zip(model.parameters(), before):
            if exact:
                assert torch.equal(p.detach(), b)
            else:  # undone in place: within one rounding of the start
                assert torch.allclose(p.detach(), b, rtol=0, atol=1e-6)
        assert opt.forward_passes == 0 and opt.steps == 0
        # the seed stream was rolled back: the retried step equals a step that never failed
        reference = _mlp()
        ref_opt = _make(cls, reference, groups=True, exact_restore=exact)
        with torch.no_grad():
            for p, b in zip(model.parameters(), before):
                p.copy_(b)
        _train(model, opt, [(xb, yb)])
        _train(reference, ref_opt, [(xb, yb)])
        for p, q in zip(model.parameters(), reference.parameters()):
            assert torch.equal(p, q)


def test_exact_restore_makes_unperturbing_bitwise():
    theta = nn.Parameter(torch.randn(1000))
    start = theta.detach().clone()
    opt = FZOO([theta], lr=1e-2, eps=1e-3, std_floor=float("inf"), exact_restore=True)
    opt.step(lambda: (theta**2).sum())  # skipped update: only perturb / restore happened
    assert torch.equal(theta.detach(), start)


def test_batched_path_with_several_groups_agrees_with_sequential():
    results = []
    for batched in (False, True):
        model = _mlp().double().eval()
        xb, yb = _batches(1)[0]
        opt = FZOO(_decay_split(model), lr=1e-2, n_perturb=5, batched=batched, seed=2)
        for _ in range(3):
            opt.step(make_closure(model, (xb.double(), yb), nn.functional.cross_entropy))
        results.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    assert (results[0] - results[1]).abs().max() <= 1e-10


def test_direction_draw_of_a_large_tensor_stays_within_one_chunk():
    """Peak bytes of tensors alive at once while perturbing one tensor of 3 chunks: bounded by
    one chunk's working set (int64 bits + the float piece, 12 bytes an entry), not the tensor's."""
    from iclr26.optim.fzoo import perturb

    big = torch.zeros(3 * perturb.CHUNK + 17)
    for kind, per_entry in (("rademacher", 12), ("gaussian", 4)):
        with _PeakTensorMemory() as mem:
            perturb.add_direction([big], 5, kind, 1e-3)
        assert mem.peak <= per_entry * perturb.CHUNK + 4096, (kind, mem.peak)
        assert mem.peak < per_entry * big.numel() / 2.5
        assert mem.now == 0
    # the draw is the same as the whole-tensor view of it
    u = direction_vector([big], 5, "rademacher")
    big.zero_()
    perturb.add_direction([big], 5, "rademacher", 1.0)
    assert torch.equal(big, u)


class _PeakTensorMemory(torch.utils._python_dispatch.TorchDispatchMode):
    """Peak bytes of tensor storages created by ops inside the block and alive at once."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = 0

    def _free(self, key):
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        import weakref

        from torch.utils._pytree import tree_flatten

        out = func(*args, **(kwargs or {}))
        inputs = {
            id(t.untyped_storage())
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                key = id(st)
                if key in self.live or key in inputs or st.nbytes() == 0:
                    continue
                self.live[key] = st.nbytes()
                self.now += st.nbytes()
                weakref.finalize(st, self._free, key)
        self.peak = max(self.peak, self.now)
        return out


def test_hyperparameters_are_validated():
    theta = nn.Parameter(torch.zeros(3))
    for kwargs, name in (
        ({"weight_decay": float("nan")}, "weight_decay"),
        ({"lr": float("inf")}, "lr"),
        ({"eps": 0.0}, "eps"),
        ({"std_floor": -1.0}, "std_floor"),
        ({"perturbation": "uniform"}, "perturbation"),
        ({"seed": -1}, "seed"),
    ):
        with pytest.raises((ValueError, TypeError), match=name):
            FZOO([theta], **kwargs)
    with pytest.raises(ValueError, match="weight_decay of param group 1"):
        MeZO(
            [
                {"params": [theta]},
                {"params": [nn.Parameter(torch.ones(2))], "weight_decay": float("nan")},
            ]
        )
