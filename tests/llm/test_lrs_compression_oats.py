"""Tests of the OATS baseline of the CAP room: the decomposition against closed forms (best
rank-r approximation, Wanda's row pruning), the non-increasing objective, the budget split, the
sequential calibration, exact parameter counts, save/load and atomic failure."""

from __future__ import annotations

import copy

import pytest
import torch

from iclr26.llm.lrs_compression import (
    LowRankSparseLinear,
    activation_norms,
    count_parameters,
    load_compressed,
    oats_budget,
    oats_decompose_weight,
    oats_prune,
    save_compressed,
)
from iclr26.llm.lrs_compression.baselines import _row_prune


def _matrix(m=24, n=40, seed=0):
    return torch.randn(m, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _llama(seed=0):
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(seed)
    cfg = tiny_llama_config(
        "test",
        num_hidden_layers=2,
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        head_dim=8,
    )
    return LlamaForCausalLM(cfg).eval()


def _calib(n=6, length=24, vocab=300, seed=0):
    return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_no_sparse_part_and_identity_scale_is_the_best_rank_r_approximation():
    W = _matrix()
    u, s, vh = torch.linalg.svd(W, full_matrices=False)
    for r in (1, 5, 12):
        U, Vf, S, info = oats_decompose_weight(W, r, 0, iterations=3, dtype=torch.float64)
        best = (u[:, :r] * s[:r]) @ vh[:r]
        assert torch.allclose(U @ Vf.mT, best, atol=1e-10)
        assert U.shape == (24, r) and Vf.shape == (40, r)
        assert not S.any() and not info["support"].any()
        # Eckart-Young: the error is the energy of the dropped singular values
        assert info["objective"][-1] == pytest.approx(float((s[r:] ** 2).sum()), rel=1e-10)


def test_rank_zero_is_wanda_row_pruning_of_the_scaled_weight():
    W = _matrix()
    d = torch.rand(40, generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 0.1
    U, Vf, S, info = oats_decompose_weight(W, 0, 15, scale=d, iterations=2, dtype=torch.float64)
    expected = _row_prune(W, W.abs() * d, 1 - 15 / 40)
    assert U.shape == (24, 0) and torch.allclose(S, expected, atol=1e-12)
    assert int(info["support"].sum(1).min()) == int(info["support"].sum(1).max()) == 15


def test_objective_is_non_increasing_and_the_result_is_unscaled():
    W = _matrix(30, 50)
    d = torch.rand(50, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 3 + 0.05
    U, Vf, S, info = oats_decompose_weight(W, 4, 12, scale=d, iterations=40, dtype=torch.float64)
    obj = info["objective"]
    assert len(obj) == 40
    assert all(b <= a * (1 + 1e-12) for a, b in zip(obj, obj[1:]))
    assert obj[-1] < 0.8 * obj[0]  # the alternation does something
    # the objective is measured in the scaled frame: ||(W - What) D||_F^2
    approx = U @ Vf.mT + S
    assert float((((W - approx) * d) ** 2).sum()) == pytest.approx(obj[-1], rel=1e-9)
    assert torch.equal(S != 0, info["support"]) or bool((S[info["support"]] == 0).sum() <= 1)
    assert (info["support"].sum(1) == 12).all()
    # a scale that is a constant multiple of the identity changes nothing after unscaling
    one = oats_decompose_weight(W, 4, 12, iterations=10, dtype=torch.float64)
    seven = oats_decompose_weight(W, 4, 12, scale=torch.full((50,), 7.0, dtype=torch.float64),
                                  iterations=10, dtype=torch.float64)  # fmt: skip
    assert torch.allclose(one[0] @ one[1].mT + one[2], seven[0] @ seven[1].mT + seven[2])


def test_scaling_protects_outlier_columns():
    W = _matrix(20, 30)
    d = torch.ones(30, dtype=torch.float64)
    d[:3] = 50.0  # three outlier input features
    plain = oats_decompose_weight(W, 2, 6, iterations=20, dtype=torch.float64)
    scaled = oats_decompose_weight(W, 2, 6, scale=d, iterations=20, dtype=torch.float64)

    def outlier_error(parts):
        U, Vf, S, _ = parts
        return float(((W - U @ Vf.mT - S)[:, :3] ** 2).sum())

    assert outlier_error(scaled) < 0.1 * outlier_error(plain)


@pytest.mark.parametrize(
    ("shape", "sparsity", "rank_ratio", "expected"),
    [
        ((128, 128), 0.5, 0.25, (8, 48)),
        ((352, 128), 0.5, 0.25, (11, 48)),
        ((128, 352), 0.5, 0.25, (11, 132)),
        ((64, 64), 0.5, 0.0, (0, 32)),
        ((64, 64), 0.5, 1.0, (16, 0)),
        ((50, 70), 0.3, 0.3, (6, 34)),
    ],
)
def test_budget_split(shape, sparsity, rank_ratio, expected):
    rank, row_nnz = oats_budget(shape, sparsity, rank_ratio)
    assert (rank, row_nnz) == expected
    m, n = shape
    assert rank * (m + n) + m * row_nnz <= (1 - sparsity) * m * n


def test_model_parameter_counts_are_exact_and_within_budget():
    model = _llama()
    dense = count_parameters(model)
    pruned = oats_prune(copy.deepcopy(model), _calib(), 0.5, iterations=5)
    expected = 0
    for module in pruned.modules():
        if isinstance(module, LowRankSparseLinear):
            rank, row_nnz = oats_budget((module.out_features, module.in_features), 0.5, 0.25)
            assert module.rank == rank and module.nnz == module.out_features * row_nnz
            expected += rank * (module.in_features + module.out_features) + module.nnz
    counts = count_parameters(pruned)
    assert counts["targets"] == expected == pruned.oats_stats_["params"]
    assert counts["targets"] <= dense["dense_targets"] // 2
    assert counts["dense_targets"] == dense["dense_targets"]
    stats = pruned.oats_stats_
    assert len(stats["modules"]) == 14 and stats["svds"] == 14 * 5
    assert stats["block_forwards"] == 2 * 2  # one batch of 6: stats pass + output pass per block


def test_sequential_calibration_uses_the_compressed_blocks_outputs():
    model = _llama()
    calib = _calib()
    pruned = oats_prune(copy.deepcopy(model), calib, 0.5, iterations=4, dtype=torch.float64)
    # block 0 sees the dense inputs: its q_proj equals the decomposition with the dense norms
    norms = activation_norms(model, calib)
    q0 = "model.layers.0.self_attn.q_proj"
    rank, row_nnz = oats_budget((32, 32), 0.5, 0.25)
    U, Vf, S, _ = oats_decompose_weight(
        model.get_submodule(q0).weight, rank, row_nnz, norms[q0], 4, torch.float64
    )
    got = pruned.get_submodule(q0).dense_weight()
    assert torch.allclose(got, U @ Vf.mT + S, atol=1e-5)
    # block 1 sees the outputs of the compressed block 0
    seen = []
    hook = pruned.model.layers[1].self_attn.q_proj.register_forward_pre_hook(
        lambda m, args: seen.append(args[0])
    )
    with torch.no_grad():
        pruned(input_ids=calib)
    hook.remove()
    q1 = "model.layers.1.self_attn.q_proj"
    scale = seen[0].reshape(-1, 32).double().pow(2).sum(0).sqrt()
    U, Vf, S, _ = oats_decompose_weight(
        model.get_submodule(q1).weight, rank, row_nnz, scale, 4, torch.float64
    )
    assert torch.allclose(pruned.get_submodule(q1).dense_weight(), U @ Vf.mT + S, atol=1e-4)
    # one pass on the dense model instead: block 1 differs
    onepass = oats_prune(copy.deepcopy(model), calib, 0.5, iterations=4, sequential=False)
    assert not torch.allclose(
        onepass.get_submodule(q1).dense_weight(), pruned.get_submodule(q1).dense_weight()
    )
    assert onepass.oats_stats_["block_forwards"] == 0


def test_oats_saves_and_loads_and_keeps_everything_at_sparsity_zero(tmp_path):
    model = _llama()
    calib = _calib(n=8)
    reference = _logits(model, calib)
    pruned = oats_prune(copy.deepcopy(model), calib, 0.5, iterations=20)
    for record in pruned.oats_stats_["modules"]:
        assert record["objective_last"] <= record["objective_first"] * (1 + 1e-5)
    save_compressed(pruned, tmp_path / "oats")
    back = load_compressed(tmp_path / "oats")
    assert torch.allclose(_logits(back, calib), _logits(pruned, calib), atol=1e-5)
    assert count_parameters(back) == count_parameters(pruned)
    # sparsity 0 with rank_ratio 0 keeps every entry: the model is unchanged
    same = oats_prune(copy.deepcopy(model), calib, 0.0, rank_ratio=0.0, iterations=1)
    assert torch.allclose(_logits(same, calib), reference, atol=1e-5)


def test_failure_leaves_the_model_unchanged(monkeypatch):
    from iclr26.llm.lrs_compression import oats as oats_module

    model = _llama()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    modules_before = [type(m) for m in model.modules()]
    calls = {"n": 0}
    original = oats_module.oats_decompose_weight

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 9:  # inside the second block, after the first one was swapped
            raise RuntimeError("simulated failure")
        return original(*args, **kwargs)

    monkeypatch.setattr(oats_module, "oats_decompose_weight", failing)
    with pytest.raises(RuntimeError, match="simulated"):
        oats_prune(model, _calib(), 0.5, iterations=2)
    assert [type(m) for m in model.modules()] == modules_before
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
