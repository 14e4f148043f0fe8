"""Tests of OWL's layer-wise sparsity for the Wanda and SparseGPT baselines of the CAP room:
the outlier ratios and sparsities against a hand computation, their mean, the direction
(more outliers, less pruning), and the realised per-layer sparsity of both pruners."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from iclr26.llm.lrs_compression import (
    activation_norms,
    count_parameters,
    owl_layer_sparsity,
    sparsegpt_prune,
    wanda_prune,
)


def _llama(layers=3, seed=0):
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(seed)
    cfg = tiny_llama_config(
        "test",
        num_hidden_layers=layers,
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        head_dim=8,
    )
    return LlamaForCausalLM(cfg).eval()


def _calib(n=6, length=24, vocab=300, seed=0):
    return torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


def _with_outliers(model, layer, factor=40.0, fraction=0.02, seed=1):
    """Multiply a random ``fraction`` of layer ``layer``'s weights by ``factor``."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.model.layers[layer].modules():
            if isinstance(module, torch.nn.Linear):
                mask = torch.rand(module.weight.shape, generator=g) < fraction
                module.weight[mask] *= factor
    return model


def _hand_owl(model, calib, sparsity, m, lam):
    norms = activation_norms(model, calib)
    ratios = []
    for i, block in enumerate(model.model.layers):
        scores = []
        for name, module in block.named_modules():
            if isinstance(module, torch.nn.Linear):
                full = f"model.layers.{i}.{name}"
                w = module.weight.detach().double().numpy()
                scores.append((np.abs(w) * norms[full].numpy()[None, :]).ravel())
        flat = np.concatenate(scores)
        ratios.append(np.mean(flat > m * flat.mean()))
    r = np.asarray(ratios)
    kept = (r - r.min()) / (r.max() - r.min()) * 2 * lam
    kept = kept - kept.mean() + (1 - sparsity)
    return r, 1 - kept


def test_owl_sparsities_match_a_hand_computation_and_average_to_the_target():
    # outliers in the last block (those of an earlier block also reach the later blocks'
    # inputs through the residual stream)
    model = _with_outliers(_llama(), layer=2)
    calib = _calib()
    owl = owl_layer_sparsity(model, calib, 0.5, owl_m=5.0, owl_lambda=0.08)
    ratios, expected = _hand_owl(model, calib, 0.5, 5.0, 0.08)
    got = np.array([owl["sparsity"][i] for i in range(3)])
    assert np.allclose([owl["outlier_ratio"][i] for i in range(3)], ratios)
    assert np.allclose(got, expected, atol=1e-9)
    assert got.mean() == pytest.approx(0.5)
    assert got.max() - got.min() == pytest.approx(0.16)  # spread 2 lambda
    # the layer given outliers has the largest outlier ratio and so the lowest sparsity
    assert int(np.argmin(got)) == 2 and int(np.argmax(ratios)) == 2
    clean = owl_layer_sparsity(_llama(), calib, 0.5)
    assert owl["outlier_ratio"][2] > 2 * clean["outlier_ratio"][2]
    assert owl["sparsity"][2] < clean["sparsity"][2]


def test_wanda_owl_prunes_each_layer_to_its_sparsity():
    model = _with_outliers(_llama(), layer=1)
    calib = _calib()
    pruned = wanda_prune(copy.deepcopy(model), calib, 0.5, layer_sparsity="owl")
    owl = pruned.owl_
    for i, block in enumerate(pruned.model.layers):
        for module in block.modules():
            if isinstance(module, torch.nn.Linear):
                n = module.weight.shape[1]
                zeros_per_row = (module.weight == 0).sum(1)
                assert (zeros_per_row == int(owl["sparsity"][i] * n)).all()
    uniform = wanda_prune(copy.deepcopy(model), calib, 0.5)
    assert not hasattr(uniform, "owl_")
    # the layer sparsities average to the target; rounding down per row keeps < 1 more per row
    rows = sum(m.weight.shape[0] for m in pruned.model.layers.modules() if hasattr(m, "weight")
               and isinstance(m, torch.nn.Linear))  # fmt: skip
    diff = count_parameters(pruned)["targets"] - count_parameters(uniform)["targets"]
    assert 0 <= diff < rows
    # lambda 0 gives back uniform Wanda
    flat = wanda_prune(copy.deepcopy(model), calib, 0.5, layer_sparsity="owl", owl_lambda=0.0)
    for a, b in zip(flat.parameters(), uniform.parameters()):
        assert torch.equal(a, b)


def test_sparsegpt_owl_prunes_each_block_to_its_sparsity():
    model = _with_outliers(_llama(), layer=1)
    calib = _calib()
    pruned = sparsegpt_prune(copy.deepcopy(model), calib, 0.5, layer_sparsity="owl")
    owl = pruned.owl_
    assert owl["sparsity"] == owl_layer_sparsity(model, calib, 0.5)["sparsity"]
    for record in pruned.sparsegpt_stats_["modules"]:
        module = pruned.get_submodule(record["name"])
        rows, cols = module.weight.shape
        expected = int(owl["sparsity"][record["layer"]] * rows * cols)
        assert int((module.weight == 0).sum()) == expected


def test_owl_refuses_a_spread_outside_the_unit_interval():
    with pytest.raises(ValueError, match="owl_lambda"):
        owl_layer_sparsity(_with_outliers(_llama(), layer=1), _calib(), 0.05, owl_lambda=0.08)
    with pytest.raises(ValueError, match="layer_sparsity"):
        sparsegpt_prune(_llama(), _calib(), None, prunen=2, prunem=4, layer_sparsity="owl")
