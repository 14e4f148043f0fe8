"""PCG: the pulled-back metric, the discrete geodesic energy and its minimisers, the
perceptual embedding, the two stages, the baselines, the public API and the claims at smoke
scale."""

import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.vision.pcg import (
    PCG,
    RSGD,
    LatentWachter,
    PerceptualEmbedding,
    PixelWachter,
    counterfactual,
    path_energy,
    path_smoothness,
    pgd_attack,
    pullback_metric,
    refine_path,
    straight_path,
)


class TinyFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 3, padding=1)
        self.act1 = nn.Tanh()
        self.conv2 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.act2 = nn.Tanh()

    def forward(self, x):
        return self.act2(self.conv2(self.act1(self.conv1(x)))).mean((2, 3))


class HalfBrightness(nn.Module):
    """Class 0 if the left half of the image is brighter, class 1 if the right half is."""

    def forward(self, x):
        left, right = x[..., :4].mean((1, 2, 3)), x[..., 4:].mean((1, 2, 3))
        return 20 * torch.stack([left - right, right - left], 1)


class ToyGenerator(nn.Module):
    """2-D latent -> 8x8 image: z[0] drives the left half, z[1] the right half."""

    def forward(self, z):
        cols = torch.cat([z[:, :1].expand(-1, 4), z[:, 1:2].expand(-1, 4)], 1)
        return torch.sigmoid(cols)[:, None, None, :].expand(-1, 1, 8, 8)


def _toy():
    torch.manual_seed(0)
    feats = TinyFeatures()
    emb = PerceptualEmbedding(feats, layers=("act1", "act2"))
    return ToyGenerator(), HalfBrightness(), emb


def test_pullback_metric_equals_jtj_of_the_composed_map():
    gen, _, emb = _toy()
    z = torch.randn(3, 2, dtype=torch.float32)

    def composed(v):
        return emb(gen(v))

    G = pullback_metric(composed, z)
    for b in range(3):
        J = torch.autograd.functional.jacobian(lambda v: composed(v[None])[0], z[b])
        torch.testing.assert_close(G[b], J.T @ J, rtol=1e-4, atol=1e-6)
    assert torch.linalg.eigvalsh(G).min() >= -1e-6  # positive semi-definite


def test_energy_basic_properties():
    pts = torch.randn(4, 7, 5)
    e = path_energy(pts)
    assert (e >= 0).all()
    assert torch.allclose(path_energy(pts.flip(1)), e)  # the same points backwards
    assert torch.allclose(path_energy(torch.ones(2, 6, 3)), torch.zeros(2))
    # E = (T/2) sum ||step||^2: a straight equispaced path of length L has E = L^2 / 2
    line = straight_path(torch.zeros(1, 3), torch.tensor([[3.0, 0.0, 4.0]]), 10)
    assert torch.allclose(path_energy(line), torch.tensor([12.5]))


def test_identity_metric_geodesic_is_the_equispaced_straight_line():
    torch.manual_seed(0)
    a, b = torch.zeros(2, 3), torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]])
    start = straight_path(a, b, 8) + 0.3 * torch.randn(2, 9, 3)
    start[:, 0], start[:, -1] = a, b
    path, hist, _ = refine_path(lambda z: z, start, steps=1500, lr=0.01)
    assert (path - straight_path(a, b, 8)).abs().max() < 1e-3
    assert hist[-1] < hist[0]


def test_nonlinear_embedding_geodesic_is_equispaced_in_phi_not_in_z():
    # phi(z) = z^3 on the line: the geodesic from 1 to 2 has phi(z_t) = 1 + 7 t / T
    start = straight_path(torch.ones(1, 1), 2 * torch.ones(1, 1), 6)
    path, _, _ = refine_path(lambda z: z**3, start, steps=3000, lr=0.005)
    t = torch.linspace(0, 1, 7)
    expected = (1 + 7 * t) ** (1 / 3)
    assert (path[0, :, 0] - expected).abs().max() < 2e-3
    assert (path[0, :, 0] - start[0, :, 0]).abs().max() > 0.05  # not the z-equispaced line


def test_perceptual_embedding_captures_layers_and_is_frozen():
    _, _, emb = _toy()
    x = torch.rand(2, 1, 8, 8, requires_grad=True)
    phi = emb(x)
    assert phi.shape == (2, 3 * 64 + 4 * 16)
    blocks = phi[:, : 3 * 64], phi[:, 3 * 64 :]
    for block in blocks:  # channel-normalised, averaged over positions: unit squared norm
        assert torch.allclose((block**2).sum(1), torch.ones(2), atol=1e-3)
    phi.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert all(p.grad is None and not p.requires_grad for p in emb.feature_net.parameters())
    with pytest.raises(ValueError, match="layers"):
        PerceptualEmbedding(TinyFeatures(), layers=("nope",))


