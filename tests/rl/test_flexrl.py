"""Tests of FlexRL's pieces: the hybrid planner (coverage, contiguity, equal-split degeneration,
LPT against the brute-force optimum), chunk costs, the cost models, the corpus and its header
estimates, bit-identical worker-side preprocessing, TinyVLM's KV-cache decoding and chunked
causal attention, and, on one shared local Ray: sequence-parallel inference and training across
two gloo workers equal to a single-process GRPO update (both exchange modes), a worker dying
mid-step (retried / clear error), and every claim at smoke scale."""

from __future__ import annotations

import itertools
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.rl.flexrl import (
    CostModel,
    FlexRLPipeline,
    GRPOConfig,
    MediaSample,
    TinyVLM,
    WorkerFailure,
    answer_reward,
    build_multimodal_corpus,
    causal_attention,
    decode_text,
    encode_text,
    equal_chunks,
    flops_cost_model,
    make_sample,
    plan_equal_count,
    plan_hybrid_shards,
    preprocess_sample,
    profile_cost_model,
)
from iclr26.rl.flexrl.model import full_sequence_ids, token_logprobs_chunk
from iclr26.rl.flexrl.worker import response_mask
from iclr26.rl.grpo import k3_kl, masked_mean, policy_loss

T_NEW = 4


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_multimodal_corpus(tmp_path_factory.mktemp("flexrl"), 8, seed=1)


# ---------------------------------------------------------------- planner


def _check_cover(plan, lengths):
    seen = {}
    for w, items in enumerate(plan.assignments):
        for i, s, e in items:
            assert 0 <= s < e <= lengths[i]
            seen.setdefault(i, []).append((s, e, w))
    assert sorted(seen) == list(range(len(lengths)))
    for i, chunks in seen.items():
        chunks.sort()
        assert chunks[0][0] == 0 and chunks[-1][1] == lengths[i]
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))  # contiguous, ordered
        if len(chunks) > 1:  # split: the group is the ranks in chunk order
            assert plan.groups[i] == tuple(w for _, _, w in chunks)
            assert list(plan.groups[i]) == list(range(chunks[0][2], chunks[0][2] + len(chunks)))


def test_plan_assigns_every_token_once_with_contiguous_chunks():
    rng = np.random.default_rng(0)
    cost = CostModel(1.0, 0.01)
    for _ in range(8):
        lengths = list(rng.integers(1, 1200, size=int(rng.integers(1, 16))))
        for W in (1, 2, 3, 4):
            plan = plan_hybrid_shards(lengths, W, cost, shard_threshold=0.5, min_chunk=3)
            _check_cover(plan, lengths)
            assert len(plan.loads) == W
            chunk_costs = sum(cost.chunk(s, e) for items in plan.assignments for _, s, e in items)
            assert np.isclose(chunk_costs, sum(plan.loads))
            assert all(len(r) <= W for r in plan.groups.values())


def test_equal_lengths_degenerate_to_an_equal_split():
    plan = plan_hybrid_shards([100] * 8, 4, CostModel(1.0, 0.01))
    assert plan.groups == {}
    assert [len(a) for a in plan.assignments] == [2, 2, 2, 2]
    assert plan.predicted_imbalance == pytest.approx(1.0)


def test_lpt_is_within_its_bound_of_the_brute_force_optimum():
    rng = np.random.default_rng(1)
    cost = CostModel(1.0, 0.002)
    for _ in range(12):
        W = int(rng.integers(2, 4))
        lengths = list(rng.integers(1, 500, size=int(rng.integers(W, 7))))
        plan = plan_hybrid_shards(lengths, W, cost, shard_threshold=float("inf"))
        assert plan.groups == {}
        c = cost(np.asarray(lengths))
        opt = min(
            max(np.bincount(a, weights=c, minlength=W))
            for a in itertools.product(range(W), repeat=len(lengths))
        )
        assert max(plan.loads) <= (4 / 3 - 1 / (3 * W)) * opt + 1e-9


def test_splitting_balances_a_skewed_batch_and_equal_count_does_not():
    lengths = [40] * 10 + [900, 1000]  # two videos among short prompts
    cost = CostModel(1.0, 0.01)
    hybrid = plan_hybrid_shards(lengths, 2, cost)
    base = plan_equal_count(lengths, 2, cost)
    assert hybrid.groups  # the long sequences are split
    assert hybrid.predicted_imbalance < 1.1 < 1.5 < base.predicted_imbalance
    assert [len(a) for a in base.assignments] == [6, 6]
    assert base.assignments[1][-1] == (11, 0, 1000)


