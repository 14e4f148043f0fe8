"""The in-project benchmark of the claim checks: scikit-learn digits, a VAE generator g, a
standard CNN f to explain, a PGD-trained CNN h (the metric), a standard CNN h' (the
non-robust ablation) and an independent PGD-trained MLP oracle o (evaluation only; its
penultimate layer is the Frechet feature space). Models are trained once per process and
cached under ``$ICLR26_CACHE/pcg/<name>-<recipe hash>-torch<major.minor>.pt``."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr26.data.vision import digits
from iclr26.models.vision import TinyConvNet
from iclr26.vision.pcg.baselines import RSGD, LatentWachter, PixelWachter
from iclr26.vision.pcg.embedding import PerceptualEmbedding
from iclr26.vision.pcg.metrics import frechet_distance, l1, path_smoothness
from iclr26.vision.pcg.models import (
    ConvVAE,
    Decoder,
    Encoder,
    MLPClassifier,
    pgd_attack,
    train_classifier,
    train_vae,
)
from iclr26.vision.pcg.pcg import PCG

VERSION = 1
# a fixed derangement of the ten digits: source class -> target class
TARGETS = {0: 6, 1: 7, 2: 3, 3: 8, 4: 9, 5: 2, 6: 5, 7: 1, 8: 0, 9: 4}
LAMBDAS = (1.0, 0.1, 0.01)  # proximity weights, strongest first
EPS = 0.1
CNN_LAYERS = ("features.2", "features.5", "features.8")
METHODS = ("PCG", "PCG(h')", "LatentWachter", "RSGD", "PixelWachter")


def settings(scale: str) -> dict:
    """Sizes and budgets per scale (smoke: tests; quick: ~3 min on 2 cores; full)."""
    table = {
        "smoke": dict(
            size=8,
            n_train=300,
            vae_width=8,
            cnn_width=4,
            vae_epochs=3,
            cls_epochs=2,
            robust_epochs=1,
            oracle_epochs=2,
            per_class=1,
            sel_per_class=1,
            steps=(12, 6),
            warm=3,
            n_points=4,
            time_queries=4,
        ),
        "quick": dict(
            size=8,
            n_train=None,
            vae_width=16,
            cnn_width=8,
            vae_epochs=50,
            cls_epochs=15,
            robust_epochs=15,
            oracle_epochs=20,
            per_class=10,
            sel_per_class=2,
            steps=(200, 100),
            warm=10,
            n_points=8,
            time_queries=10,
        ),
        "full": dict(
            size=16,
            n_train=None,
            vae_width=32,
            cnn_width=16,
            vae_epochs=120,
            cls_epochs=30,
            robust_epochs=30,
            oracle_epochs=40,
            per_class=50,
            sel_per_class=2,
            steps=(300, 200),
            warm=10,
            n_points=10,
            time_queries=20,
        ),
    }
    return table[scale]


def cache_dir() -> Path:
    root = os.environ.get("ICLR26_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "iclr26"
    )
    path = Path(root) / "pcg"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _recipe_file(name: str, recipe: dict) -> Path:
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    ver = ".".join(torch.__version__.split(".")[:2])
    return cache_dir() / f"{name}-{key}-torch{ver}.pt"


_MEMO: dict[str, nn.Module] = {}


def _cached(name: str, recipe: dict, build, train, device: str = "cpu") -> nn.Module:
    path = _recipe_file(name, recipe)
    if str(path) in _MEMO:
        return _MEMO[str(path)]
    torch.manual_seed(recipe["seed"])
    model = build().to(device)
    if path.exists():
        model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    else:
        train(model)
        tmp = path.with_suffix(".tmp")
        torch.save(model.state_dict(), tmp)
        tmp.replace(path)
    model.eval().requires_grad_(False)
    _MEMO[str(path)] = model
    return model


def split(size: int, seed: int = 0):
    """Digits at ``size`` px, a stratified 70/30 split (numpy arrays)."""
    from sklearn.model_selection import train_test_split

    X, y = digits(size)
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)


def models(scale: str, seed: int = 0, device: str = "cpu") -> dict:
    """g (VAE), f, h, h', o trained on the training split (cached)."""
    cfg = settings(scale)
    dev = torch.device(device).type
    size = cfg["size"]
    Xtr, Xte, ytr, yte = split(size, seed)
    if cfg["n_train"]:
        Xtr, ytr = Xtr[: cfg["n_train"]], ytr[: cfg["n_train"]]
    base = dict(v=VERSION, size=size, data_seed=seed, n_train=cfg["n_train"], device=dev)
    width = cfg["cnn_width"]

    def cnn():
        return TinyConvNet(width=width, out_dim=4 * width, stride=2, in_chans=1, num_classes=10)

    vae_r = dict(
        base, kind="vae", latent=8, width=cfg["vae_width"], epochs=cfg["vae_epochs"], seed=seed
    )
    vae = _cached(
        "vae",
        vae_r,
        lambda: ConvVAE(size, 1, 8, cfg["vae_width"]),
        lambda m: train_vae(m, Xtr, epochs=cfg["vae_epochs"], seed=seed, device=device),
        device,
    )
    out = {"vae": vae, "data": (Xtr, Xte, ytr, yte)}
    for name, eps, epochs, s in (
        ("f", 0.0, cfg["cls_epochs"], seed + 1),
        ("h", EPS, cfg["robust_epochs"], seed + 2),
        ("h_std", 0.0, cfg["cls_epochs"], seed + 3),
    ):
        r = dict(base, kind="cnn", width=width, eps=eps, epochs=epochs, seed=s)
        out[name] = _cached(
            name,
            r,
            cnn,
            lambda m, eps=eps, epochs=epochs, s=s: train_classifier(
                m, Xtr, ytr, epochs=epochs, eps=eps, seed=s, device=device
            ),
            device,
        )
    r = dict(base, kind="mlp", eps=EPS, epochs=cfg["oracle_epochs"], seed=seed + 4)
    out["oracle"] = _cached(
        "oracle",
        r,
        lambda: MLPClassifier(size * size, 10),
        lambda m: train_classifier(
            m, Xtr, ytr, epochs=cfg["oracle_epochs"], eps=EPS, seed=seed + 4, device=device
        ),
        device,
    )
    return out