def test_rsgd_step_is_gradient_descent_when_the_generator_is_an_isometry():
    torch.manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(64, 3))

    class Linear(nn.Module):
        def forward(self, z):
            return 0.5 + 0.05 * (z @ q.T).reshape(-1, 1, 8, 8) / 0.05

    clf = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
    gen = Linear()
    z0 = torch.zeros(2, 3)
    with torch.no_grad():
        pred = clf(gen(z0)).argmax(1)
    target = (pred + 1) % 3
    mu, lr, lam = 1e-6, 0.1, 0.5
    res = RSGD(gen, clf, lam=lam, steps=1, lr=lr, mu=mu).explain(z0=z0, target=target)
    zg = z0.clone().requires_grad_(True)
    loss = nn.functional.cross_entropy(clf(gen(zg)), target, reduction="sum")
    (grad,) = torch.autograd.grad(loss, zg)
    torch.testing.assert_close(res.z_cf, z0 - lr * grad / (1 + mu), rtol=1e-4, atol=1e-6)


def test_pcg_reaches_the_target_on_a_toy_and_stage_two_lowers_the_energy():
    gen, clf, emb = _toy()
    z0 = torch.tensor([[1.5, -1.5], [2.0, -0.5], [0.8, -1.0]])
    pcg = PCG(gen, clf, emb, n_points=8, steps=(200, 100), kappa=0.9)
    res = pcg.explain(z0=z0, target=1)
    assert res.valid.all() and (res.prob_target >= 0.9).all()
    assert res.path_z.shape == (3, 9, 2) and res.path_x.shape == (3, 9, 1, 8, 8)
    torch.testing.assert_close(res.path_z[:, 0], z0)
    e2 = res.history["stage2_energy"]
    assert e2[-1] < e2[0]
    assert res.passes["generator"] > 0 and res.passes["feature"] > 0
    assert (res.steps_used < 200).all()  # stopped once p >= kappa
    # the stage-2 path is smoother (in phi) than the stage-1 path it started from
    smooth = path_smoothness(emb, res.path_x)
    assert (smooth < 1.6).all()
    G = pcg.metric(z0)
    assert G.shape == (3, 2, 2)


def test_baselines_run_and_flip_the_toy_classifier():
    gen, clf, _ = _toy()
    z0 = torch.tensor([[1.5, -1.5], [2.0, -0.5]])
    x0 = gen(z0)
    for method in (
        LatentWachter(gen, clf, lam=0.01, steps=150),
        RSGD(gen, clf, lam=0.01, steps=150, lr=0.05, mu=0.01),
    ):
        res = method.explain(z0=z0, target=1)
        assert res.valid.all(), type(method).__name__
        assert res.path_z.shape == (2, 11, 2)
    res = PixelWachter(clf, lam=0.01, steps=150).explain(x0, target=1)
    assert res.valid.all() and res.z_cf is None and res.path_x.shape == (2, 11, 1, 8, 8)


def test_counterfactual_api_with_a_user_generator_classifier_pair_and_encoder():
    gen, clf, _ = _toy()
    z0 = torch.tensor([[1.5, -1.5]])
    x0 = gen(z0)

    def encoder(x):  # inverts the toy generator
        left, right = x[:, 0, 0, 0], x[:, 0, 0, -1]
        return torch.stack([torch.logit(left), torch.logit(right)], 1)

    res = counterfactual(
        x0,
        1,
        generator=gen,
        classifier=clf,
        encoder=encoder,
        feature_net=TinyFeatures(),
        layers=("act1",),
        steps=(100, 20),
        n_points=5,
    )
    assert res.valid.all() and res.x_cf.shape == x0.shape
    with pytest.raises(ValueError, match="target"):
        counterfactual(x0, 0, generator=gen, classifier=clf, encoder=encoder)
    with pytest.raises(TypeError, match="generator"):
        counterfactual(x0, 1, generator=lambda z: z, classifier=clf, encoder=encoder)


def test_pgd_stays_in_the_ball_and_raises_the_loss():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 3)).eval()
    x, y = torch.rand(8, 1, 8, 8), torch.randint(0, 3, (8,))
    adv = pgd_attack(model, x, y, eps=0.1, steps=5)
    assert (adv - x).abs().max() <= 0.1 + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    ce = nn.functional.cross_entropy
    assert ce(model(adv), y) > ce(model(x), y)


@pytest.mark.parametrize("name", ["semantic-validity", "hidden-failure-mode", "smooth-transitions"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("pcg", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
    if name == "semantic-validity":
        timing = record["metrics"]["timing"]
        assert timing["PCG"]["count_generator_images_per_cf"] > 0
        assert "ratio_cpu_pcg_over_wachter" in timing