def test_memory_limit_forces_splits_that_fit():
    cost = CostModel(1.0, 0.0)  # linear cost: theta alone would not split the long one
    lengths = [1000, 200, 200, 200]
    assert plan_hybrid_shards(lengths, 4, cost, shard_threshold=10.0).groups == {}
    plan = plan_hybrid_shards(lengths, 4, cost, shard_threshold=10.0, memory_limit=300)
    _check_cover(plan, lengths)
    assert len(plan.groups[0]) == 4
    assert max(e - s for items in plan.assignments for _, s, e in items) <= 300
    with pytest.raises(ValueError, match="memory_limit"):
        plan_hybrid_shards(lengths, 2, cost, memory_limit=300)


def test_equal_chunks_have_equal_cost_and_respect_min_chunk():
    cost = CostModel(2.0, 0.05)
    b = equal_chunks(1000, 4, cost, min_chunk=9)
    costs = [cost.chunk(s, e) for s, e in zip(b, b[1:])]
    assert b[0] == 0 and b[-1] == 1000 and len(b) == 5
    assert max(costs) / min(costs) < 1.05
    assert np.diff(b).min() >= 9
    assert sum(costs) <= cost(1000)  # a split never costs more than the whole
    assert equal_chunks(10, 4, cost, min_chunk=9) == [0, 10]


def test_cost_models():
    m = TinyVLM()
    fc = flops_cost_model(m)
    for L in (1, 37, 512):
        assert fc(L) == pytest.approx(m.flops_per_row(L))
    prof = profile_cost_model(m, lengths=(16, 48, 96), rows=1, repeat=1)
    assert prof.a >= 0 and prof.b >= 0
    grid = prof(np.arange(1, 200))
    assert np.all(np.diff(grid) > 0)  # monotone in L


# ---------------------------------------------------------------- data


def test_corpus_lengths_answers_and_header_estimates(corpus):
    for s in corpus:
        assert isinstance(s, MediaSample)
        d = preprocess_sample(s)
        assert d.n_tokens == s.est_tokens  # header estimate == decoded length
        media = s.est_tokens - s.prompt_tokens
        if s.modality == "text":
            assert media == 0 and 32 <= s.est_tokens <= 64
            digits = [int(c) for c in s.prompt.split(":")[1].split(".")[0].split()]
            assert s.answer == sum(digits) % 10
        elif s.modality == "image":
            assert 64 <= media <= 256
        else:
            assert 512 <= media <= 1024 and media % 64 == 0
        assert 0 <= s.answer <= 9
    assert decode_text(encode_text("sum mod 10?") + [1, 5]) == "sum mod 10?"
    assert answer_reward(encode_text(" 7"), 7) == 1.0 and answer_reward(encode_text("3"), 7) == 0


def test_worker_side_preprocessing_is_bit_identical(corpus):
    media = [s for s in corpus if s.modality != "text"]
    with ThreadPoolExecutor(1) as pool:  # the ShadowLoader's background thread
        remote = list(pool.map(preprocess_sample, media))
    for s, r in zip(media, remote):
        d = preprocess_sample(s)
        assert d.patches.dtype == np.float32 and d.patches.tobytes() == r.patches.tobytes()
        assert np.array_equal(d.prompt_ids, r.prompt_ids)


def test_a_sample_with_no_tokens_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no tokens"):
        make_sample(0, "text", (), "", 0)
    with pytest.raises(ValueError, match="lengths"):
        plan_hybrid_shards([5, 0, 3], 2)


# ---------------------------------------------------------------- model


def test_kv_cache_decoding_matches_the_full_forward():
    m = TinyVLM(seed=3).eval()
    patches = torch.randn(5, m.patch_dim)
    ids = torch.randint(3, m.vocab_size, (2, 7))
    with torch.no_grad():
        full = m(patches, ids)
        _, kv = m.forward_chunk(patches, ids[:, :4], 0, 9)
        logits, kv = m.decode_step(ids[:, 4], 9, kv)
        assert torch.allclose(logits, full[:, 9], atol=1e-5)
        logits, _ = m.decode_step(ids[:, 5], 10, kv)
        assert torch.allclose(logits, full[:, 10], atol=1e-5)


def test_chunked_causal_attention_is_exact():
    q, k, v = (torch.randn(2, 4, 30, 8) for _ in range(3))
    full = causal_attention(q, k, v, 0)
    for s, e in ((0, 11), (11, 19), (19, 30)):
        part = causal_attention(q[:, :, s:e], k[:, :, :e], v[:, :, :e], s)
        assert torch.allclose(part, full[:, :, s:e], atol=1e-6)


