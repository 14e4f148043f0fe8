import math

import numpy as np
import pytest
import torch
from scipy import ndimage

from iclr26.claims import contract_problems, run_claim
from iclr26.generative.coguide import (
    CoGuide,
    CoGuideSampler,
    ContrastiveLikelihood,
    DDIMSampler,
    FloorplanGenerator,
    FloorplanPrior,
    InpaintingSampler,
    PathPlanner,
    PlannerGuidedSampler,
    Trajectory,
    contrastive_loss,
    feasibility,
    free_space_scores,
    hard_negative,
    intersection_penalty,
    is_connected,
    rasterize,
    soft_value_iteration,
    step_size_schedule,
    supcon_loss,
    trajectory_consistency,
)

S = 16


@pytest.fixture(scope="module")
def plans():
    return FloorplanGenerator(S, min_room=3).sample(12, seed=0)


@pytest.fixture(scope="module")
def walks(plans):
    planner = PathPlanner()
    return [[planner(x, coverage=c, seed=i) for c in (0.1, 0.3)] for i, x in enumerate(plans)]


@pytest.fixture(scope="module")
def prior(plans):
    torch.manual_seed(0)
    return FloorplanPrior(T=50, width=8).fit(plans, steps=3, batch_size=8)


@pytest.fixture(scope="module")
def likelihood(plans, walks):
    torch.manual_seed(0)
    return ContrastiveLikelihood(dim=16, width=8).fit(plans, walks, steps=3, batch_size=4)


def test_generator_plans_are_connected_closed_and_have_doors():
    X = FloorplanGenerator(24, min_room=4).sample(20, seed=1)
    assert X.shape == (20, 24, 24) and set(np.unique(X)) <= {-1.0, 1.0}
    for x in X:
        assert is_connected(x)
        assert (
            (x[0] > 0).all() and (x[-1] > 0).all() and (x[:, 0] > 0).all() and (x[:, -1] > 0).all()
        )
    # doors: interior walls split the free space into rooms that only doors connect
    rooms = [ndimage.label(ndimage.binary_erosion(x < 0))[1] for x in X]
    assert max(rooms) >= 2


def test_planner_paths_are_free_adjacent_and_shortest(plans):
    planner = PathPlanner(tie_break="random")
    x = plans[0]
    y = planner(x, coverage=0.3, seed=3)
    assert (x[y.cells[:, 0], y.cells[:, 1]] < 0).all()
    steps = np.abs(np.diff(y.cells, axis=0)).max(axis=1)
    assert (steps == 1).all()
    assert (y.cells[0] == y.waypoints[0]).all() and (y.cells[-1] == y.waypoints[-1]).all()
    # every segment is as long as the BFS distance between its waypoints
    for k, length in enumerate(y.segments):
        d = planner.distances(x, y.waypoints[k + 1 : k + 2])[0]
        assert length == d[tuple(y.waypoints[k])]
    again = planner(x, coverage=0.3, seed=3)
    assert np.array_equal(again.cells, y.cells)


@pytest.mark.parametrize("coverage", [0.1, 0.25, 0.4])
def test_planner_reaches_its_coverage(plans, coverage):
    for i, x in enumerate(plans[:4]):
        y = PathPlanner()(x, coverage=coverage, seed=i)
        frac = rasterize(y, S).sum() / (x < 0).sum()
        assert coverage <= frac <= coverage + 0.2


def test_rasterize_refuses_a_walk_that_leaves_the_plan():
    with pytest.raises(ValueError, match="outside the 16x16 floor plan"):
        rasterize(np.array([[3, 3], [3, 16]]), S)
    with pytest.raises(ValueError, match="y has 1"):
        rasterize(np.array([[-1, 3]]), S)


def test_jitter_clipping_is_counted(plans):
    y = PathPlanner()(plans[0], coverage=0.3, seed=0, jitter=3.0)
    assert y.clipped > 0
    assert rasterize(y, S).sum() > 0


def test_supcon_on_one_hot_embeddings_reaches_its_minimum():
    b = 4
    f = torch.eye(b)
    g = torch.eye(b).repeat_interleave(2, 0)  # two trajectories per plan, both exact
    owner = torch.arange(b).repeat_interleave(2)
    out = contrastive_loss(f, g, owner, tau=0.01, lam=0.5, lam_align=1.0)
    # plan anchors: two equal positives share the mass -> log 2; trajectory anchors -> 0
    assert out["f_to_t"].item() == pytest.approx(math.log(2), abs=1e-6)
    assert out["t_to_f"].item() == pytest.approx(0.0, abs=1e-6)
    assert out["align"].item() == 0.0
    # any other unit embedding of the trajectories does worse
    g2 = torch.nn.functional.normalize(g + 0.3 * torch.randn(g.shape), dim=1)
    assert contrastive_loss(f, g2, owner, 0.01, 0.5, 1.0)["loss"] > out["loss"]


