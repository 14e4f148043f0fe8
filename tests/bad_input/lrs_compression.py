"""Bad-input cases for the CAP room (read by tests/framework/test_bad_input.py)."""

import numpy as np
import torch

from iclr26.llm.lrs_compression import (
    CAPCompressor,
    LowRankSparseLinear,
    ProbabilisticAllocator,
    RPCACandidates,
    SparseGPT,
    activation_norms,
    allocation_summary,
    count_parameters,
    finalize,
    linear_flops_per_token,
    load_compressed,
    magnitude_prune,
    oats_budget,
    oats_decompose_weight,
    oats_prune,
    owl_layer_sparsity,
    project_budget,
    rpca,
    save_compressed,
    score_function_gradient,
    shrink,
    singular_value_threshold,
    sparsegpt_prune,
    sparsegpt_prune_weight,
    svd_uniform,
    uniform_allocation,
    uniform_lrs,
    wanda_prune,
)

NAN, INF = float("nan"), float("inf")
W = torch.randn(6, 5, generator=torch.Generator().manual_seed(0))
W_NAN = W.clone()
W_NAN[1, 2] = NAN
W_INF = W.clone()
W_INF[0, 0] = INF


def _pool():
    return RPCACandidates.from_matrix(W)


def _model():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    cfg = tiny_llama_config(
        "test", num_hidden_layers=1, vocab_size=64, hidden_size=16, intermediate_size=24, head_dim=4
    )
    return LlamaForCausalLM(cfg).eval()


def _calib(n=2, length=8, high=64):
    return torch.randint(0, high, (n, length), generator=torch.Generator().manual_seed(0))


def _untouched_after(call):
    """Run a failing call on a model and re-raise only if the model came out unchanged."""
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        call(model)
    except (ValueError, TypeError) as exc:
        after = model.state_dict()
        if set(after) != set(before) or any(not torch.equal(before[k], after[k]) for k in before):
            raise AssertionError("the model was modified by a failing call") from exc
        raise


def _cap_fit_budget(budget):
    return lambda: _untouched_after(
        lambda m: CAPCompressor(steps=1).fit(m, _calib(), budget=budget)
    )


def _gpt():
    return SparseGPT(torch.nn.Linear(5, 6))


def _sparsegpt(**kwargs):
    options = {"sparsity": 0.5, **kwargs}
    calib = options.pop("calib", None)
    return lambda: _untouched_after(
        lambda m: sparsegpt_prune(m, _calib() if calib is None else calib, **options)
    )


def _oats(**kwargs):
    options = {"sparsity": 0.5, "iterations": 1, **kwargs}
    calib = options.pop("calib", None)
    return lambda: _untouched_after(
        lambda m: oats_prune(m, _calib() if calib is None else calib, **options)
    )


H5 = torch.eye(5)


def _cost():
    return np.ones(4)