def test_a_peer_error_inside_a_collective_is_reported_as_the_death_behind_it(monkeypatch):
    """When worker 1 dies inside the all-reduce, worker 0's call fails with a connection
    error, and that failure can be the first to arrive: the pipeline must still report
    worker 1's death (so the step is retried), and re-raise an error that has no death
    behind it."""
    import ray
    import ray.exceptions as E

    from iclr26.rl.flexrl.pipeline import _Died, _RayPipeline

    outcomes = {}

    def fake_get(ref, timeout=None):
        result = outcomes[ref]
        if isinstance(result, Exception):
            raise result
        return result

    monkeypatch.setattr(ray, "wait", lambda pending, num_returns=1: (pending[:1], pending[1:]))
    monkeypatch.setattr(ray, "get", fake_get)
    gloo = E.RayTaskError("update", "tb", RuntimeError("gloo: connection reset by peer"))
    pipe = types.SimpleNamespace(_find_death=_RayPipeline._find_death)
    outcomes.update(a=gloo, b=E.RayActorError(), c=1.0)
    with pytest.raises(_Died) as died:
        _RayPipeline._gather(pipe, ["a", "b", "c"], "update")
    assert (died.value.worker, died.value.stage) == (1, "update")
    outcomes.update(b=2.0)  # nobody died: the task's own error is the error
    with pytest.raises(E.RayTaskError):
        _RayPipeline._gather(pipe, ["a", "b", "c"], "update")
    outcomes.update(a=0.5)
    assert _RayPipeline._gather(pipe, ["a", "b", "c"], "update") == [0.5, 2.0, 1.0]


def test_response_mask_stops_after_eos():
    r = torch.tensor([[5, 6, 1, 0], [5, 1, 0, 0], [5, 6, 7, 8]])
    assert response_mask(r).int().tolist() == [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]


def test_full_scale_run_measures_the_ablation_and_the_scaling_table(monkeypatch):
    """The full-scale run adds the spec's ablation (each half of FlexRL alone) and the
    1 -> 2 -> 4 workers table; checked on stand-ins for the measured pipelines."""
    from iclr26.rl.flexrl import claims

    runs = []

    def fake_measure(ctx, cls, workers, order, s, **options):
        runs.append((cls.__name__, workers, tuple(sorted(options.items()))))
        return {"system": cls.__name__, "workers": workers, **options}

    monkeypatch.setattr(claims, "ensure_ray", lambda num_cpus=None: None)
    monkeypatch.setattr(claims, "build_multimodal_corpus", lambda root, n, seed: list(range(n)))
    monkeypatch.setattr(claims, "_order", lambda corpus, s, seed: (corpus, 0, 1.5))
    monkeypatch.setattr(claims, "_measure", fake_measure)
    claims._measure_all.cache_clear()
    try:
        out = claims._measure_all("full", 0)
    finally:
        claims._measure_all.cache_clear()
    assert sorted(out["scaling"]) == [1, 2, 4]
    assert out["ablation"]["shadowloader_only"] == {
        "system": "FlexRLPipeline", "workers": 4, "shard_threshold": float("inf")
    }  # fmt: skip
    assert out["ablation"]["flexulysses_only"] == {
        "system": "CentralizedPipeline", "workers": 4, "shard_threshold": 0.5
    }  # fmt: skip
    assert len(runs) == 2 + 2 * 2 + 2  # main pair, workers 1 and 2, the two ablations