def test_supcon_matches_a_hand_computation():
    s = torch.tensor([[1.0, 0.0, 2.0]])
    pos = torch.tensor([[True, False, True]])
    z = math.log(math.e + 1 + math.e**2)
    expected = -0.5 * ((1 - z) + (2 - z))
    assert supcon_loss(s, pos).item() == pytest.approx(expected, rel=1e-6)


def test_distance_and_inner_product_forms_have_the_same_gradient(likelihood, plans, walks):
    x = torch.tensor(plans[:3])[:, None].requires_grad_(True)
    m = torch.tensor(np.stack([rasterize(w[0], S) for w in walks[:3]]))[:, None]
    g_y = likelihood.embed_trajectory(m).detach()
    (g1,) = torch.autograd.grad(-likelihood.guidance_loss(x, g_y).sum(), x)
    inner = (likelihood.embed_plan(x) * g_y).sum() / likelihood.tau
    (g2,) = torch.autograd.grad(inner, x)
    assert torch.allclose(g1, g2, atol=1e-5)


def test_short_fit_ranks_matched_pairs_above_mismatched(plans, walks):
    torch.manual_seed(0)
    lik = ContrastiveLikelihood(dim=16, width=8, noise=0.0).fit(
        plans, walks, steps=60, batch_size=6, lr=3e-3
    )
    masks = np.stack([rasterize(w[0], S) for w in walks])
    matched = lik.score(plans, masks)
    mismatched = lik.score(plans, np.roll(masks, 1, axis=0))
    assert matched.mean() > mismatched.mean()


def test_hard_negative_makes_the_walk_cross_a_wall(plans, walks):
    rng = np.random.default_rng(0)
    for x, ws in zip(plans, walks):
        neg = hard_negative(x, ws[1], rng)
        assert feasibility(x, ws[1]) == 1.0 and feasibility(neg, ws[1]) < 1.0


def test_intersection_penalty_counts_walked_wall_cells(plans, walks):
    x = plans[0].copy()
    y = walks[0][1]
    mask = rasterize(y, S)
    assert intersection_penalty(x, mask) == 0
    cells = y.cells[[1, 2]]
    x[cells[:, 0], cells[:, 1]] = 1.0
    n_on_wall = len({tuple(c) for c in cells.tolist()})
    assert intersection_penalty(x, mask) == n_on_wall
    assert intersection_penalty(torch.tensor(x), torch.tensor(mask)).item() == n_on_wall


def test_step_size_schedule_shape():
    eta = step_size_schedule(20, eta0=0.05, rho=0.1, start=0.2, end=0.7, stop=0.9)
    assert eta[4] == pytest.approx(0.05)  # k_s = 4
    assert eta[14] == pytest.approx(0.005)  # k_e = 14
    assert (eta[18:] == 0).all() and (eta[:18] > 0).all()
    assert (np.diff(eta[4:15]) <= 1e-12).all()


def test_scale_zero_is_the_unguided_sampler_bit_for_bit(prior, likelihood, walks):
    ys = [walks[0][0], walks[1][1]]
    plain = DDIMSampler(prior, steps=6).sample_continuous(ys, n=2, seed=4)
    guided = CoGuideSampler(prior, likelihood, steps=6, scale=0.0)
    assert np.array_equal(guided.sample_continuous(ys, n=2, seed=4), plain)
    assert guided.counts["backward"] == 0


def test_guided_steps_stop_at_the_gate_and_move_the_sample(prior, likelihood, walks):
    ys = [walks[0][0]]
    smp = CoGuideSampler(prior, likelihood, steps=10, t_stop=0.5, eta0=0.5)
    out = smp.sample_continuous(ys, n=2, seed=0)
    assert smp.counts["backward"] == int((smp.eta() > 0).sum()) == 5
    assert np.isfinite(out).all() and out.shape == (2, S, S)
    assert not np.array_equal(out, DDIMSampler(prior, 10).sample_continuous(ys, 2, seed=0))


def test_first_adam_step_is_a_signed_step(prior, likelihood):
    smp = CoGuideSampler(prior, likelihood, steps=4)
    state = {"m": None, "v": None, "k": 0}
    grad = torch.tensor([[[[2.0, -0.5], [1e-3, -7.0]]]])
    x = torch.zeros_like(grad)
    out = smp.update(x, grad, 0.1, state)
    assert torch.allclose(out, -0.1 * grad.sign(), atol=1e-4)
    gd = CoGuideSampler(prior, likelihood, steps=4, optimizer="gd")
    assert torch.allclose(gd.update(x, grad, 0.1, {}), -0.1 * grad)