def _acc(model, X, y, eps=0.0):
    dev = next(model.parameters()).device
    X, y = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    if eps > 0:
        X = pgd_attack(model, X, y, eps, 10, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return float((model(X).argmax(1) == y).float().mean())


def _queries(f, X, y, per_class, skip=0):
    """``per_class`` test images per class that f classifies correctly (after ``skip``)."""
    with torch.no_grad():
        pred = f(torch.from_numpy(X).to(next(f.parameters()).device)).argmax(1).cpu().numpy()
    idx = []
    for c in range(10):
        ok = np.flatnonzero((y == c) & (pred == c))
        idx.extend(ok[skip : skip + per_class])
    idx = np.asarray(idx)
    return idx, np.array([TARGETS[int(c)] for c in y[idx]])


def make_methods(m: dict, cfg: dict) -> dict:
    g, f = Decoder(m["vae"]), m["f"]
    budget = sum(cfg["steps"])
    kw = dict(n_points=cfg["n_points"], steps=cfg["steps"], warm_steps=cfg["warm"])
    return {
        "PCG": PCG(g, f, PerceptualEmbedding(m["h"], CNN_LAYERS), **kw),
        "PCG(h')": PCG(g, f, PerceptualEmbedding(m["h_std"], CNN_LAYERS), **kw),
        "LatentWachter": LatentWachter(g, f, steps=budget, n_points=cfg["n_points"]),
        "RSGD": RSGD(g, f, steps=budget, n_points=cfg["n_points"]),
        "PixelWachter": PixelWachter(f, steps=budget, n_points=cfg["n_points"]),
    }


def solve(name: str, method, z0, x0, target, lam, refine: bool = True):
    """Run one method with proximity weight(s) ``lam`` (PCG: lam_cls = 1 / lam; without
    ``refine`` PCG skips stage 2, which never moves the counterfactual itself)."""
    if name.startswith("PCG"):
        steps = method.steps
        if not refine:
            method.steps = (steps[0], 0)
        try:
            return method._solve(z0, target, 1.0 / lam)
        finally:
            method.steps = steps
    if name == "PixelWachter":
        return method._solve(x0, target, lam)
    return method._solve(z0, target, lam)


def select_lambda(name, method, z0, x0, target) -> tuple[float, dict]:
    """The same rule for every method: the largest lambda in LAMBDAS whose f-validity on the
    held-out queries is >= 0.9; if none reaches it, the lambda with the highest validity."""
    n = len(z0)
    lam = torch.cat([torch.full((n,), v) for v in LAMBDAS]).to(z0.device)
    rep = lambda t: t.repeat(len(LAMBDAS), *([1] * (t.dim() - 1)))  # noqa: E731
    res = solve(name, method, rep(z0), rep(x0), rep(target), lam, refine=False)
    valid = res.valid.float().reshape(len(LAMBDAS), n).mean(1).tolist()
    table = dict(zip([str(v) for v in LAMBDAS], valid))
    for v, val in zip(LAMBDAS, valid):
        if val >= 0.9:
            return v, table
    return LAMBDAS[int(np.argmax(valid))], table


def _source_hash() -> str:
    """A hash of this room's code, so that a cached benchmark never outlives a change."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name != "claims.py":
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@functools.lru_cache(maxsize=4)
def run(scale: str, seed: int = 0, device: str = "cpu") -> dict:
    """Everything the claims read: per-method metrics, selections, example paths and model
    checks. The three claims run in separate worker processes, so the record is cached on
    disk, keyed by the settings, the seed, the device, the room's source and torch."""
    recipe = dict(
        v=VERSION,
        scale=scale,
        seed=seed,
        device=torch.device(device).type,
        cfg=settings(scale),
        source=_source_hash(),
    )
    path = _recipe_file(f"bench-{scale}", recipe)
    if path.exists():
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception:  # a partial or stale file: recompute
            pass
    record = _compute(scale, seed, device)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(record, tmp)
    tmp.replace(path)
    return record


def _compute(scale: str, seed: int, device: str) -> dict:
    torch.manual_seed(seed)
    cfg = settings(scale)
    m = models(scale, seed, device)
    Xtr, Xte, ytr, yte = m["data"]
    f, oracle, vae = m["f"], m["oracle"], m["vae"]
    enc = Encoder(vae)
    q_idx, q_tgt = _queries(f, Xte, yte, cfg["per_class"])
    yq = torch.from_numpy(yte[q_idx]).to(device)
    s_idx, s_tgt = _queries(f, Xte, yte, cfg["sel_per_class"], skip=cfg["per_class"])
    xq, xs = torch.from_numpy(Xte[q_idx]).to(device), torch.from_numpy(Xte[s_idx]).to(device)
    tq, ts = torch.from_numpy(q_tgt).to(device), torch.from_numpy(s_tgt).to(device)
    with torch.no_grad():
        zq, zs = enc(xq), enc(xs)
        xte_t = torch.from_numpy(Xte).to(device)
        recon = vae.decode(enc(xte_t))
    checks = {
        "vae_recon_l1": float((recon - xte_t).abs().mean()),
        "f_acc": _acc(f, Xte, yte),
        "f_robust_acc": _acc(f, Xte, yte, EPS),
        "h_acc": _acc(m["h"], Xte, yte),
        "h_robust_acc": _acc(m["h"], Xte, yte, EPS),
        "h_std_acc": _acc(m["h_std"], Xte, yte),
        "h_std_robust_acc": _acc(m["h_std"], Xte, yte, EPS),
        "oracle_acc": _acc(oracle, Xte, yte),
        "oracle_robust_acc": _acc(oracle, Xte, yte, EPS),
        "oracle_acc_on_vae_recon": float(
            (oracle(recon).argmax(1).cpu() == torch.from_numpy(yte)).float().mean()
        ),
    }
    methods = make_methods(m, cfg)
    phi_robust = methods["PCG"].perceptual
    rest = np.setdiff1d(np.arange(len(Xte)), q_idx)
    x_real = torch.from_numpy(Xte[rest]).to(device)
    out, results = {}, {}
    for name, method in methods.items():
        lam, table = select_lambda(name, method, zs, xs, ts)
        res = solve(name, method, zq, xq, tq, lam)
        results[name] = res
        with torch.no_grad():
            ovalid = (oracle(res.x_cf).argmax(1) == tq).float()
        fvalid = res.valid.float()
        collapse = float(((fvalid == 1) & (ovalid == 0)).float().sum() / fvalid.sum().clamp_min(1))
        out[name] = {
            "lam": lam,
            "selection_validity": table,
            "f_validity": float(fvalid.mean()),
            "oracle_validity": float(ovalid.mean()),
            "adversarial_collapse": collapse,
            "fd": frechet_distance(oracle.features, res.x_cf, x_real),
            "l1": l1(res.x_cf, xq),
            "smooth_phi": float(path_smoothness(phi_robust, res.path_x).median()),
            "smooth_oracle": float(path_smoothness(oracle.features, res.path_x).median()),
            "passes_per_cf": {k: v / len(xq) for k, v in res.passes.items()},
            **path_quality(oracle, res.path_x, yq, tq, x_real),
        }
    n_show = min(4, len(xq))
    show = torch.linspace(0, len(xq) - 1, n_show).long()
    return {
        "methods": out,
        "checks": checks,
        "cfg": cfg,
        "targets": dict(TARGETS),
        "queries": (xq.cpu(), tq.cpu()),
        "zq": zq.cpu(),
        "paths": {
            k: results[k].path_x[show.to(results[k].path_x.device)].cpu()
            for k in ("PCG", "LatentWachter", "PCG(h')")
        },
        "stage2_energy": results["PCG"].history["stage2_energy"],
    }


def path_quality(oracle, path_x, source, target, x_real) -> dict:
    """Along the interior points of each path: the fraction that the oracle labels neither
    the source nor the target class (semantic drift), and the Frechet distance of all interior
    images to the real test images in the oracle's feature space (off-manifold artifacts)."""
    inner = path_x[:, 1:-1]
    n_inner = inner.shape[1]
    if n_inner == 0:
        return {"drift": 0.0, "path_fd": float("nan")}
    with torch.no_grad():
        pred = oracle(inner.flatten(0, 1)).argmax(1).reshape(len(inner), n_inner)
    other = (pred != source[:, None]) & (pred != target[:, None])
    flat = inner.flatten(0, 1)
    return {
        "drift": float(other.float().mean()),
        "path_fd": frechet_distance(oracle.features, flat, x_real),
    }