CASES = [
    # rpca
    ("rpca", "nan", lambda: rpca(W_NAN), ValueError, "W"),
    ("rpca", "inf", lambda: rpca(W_INF), ValueError, "W"),
    ("rpca", "empty", lambda: rpca(torch.zeros(0, 3)), ValueError, "W"),
    ("rpca", "shape", lambda: rpca(torch.randn(3)), ValueError, "W"),
    ("rpca", "dtype", lambda: rpca(torch.ones(3, 3, dtype=torch.long)), TypeError, "W"),
    ("rpca", "range", lambda: rpca(W, lam=-1.0), ValueError, "lam"),
    ("rpca", "range", lambda: rpca(W, rho=1.0), ValueError, "rho"),
    ("rpca", "range", lambda: rpca(W, tol=NAN), ValueError, "tol"),
    ("rpca", "range", lambda: rpca(W, max_iter=0), ValueError, "max_iter"),
    ("rpca", "other", lambda: rpca(W, svd="qr"), ValueError, "svd"),
    ("shrink", "nan", lambda: shrink(W_NAN, 0.1), ValueError, "x"),
    ("shrink", "range", lambda: shrink(W, -0.1), ValueError, "tau"),
    (
        "singular_value_threshold",
        "shape",
        lambda: singular_value_threshold(torch.ones(3), 0.1),
        ValueError,
        "x",
    ),
    (
        "singular_value_threshold",
        "inf",
        lambda: singular_value_threshold(W_INF, 0.1),
        ValueError,
        "x",
    ),
    (
        "singular_value_threshold",
        "range",
        lambda: singular_value_threshold(W, 0.1, rank_hint=0),
        ValueError,
        "rank_hint",
    ),
    # pools, projection, estimator, finalisation
    ("RPCACandidates", "nan", lambda: RPCACandidates.from_matrix(W_NAN), ValueError, "W"),
    (
        "RPCACandidates",
        "range",
        lambda: RPCACandidates.from_matrix(W, cost_sparse=0),
        ValueError,
        "cost_sparse",
    ),
    ("project_budget", "nan", lambda: project_budget([0.1, NAN], [1, 1], 1.0), ValueError, "z"),
    (
        "project_budget",
        "shape",
        lambda: project_budget([0.1, 0.2], [1, 1, 1], 1.0),
        ValueError,
        "cost",
    ),
    (
        "project_budget",
        "range",
        lambda: project_budget([0.1, 0.2], [1, 0], 1.0),
        ValueError,
        "cost",
    ),
    (
        "project_budget",
        "range",
        lambda: project_budget([0.1, 0.2], [1, 1], -1.0),
        ValueError,
        "budget",
    ),
    ("project_budget", "empty", lambda: project_budget([], [], 1.0), ValueError, "z"),
    (
        "score_function_gradient",
        "range",
        lambda: score_function_gradient([1.0], [[1, 0]], [0.5, 1.5]),
        ValueError,
        "probabilities",
    ),
    (
        "score_function_gradient",
        "shape",
        lambda: score_function_gradient([1.0], [[1, 0, 1]], [0.5, 0.5]),
        ValueError,
        "masks",
    ),
    (
        "score_function_gradient",
        "shape",
        lambda: score_function_gradient([1.0, 2.0], [[1, 0]], [0.5, 0.5]),
        ValueError,
        "loss",
    ),
    (
        "score_function_gradient",
        "nan",
        lambda: score_function_gradient([NAN], [[1, 0]], [0.5, 0.5]),
        ValueError,
        "loss",
    ),
    (
        "finalize",
        "range",
        lambda: finalize([_pool()], np.full(_pool().n_candidates, 0.5), 0.0),
        ValueError,
        "budget",
    ),
    (
        "finalize",
        "range",
        lambda: finalize([_pool()], np.full(_pool().n_candidates, 0.5), 1e6),
        ValueError,
        "budget",
    ),
    (
        "finalize",
        "shape",
        lambda: finalize([_pool()], np.full(3, 0.5), 5.0),
        ValueError,
        "probabilities",
    ),
    ("finalize", "type", lambda: finalize([W], np.full(3, 0.5), 5.0), TypeError, "pools"),
    ("finalize", "empty", lambda: finalize([], np.full(3, 0.5), 5.0), ValueError, "pools"),
    (
        "uniform_allocation",
        "range",
        lambda: uniform_allocation([_pool()], 1.5),
        ValueError,
        "keep_fraction",
    ),
    (
        "uniform_allocation",
        "range",
        lambda: uniform_allocation([_pool()], 0.0),
        ValueError,
        "keep_fraction",
    ),
    (
        "uniform_allocation",
        "other",
        lambda: uniform_allocation([_pool()], 0.5, score="random"),
        ValueError,
        "score",
    ),
    ("ProbabilisticAllocator", "range", lambda: ProbabilisticAllocator(lr=0.0), ValueError, "lr"),
    (
        "ProbabilisticAllocator",
        "range",
        lambda: ProbabilisticAllocator(beta=1.0),
        ValueError,
        "beta",
    ),
    (
        "ProbabilisticAllocator",
        "range",
        lambda: ProbabilisticAllocator(steps=-1),
        ValueError,
        "steps",
    ),
    (
        "ProbabilisticAllocator",
        "other",
        lambda: ProbabilisticAllocator(init="zeros"),
        ValueError,
        "init",
    ),
    (
        "ProbabilisticAllocator",
        "range",
        lambda: ProbabilisticAllocator(steps=1).fit([_pool()], 1e6, lambda m: 0.0),
        ValueError,
        "budget",
    ),
    (
        "ProbabilisticAllocator",
        "type",
        lambda: ProbabilisticAllocator(steps=1).fit([_pool()], 5.0, None),
        TypeError,
        "loss_fn",
    ),
    # layer
    (
        "LowRankSparseLinear",
        "shape",
        lambda: LowRankSparseLinear(5, 6, torch.ones(5, 2), torch.ones(5, 2)),
        ValueError,
        "U",
    ),
    (
        "LowRankSparseLinear",
        "shape",
        lambda: LowRankSparseLinear(5, 6, torch.ones(6, 2), torch.ones(5, 3)),
        ValueError,
        "rank",
    ),
    (
        "LowRankSparseLinear",
        "nan",
        lambda: LowRankSparseLinear(5, 6, torch.full((6, 1), NAN), torch.ones(5, 1)),
        ValueError,
        "U",
    ),
    (
        "LowRankSparseLinear",
        "range",
        lambda: LowRankSparseLinear(
            5,
            6,
            sparse_rows=torch.tensor([6]),
            sparse_cols=torch.tensor([0]),
            sparse_values=torch.ones(1),
        ),
        ValueError,
        "sparse_rows",
    ),
    (
        "LowRankSparseLinear",
        "shape",
        lambda: LowRankSparseLinear(
            5,
            6,
            sparse_rows=torch.tensor([1, 2]),
            sparse_cols=torch.tensor([0]),
            sparse_values=torch.ones(1),
        ),
        ValueError,
        "same length",
    ),
    ("LowRankSparseLinear", "range", lambda: LowRankSparseLinear(0, 6), ValueError, "in_features"),
    # compressor: budget above the dense size or <= 0, the model left unchanged
    ("CAPCompressor", "range", _cap_fit_budget(10**9), ValueError, "budget"),
    ("CAPCompressor", "range", _cap_fit_budget(0), ValueError, "budget"),
    ("CAPCompressor", "range", _cap_fit_budget(-5), ValueError, "budget"),
    ("CAPCompressor", "nan", _cap_fit_budget(NAN), ValueError, "budget"),
    ("CAPCompressor", "range", lambda: CAPCompressor(ratio=1.0), ValueError, "ratio"),
    ("CAPCompressor", "range", lambda: CAPCompressor(ratio=-0.1), ValueError, "ratio"),
    ("CAPCompressor", "range", lambda: CAPCompressor(lr=NAN), ValueError, "lr"),
    ("CAPCompressor", "other", lambda: CAPCompressor(objective="mse"), ValueError, "objective"),
    (
        "CAPCompressor",
        "other",
        lambda: CAPCompressor(target_modules=("lm_head",)),
        ValueError,
        "target_modules",
    ),
    ("CAPCompressor", "type", lambda: CAPCompressor(model=42), TypeError, "model"),
    (
        "CAPCompressor",
        "range",
        lambda: _untouched_after(lambda m: CAPCompressor(steps=1).fit(m, _calib(high=1000))),
        ValueError,
        "calib_input_ids",
    ),
    (
        "CAPCompressor",
        "dtype",
        lambda: _untouched_after(lambda m: CAPCompressor(steps=1).fit(m, _calib().float())),
        TypeError,
        "calib_input_ids",
    ),
    (
        "CAPCompressor",
        "shape",
        lambda: _untouched_after(lambda m: CAPCompressor(steps=1).fit(m, _calib()[0])),
        ValueError,
        "calib_input_ids",
    ),
    (
        "CAPCompressor",
        "empty",
        lambda: _untouched_after(
            lambda m: CAPCompressor(steps=1).fit(m, torch.zeros(0, 8, dtype=torch.long))
        ),
        ValueError,
        "calib_input_ids",
    ),
    (
        "CAPCompressor",
        "other",
        lambda: _untouched_after(
            lambda m: CAPCompressor(steps=1, target_modules=("nope",)).fit(m, _calib())
        ),
        ValueError,
        "target_modules",
    ),
    (
        "CAPCompressor",
        "other",
        lambda: CAPCompressor().transform(_model()),
        RuntimeError,
        "not fitted",
    ),
    # baselines
    (
        "wanda_prune",
        "range",
        lambda: _untouched_after(lambda m: wanda_prune(m, _calib(), 1.0)),
        ValueError,
        "sparsity",
    ),
    (
        "wanda_prune",
        "nan",
        lambda: _untouched_after(lambda m: wanda_prune(m, _calib(), NAN)),
        ValueError,
        "sparsity",
    ),
    (
        "wanda_prune",
        "range",
        lambda: _untouched_after(lambda m: wanda_prune(m, _calib(high=1000), 0.5)),
        ValueError,
        "calib_input_ids",
    ),
    (
        "magnitude_prune",
        "range",
        lambda: _untouched_after(lambda m: magnitude_prune(m, -0.5)),
        ValueError,
        "sparsity",
    ),
    ("magnitude_prune", "type", lambda: magnitude_prune("", 0.5), ValueError, "model"),
    (
        "svd_uniform",
        "range",
        lambda: _untouched_after(lambda m: svd_uniform(m, 1.0)),
        ValueError,
        "ratio",
    ),
    (
        "uniform_lrs",
        "range",
        lambda: _untouched_after(lambda m: uniform_lrs(m, INF)),
        ValueError,
        "ratio",
    ),
    (
        "uniform_lrs",
        "type",
        lambda: _untouched_after(lambda m: uniform_lrs(m, 0.5, compressor="cap")),
        TypeError,
        "compressor",
    ),
    (
        "activation_norms",
        "shape",
        lambda: activation_norms(_model(), _calib()[0]),
        ValueError,
        "calib_input_ids",
    ),
    ("activation_norms", "type", lambda: activation_norms(None, _calib()), TypeError, "model"),
    # SparseGPT
    ("sparsegpt_prune", "range", _sparsegpt(sparsity=1.0), ValueError, "sparsity"),
    ("sparsegpt_prune", "range", _sparsegpt(sparsity=-0.1), ValueError, "sparsity"),
    ("sparsegpt_prune", "nan", _sparsegpt(sparsity=NAN), ValueError, "sparsity"),
    ("sparsegpt_prune", "type", _sparsegpt(sparsity=None), TypeError, "sparsity"),
    (
        "sparsegpt_prune",
        "dtype",
        _sparsegpt(calib=torch.full((2, 8), NAN)),
        TypeError,
        "calib_input_ids",
    ),
    (
        "sparsegpt_prune",
        "empty",
        _sparsegpt(calib=torch.zeros(0, 8, dtype=torch.long)),
        ValueError,
        "calib_input_ids",
    ),
    (
        "sparsegpt_prune",
        "range",
        _sparsegpt(calib=_calib(high=1000)),
        ValueError,
        "calib_input_ids",
    ),
    ("sparsegpt_prune", "range", _sparsegpt(blocksize=0), ValueError, "blocksize"),
    ("sparsegpt_prune", "range", _sparsegpt(percdamp=-0.01), ValueError, "percdamp"),
    ("sparsegpt_prune", "inf", _sparsegpt(percdamp=INF), ValueError, "percdamp"),
    ("sparsegpt_prune", "range", _sparsegpt(batch_size=0), ValueError, "batch_size"),
    ("sparsegpt_prune", "type", _sparsegpt(true_sequential="yes"), TypeError, "true_sequential"),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(sparsity=None, prunen=2, prunem=4, blocksize=6),
        ValueError,
        "blocksize",
    ),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(sparsity=None, prunen=2, prunem=2),
        ValueError,
        "prunem",
    ),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(sparsity=0.3, prunen=2, prunem=4),
        ValueError,
        "sparsity",
    ),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(sparsity=None, prunen=1, prunem=5, blocksize=5),
        ValueError,
        "prunem",
    ),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(target_modules=("nope",)),
        ValueError,
        "target_modules",
    ),
    ("sparsegpt_prune", "type", lambda: sparsegpt_prune(None, _calib(), 0.5), TypeError, "model"),
    (
        "sparsegpt_prune_weight",
        "nan",
        lambda: sparsegpt_prune_weight(W_NAN.T, H5, 0.5),
        ValueError,
        "weight",
    ),
    (
        "sparsegpt_prune_weight",
        "inf",
        lambda: sparsegpt_prune_weight(W_INF.T, H5, 0.5),
        ValueError,
        "weight",
    ),
    (
        "sparsegpt_prune_weight",
        "shape",
        lambda: sparsegpt_prune_weight(W, torch.eye(6), 0.5),
        ValueError,
        "hessian",
    ),
    (
        "sparsegpt_prune_weight",
        "nan",
        lambda: sparsegpt_prune_weight(W, torch.full((5, 5), NAN), 0.5),
        ValueError,
        "hessian",
    ),
    (
        "sparsegpt_prune_weight",
        "dtype",
        lambda: sparsegpt_prune_weight(W.long(), H5, 0.5),
        TypeError,
        "weight",
    ),
    (
        "sparsegpt_prune_weight",
        "empty",
        lambda: sparsegpt_prune_weight(torch.zeros(0, 5), H5, 0.5),
        ValueError,
        "weight",
    ),
    (
        "sparsegpt_prune_weight",
        "range",
        lambda: sparsegpt_prune_weight(W, H5, 1.5),
        ValueError,
        "sparsity",
    ),
    (
        "sparsegpt_prune_weight",
        "range",
        lambda: sparsegpt_prune_weight(W, H5, 0.5, blocksize=-4),
        ValueError,
        "blocksize",
    ),
    (
        "sparsegpt_prune_weight",
        "other",
        lambda: sparsegpt_prune_weight(W, H5, None, prunen=1, prunem=2, blocksize=2),
        ValueError,
        "prunem",
    ),
    (
        "sparsegpt_prune_weight",
        "other",
        lambda: sparsegpt_prune_weight(W, -H5, 0.5),
        ValueError,
        "percdamp",
    ),
    ("SparseGPT", "type", lambda: SparseGPT(W), TypeError, "layer"),
    (
        "SparseGPT",
        "other",
        lambda: SparseGPT(torch.nn.Linear(5, 6), dtype=torch.float16),
        ValueError,
        "dtype",
    ),
    ("SparseGPT", "nan", lambda: _gpt().add_batch(W_NAN), ValueError, "inputs"),
    ("SparseGPT", "inf", lambda: _gpt().add_batch(W_INF), ValueError, "inputs"),
    ("SparseGPT", "shape", lambda: _gpt().add_batch(torch.ones(4, 6)), ValueError, "inputs"),
    ("SparseGPT", "empty", lambda: _gpt().add_batch(torch.ones(0, 5)), ValueError, "inputs"),
    (
        "SparseGPT",
        "dtype",
        lambda: _gpt().add_batch(torch.ones(4, 5, dtype=torch.long)),
        TypeError,
        "inputs",
    ),
    ("SparseGPT", "empty", lambda: _gpt().prune(0.5), ValueError, "inputs"),
    (
        "SparseGPT",
        "range",
        lambda: _gpt().add_batch(torch.ones(4, 5)).prune(0.5, percdamp=NAN),
        ValueError,
        "percdamp",
    ),
    # OATS
    ("oats_budget", "range", lambda: oats_budget((6, 5), 1.0, 0.25), ValueError, "sparsity"),
    ("oats_budget", "nan", lambda: oats_budget((6, 5), 0.5, NAN), ValueError, "rank_ratio"),
    ("oats_budget", "range", lambda: oats_budget((6, 5), 0.5, 1.5), ValueError, "rank_ratio"),
    ("oats_budget", "range", lambda: oats_budget((0, 5), 0.5, 0.25), ValueError, "shape"),
    ("oats_budget", "type", lambda: oats_budget(6, 0.5, 0.25), TypeError, "shape"),
    (
        "oats_decompose_weight",
        "nan",
        lambda: oats_decompose_weight(W_NAN, 1, 2),
        ValueError,
        "weight",
    ),
    (
        "oats_decompose_weight",
        "inf",
        lambda: oats_decompose_weight(W_INF, 1, 2),
        ValueError,
        "weight",
    ),
    (
        "oats_decompose_weight",
        "shape",
        lambda: oats_decompose_weight(W[0], 1, 2),
        ValueError,
        "weight",
    ),
    ("oats_decompose_weight", "range", lambda: oats_decompose_weight(W, 6, 2), ValueError, "rank"),
    (
        "oats_decompose_weight",
        "range",
        lambda: oats_decompose_weight(W, 1, 6),
        ValueError,
        "row_nnz",
    ),
    (
        "oats_decompose_weight",
        "range",
        lambda: oats_decompose_weight(W, 1, 2, iterations=0),
        ValueError,
        "iterations",
    ),
    (
        "oats_decompose_weight",
        "shape",
        lambda: oats_decompose_weight(W, 1, 2, scale=torch.ones(6)),
        ValueError,
        "scale",
    ),
    (
        "oats_decompose_weight",
        "range",
        lambda: oats_decompose_weight(W, 1, 2, scale=-torch.ones(5)),
        ValueError,
        "scale",
    ),
    (
        "oats_decompose_weight",
        "nan",
        lambda: oats_decompose_weight(W, 1, 2, scale=torch.full((5,), NAN)),
        ValueError,
        "scale",
    ),
    (
        "oats_decompose_weight",
        "other",
        lambda: oats_decompose_weight(W, 1, 2, scale=torch.zeros(5)),
        ValueError,
        "scale",
    ),
    (
        "oats_decompose_weight",
        "dtype",
        lambda: oats_decompose_weight(W, 1, 2, dtype=torch.float16),
        ValueError,
        "dtype",
    ),
    ("oats_prune", "range", _oats(sparsity=1.0), ValueError, "sparsity"),
    ("oats_prune", "nan", _oats(sparsity=NAN), ValueError, "sparsity"),
    ("oats_prune", "range", _oats(rank_ratio=-0.1), ValueError, "rank_ratio"),
    ("oats_prune", "range", _oats(iterations=0), ValueError, "iterations"),
    ("oats_prune", "range", _oats(batch_size=0), ValueError, "batch_size"),
    ("oats_prune", "type", _oats(sequential="yes"), TypeError, "sequential"),
    ("oats_prune", "dtype", _oats(dtype=torch.int64), ValueError, "dtype"),
    (
        "oats_prune",
        "dtype",
        _oats(calib=torch.full((2, 8), NAN)),
        (ValueError, TypeError),
        "calib_input_ids",
    ),
    (
        "oats_prune",
        "empty",
        _oats(calib=torch.zeros(0, 8, dtype=torch.long)),
        ValueError,
        "calib_input_ids",
    ),
    ("oats_prune", "range", _oats(calib=_calib(high=1000)), ValueError, "calib_input_ids"),
    ("oats_prune", "other", _oats(target_modules=("nope",)), ValueError, "target_modules"),
    ("oats_prune", "type", lambda: oats_prune(3, _calib(), 0.5), TypeError, "model"),
    # OWL layer sparsities
    (
        "owl_layer_sparsity",
        "range",
        lambda: owl_layer_sparsity(_model(), _calib(), 1.0),
        ValueError,
        "sparsity",
    ),
    (
        "owl_layer_sparsity",
        "nan",
        lambda: owl_layer_sparsity(_model(), _calib(), 0.5, owl_m=NAN),
        ValueError,
        "owl_m",
    ),
    (
        "owl_layer_sparsity",
        "range",
        lambda: owl_layer_sparsity(_model(), _calib(), 0.5, owl_m=0),
        ValueError,
        "owl_m",
    ),
    (
        "owl_layer_sparsity",
        "range",
        lambda: owl_layer_sparsity(_model(), _calib(), 0.5, owl_lambda=-0.1),
        ValueError,
        "owl_lambda",
    ),
    (
        "owl_layer_sparsity",
        "range",
        lambda: owl_layer_sparsity(_model(), _calib(), 0.5, owl_lambda=INF),
        ValueError,
        "owl_lambda",
    ),
    (
        "owl_layer_sparsity",
        "dtype",
        lambda: owl_layer_sparsity(_model(), torch.full((2, 8), NAN), 0.5),
        (ValueError, TypeError),
        "calib_input_ids",
    ),
    (
        "owl_layer_sparsity",
        "type",
        lambda: owl_layer_sparsity(W, _calib(), 0.5),
        TypeError,
        "model",
    ),
    (
        "wanda_prune",
        "other",
        lambda: _untouched_after(lambda m: wanda_prune(m, _calib(), 0.5, layer_sparsity="global")),
        ValueError,
        "layer_sparsity",
    ),
    (
        "wanda_prune",
        "nan",
        lambda: _untouched_after(
            lambda m: wanda_prune(m, _calib(), 0.5, layer_sparsity="owl", owl_lambda=NAN)
        ),
        ValueError,
        "owl_lambda",
    ),
    ("sparsegpt_prune", "other", _sparsegpt(layer_sparsity="global"), ValueError, "layer_sparsity"),
    ("sparsegpt_prune", "range", _sparsegpt(layer_sparsity="owl", owl_m=-1.0), ValueError, "owl_m"),
    (
        "sparsegpt_prune",
        "other",
        _sparsegpt(sparsity=None, prunen=2, prunem=4, layer_sparsity="owl"),
        ValueError,
        "layer_sparsity",
    ),
    # records and files
    ("allocation_summary", "empty", lambda: allocation_summary([]), ValueError, "allocation"),
    (
        "allocation_summary",
        "other",
        lambda: allocation_summary([{"layer": 0}]),
        ValueError,
        "allocation",
    ),
    ("count_parameters", "type", lambda: count_parameters(W), TypeError, "model"),
    (
        "count_parameters",
        "other",
        lambda: count_parameters(_model(), ("nope",)),
        ValueError,
        "target_modules",
    ),
    ("linear_flops_per_token", "type", lambda: linear_flops_per_token([1, 2]), TypeError, "model"),
    (
        "save_compressed",
        "type",
        lambda: save_compressed(torch.nn.Linear(2, 2), "x"),
        TypeError,
        "model",
    ),
    ("save_compressed", "type", lambda: save_compressed(_model(), None), TypeError, "folder"),
    ("load_compressed", "type", lambda: load_compressed(3), TypeError, "folder"),
    (
        "load_compressed",
        "other",
        lambda: load_compressed("no-such-folder-here"),
        FileNotFoundError,
        "folder",
    ),
]
EXEMPT = {}