def test_ensure_ray_joins_ray_address_else_starts_a_local_ray(monkeypatch):
    ray = pytest.importorskip("ray")
    from iclr26.ray_local import NICENESS_ENV
    from iclr26.rl.flexrl import ensure_ray

    calls = []
    monkeypatch.delenv(NICENESS_ENV, raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    ensure_ray(num_cpus=2)
    monkeypatch.delenv("RAY_ADDRESS")
    ensure_ray(num_cpus=2)
    assert calls[0]["address"] == "ray://head:10001" and "num_cpus" not in calls[0]
    assert calls[1]["num_cpus"] == 2 and "address" not in calls[1]


# ---------------------------------------------------------------- Ray (one session)


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def _reference_update(model, ref, optimizer, batch, last, cfg):
    """The same GRPO update computed in one process on whole sequences."""
    model.train()
    optimizer.zero_grad()
    total = 0.0
    for s in batch:
        d = preprocess_sample(s)
        patches, prompt = torch.from_numpy(d.patches), torch.from_numpy(d.prompt_ids)
        resp = torch.from_numpy(last["responses"][s.sample_id].astype(np.int64))
        ids = full_sequence_ids(prompt, resp)
        n_p, n = patches.shape[0], patches.shape[0] + prompt.shape[0]
        targets = ids[:, n - n_p : n - n_p + T_NEW]
        logp = token_logprobs_chunk(model(patches, ids)[:, n - 1 : n - 1 + T_NEW], targets)
        with torch.no_grad():
            ref_logp = token_logprobs_chunk(ref(patches, ids)[:, n - 1 : n - 1 + T_NEW], targets)
        mask = response_mask(resp).float()
        adv = torch.as_tensor(last["advantages"][s.sample_id])
        pg, _ = policy_loss(logp, logp.detach(), adv, mask, cfg.clip_low, cfg.clip_high,
                            cfg.dual_clip)  # fmt: skip
        kl = masked_mean(k3_kl(logp, ref_logp, cfg.kl_clamp), mask)
        share = float(mask.sum()) / last["global_tokens"]
        total = total + (pg + cfg.kl_coef * kl) * share
    total.backward()
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), cfg.max_grad_norm)
    optimizer.step()


def test_sequence_parallel_grpo_equals_single_process_and_survives_a_dead_worker(
    ray_session, corpus
):
    ray = ray_session
    cfg = GRPOConfig(group_size=2, lr=1e-2, entropy_coef=0.0, kl_coef=0.1)
    batch = sorted(corpus, key=lambda s: -s.est_tokens)[:3]
    pipe = FlexRLPipeline(model_fn=TinyVLM, n_workers=2, grpo=cfg, shard_threshold=1e-6,
                          max_new_tokens=T_NEW, max_retries=1)  # fmt: skip
    model = TinyVLM()
    ref = TinyVLM().eval()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas,
                            weight_decay=cfg.weight_decay)  # fmt: skip
    try:
        for mode in ("allgather", "ulysses"):
            pipe.set_sp_mode(mode)
            before = [p.detach().clone() for p in model.parameters()]
            stats = pipe.step(batch)
            assert stats["n_split"] == 3 and stats["attempts"] == 1
            # old log-probs of the split sequences == the single-process forward
            model.eval()
            for w in pipe.workers:
                for (sid, s, _e), old in ray.get(w.logprobs.remote()).items():
                    if old is None:
                        continue
                    sample = next(b for b in batch if b.sample_id == sid)
                    d = preprocess_sample(sample)
                    resp = torch.from_numpy(pipe.last["responses"][sid].astype(np.int64))
                    ids = full_sequence_ids(torch.from_numpy(d.prompt_ids), resp)
                    with torch.no_grad():
                        logits = model(torch.from_numpy(d.patches), ids)
                    n = sample.est_tokens
                    lo = max(s, n - 1)
                    want = token_logprobs_chunk(
                        logits[:, lo : lo + old.shape[1]],
                        ids[:, lo + 1 - d.patches.shape[0] :][:, : old.shape[1]],
                    )
                    assert np.allclose(old, want.numpy(), atol=1e-5), mode
            _reference_update(model, ref, opt, batch, pipe.last, cfg)
            digests = [ray.get(w.parameters_digest.remote()) for w in pipe.workers]
            want = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
            moved = torch.cat(
                [(p.detach() - b).reshape(-1) for p, b in zip(model.parameters(), before)]
            )
            assert float(moved.abs().max()) > 1e-4  # the update did something
            assert np.array_equal(digests[0], digests[1])  # replicas stay identical
            assert np.allclose(digests[0], want, atol=1e-5), mode
        # a worker dies mid-step: the step is retried from the last checkpoint, whole batch
        pipe.inject_fault(1, "update", pipe.steps_done)
        stats = pipe.step(batch)
        assert stats["attempts"] == 2 and stats["samples"] == len(batch) and pipe.retries == 1
        assert np.isfinite(stats["pg_loss"])
        # without retries left: a clear error naming the worker, the stage and the batch
        pipe.max_retries = 0
        pipe.inject_fault(0, "rollout", pipe.steps_done)
        done = pipe.steps_done
        with pytest.raises(
            WorkerFailure, match=r"worker 0 died during the rollout stage.*3 samples"
        ):
            pipe.step(batch)
        assert pipe.steps_done == done and not pipe.workers
    finally:
        pipe.close()


@pytest.mark.parametrize("name", ["load-balance", "throughput", "controller-bytes"])
def test_claims_at_smoke_scale(name, ray_session, tmp_path):
    record = run_claim("flexrl", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert record["metrics"] and record["baseline"]