def test_soft_value_iteration_tends_to_bfs_distance():
    x = -np.ones((10, 10), dtype=np.float32)
    x[0], x[-1], x[:, 0], x[:, -1] = 1, 1, 1, 1
    cost = torch.exp(3 * torch.tensor((1 + x) / 2))[None]
    goal = torch.tensor([[2, 3]])
    hard = PathPlanner().distances(x, goal.numpy())[0]
    free = x < 0
    errs = []
    for temp in (0.3, 0.1, 0.01):
        v = soft_value_iteration(cost, goal, temperature=temp, iters=30)[0].numpy()
        errs.append(np.abs(v[free] - hard[free]).max())
    assert errs[0] > errs[1] > errs[2] and errs[2] < 0.05


def test_guided_base_is_abstract_and_unguided_has_no_guidance(prior):
    from iclr26.generative.coguide.sampler import _GuidedDDIM

    with pytest.raises(TypeError, match="guidance_loss"):
        _GuidedDDIM(prior, steps=4)
    x0 = torch.zeros(3, 1, S, S)
    assert torch.equal(DDIMSampler(prior, 4).guidance_loss(x0, {}), torch.zeros(3))
    assert not InpaintingSampler(prior, 4).eta().any()  # never evaluates a guidance loss


def test_planner_guidance_runs_with_finite_gradients(prior, walks):
    smp = PlannerGuidedSampler(prior, steps=4, iters=20)
    out = smp.sample([walks[0][0]], n=1, seed=0)
    assert out.shape == (1, S, S) and smp.counts["planner_iters"] > 0


def test_inpainting_frees_the_walked_cells(prior, walks):
    y = walks[2][1]
    out = InpaintingSampler(prior, steps=5).sample([y], n=2, seed=0)
    assert (out[:, y.cells[:, 0], y.cells[:, 1]] < 0).all()


def test_metrics_on_the_ground_truth(plans, walks):
    x, y = plans[1], walks[1][1]
    assert free_space_scores(x, x) == {"iou": 1.0, "f1": 1.0}
    assert trajectory_consistency(x, y) > 0.5
    walled = np.ones_like(x)
    assert trajectory_consistency(walled, y) == 0.0 and feasibility(walled, y) == 0.0


def test_fit_predict_wrapper(plans, walks):
    est = CoGuide(
        prior_steps=2,
        likelihood_steps=2,
        steps=4,
        prior_kwargs={"T": 20, "width": 8},
        likelihood_kwargs={"dim": 8, "width": 4},
    )
    out = est.fit(plans[:6], walks[:6]).predict([walks[0][0]])
    assert out.shape == (1, S, S)
    assert isinstance(walks[0][0], Trajectory)


@pytest.mark.parametrize(
    "name",
    [
        "free-space-accuracy",
        "trajectory-consistency",
        "robustness",
        "surrogate-tracks-likelihood",
        "adam-beats-gd",
        "intersection-penalty-helps",
        "sampling-cost",
    ],
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("coguide", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record.get("traceback")
    assert not contract_problems(record)
    _assert_figures(record, tmp_path)


def test_planner_refuses_a_plan_without_a_walkable_pair():
    x = np.ones((S, S), dtype=np.float32)
    x[2, 2] = x[5, 5] = -1.0  # two free cells that no path joins
    with pytest.raises(ValueError, match="x has no two connected free cells"):
        PathPlanner(max_segments=3)(x, coverage=0.5, seed=0)


def test_fit_with_hard_negatives_adds_them_to_the_trajectory_anchored_term(plans, walks):
    torch.manual_seed(0)
    lik = ContrastiveLikelihood(dim=8, width=4, hard_negatives=True)
    lik.fit(plans[:4], walks[:4], steps=2, batch_size=4)
    assert len(lik.history) == 2 and all(np.isfinite(h["loss"]) for h in lik.history)
    f = torch.eye(3)
    g = torch.eye(3)
    base = contrastive_loss(f, g, torch.arange(3), 0.5, 0.0, 0.0)["t_to_f"]
    with_neg = contrastive_loss(
        f, g, torch.arange(3), 0.5, 0.0, 0.0, f_neg=g.clone(), neg_owner=torch.arange(3)
    )["t_to_f"]
    assert with_neg > base  # a negative identical to the positive must raise the loss


def _assert_figures(record, out_dir):
    """Every claim saves at least one figure, and each PNG opens."""
    import matplotlib.image as mpimg

    assert record["figures"], f"{record['claim']} saved no figure"
    for rel in record["figures"]:
        image = mpimg.imread(out_dir / rel)
        assert image.ndim == 3 and min(image.shape[:2]) > 50
