"""The experiment behind the claims: one synthetic super/sub-class data set, the original and
retrained models of each setting, and every unlearner under one learning-rate rule."""

from __future__ import annotations

import numpy as np
import torch

from iclr26.claims import timeit

from .metrics import METRICS, accuracy, unlearning_report
from .model import SmallCNN, train_classifier
from .settings import Setting, make_setting
from .unlearners import TARF, UNLEARNERS

LR_GRID = (0.005, 0.01, 0.02)


def hier_data(n_train: int, n_val: int, n_test: int, size: int, seed: int) -> dict:
    """Train/validation/test splits of ``make_hier_shapes`` (4 shapes x 3 variants)."""
    from iclr26.data.vision import make_hier_shapes

    n = n_train + n_val + n_test
    X, y_sub, y_super = make_hier_shapes(n, n_super=4, n_sub=3, size=size, seed=seed)
    cut1, cut2 = n_train, n_train + n_val
    return {
        "X": torch.as_tensor(X[:cut1]),
        "y_sub": y_sub[:cut1],
        "y_super": y_super[:cut1],
        "X_val": torch.as_tensor(X[cut1:cut2]),
        "y_sub_val": y_sub[cut1:cut2],
        "y_super_val": y_super[cut1:cut2],
        "X_test": torch.as_tensor(X[cut2:]),
        "y_sub_test": y_sub[cut2:],
        "y_super_test": y_super[cut2:],
        "size": size,
    }


def _train(
    data: dict, labels: np.ndarray, idx: np.ndarray, n_classes: int, epochs: int, seed: int
) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = SmallCNN(n_classes, size=data["size"])
    return train_classifier(model, data["X"][idx], labels[idx], epochs=epochs, seed=seed)


def tarf_for(setting: Setting, **kwargs) -> TARF:
    """TARF with the ascent set widened to the easily affected data exactly when the target
    concept is broader than the forgetting data's label (the user states that granularity)."""
    return TARF(expand_forget=setting.name in ("target_mismatch", "data_mismatch"), **kwargs)


def _val_keep_accuracy(model, setting: Setting, data: dict) -> float:
    y = setting.labels_of(data["y_sub_val"], data["y_super_val"])
    keep = ~setting.target_of(data["y_sub_val"], data["y_super_val"])
    return accuracy(model, data["X_val"][keep], y[keep])


def run_setting(
    name: str,
    data: dict,
    original: torch.nn.Module,
    forget_sub: int,
    *,
    epochs_train: int,
    epochs_unlearn: int,
    seed: int,
    methods: tuple[str, ...] = tuple(UNLEARNERS),
    lr_grid: tuple[float, ...] = LR_GRID,
) -> dict:
    """Retrain the reference, run every method with each lr of ``lr_grid`` and keep the lr
    with the best validation TA-keep (the same rule for every method); report per method."""
    setting = make_setting(name, data["y_sub"], data["y_super"], forget_sub)
    timing = timeit(
        lambda: _train(
            data, setting.labels, setting.retrain_idx, setting.n_classes, epochs_train, seed + 1000
        ),
        repeat=1,
        warmup=0,
        threads=None,
    )
    retrained, retrain_cpu = timing.value, timing.cpu_s
    report_args = (setting, data["X"], data["X_test"], data["y_sub_test"], data["y_super_test"])
    reference = unlearning_report(retrained, *report_args, seed=seed)
    forget = (data["X"][setting.forget_idx], setting.labels[setting.forget_idx])
    remain = (data["X"][setting.remain_idx], setting.labels[setting.remain_idx])
    hidden = setting.target[setting.remain_idx]
    out = {
        "setting": name,
        "retrain": reference,
        "retrain_cpu_s": retrain_cpu,
        "retrain_samples": int(epochs_train * len(setting.retrain_idx)),
        "methods": {},
    }
    for method in methods:
        best = None
        for lr in lr_grid:
            kwargs = {"epochs": epochs_unlearn, "lr": lr, "seed": seed}
            unl = tarf_for(setting, **kwargs) if method == "TARF" else UNLEARNERS[method](**kwargs)
            timing = timeit(
                lambda u=unl: u.unlearn(original, forget, remain), repeat=1, warmup=0, threads=None
            )
            model_u, cpu = timing.value, timing.cpu_s
            val = _val_keep_accuracy(model_u, setting, data)
            if best is None or val > best[0]:
                best = (val, lr, model_u, unl, cpu)
        val, lr, model_u, unl, cpu = best
        rep = unlearning_report(model_u, *report_args, reference=reference, seed=seed)
        rep.update(
            {
                "lr": lr,
                "val_TA_keep": val,
                "cpu_s": cpu,
                "samples": int(unl.samples_done_),
                "steps": int(unl.steps_done_),
            }
        )
        if method == "TARF" and unl.selections_ and hidden.any():
            rep["gravity_precision"] = [
                float(hidden[s].mean()) if s.any() else 0.0 for s in unl.selections_
            ]
            rep["gravity_recall"] = [float(s[hidden].mean()) for s in unl.selections_]
        out["methods"][method] = rep
    return out


def run_experiment(
    seed: int,
    settings: tuple[str, ...],
    *,
    n_train: int,
    n_val: int,
    n_test: int,
    size: int,
    epochs_train: int,
    epochs_unlearn: int,
    methods: tuple[str, ...] = tuple(UNLEARNERS),
    lr_grid: tuple[float, ...] = LR_GRID,
) -> dict:
    """Every setting for one seed: the forgotten subclass is drawn from the seed."""
    data = hier_data(n_train, n_val, n_test, size, seed)
    n_sub_classes = int(data["y_sub"].max()) + 1
    forget_sub = int(np.random.default_rng(seed).integers(n_sub_classes))
    originals = {}
    results = {}
    for name in settings:
        level = "sub" if name in ("all_matched", "target_mismatch") else "super"
        if level not in originals:
            labels = data["y_sub"] if level == "sub" else data["y_super"]
            originals[level] = _train(
                data, labels, np.arange(len(labels)), int(labels.max()) + 1, epochs_train, seed
            )
        results[name] = run_setting(
            name,
            data,
            originals[level],
            forget_sub,
            epochs_train=epochs_train,
            epochs_unlearn=epochs_unlearn,
            seed=seed,
            methods=methods,
            lr_grid=lr_grid,
        )
    return {"seed": seed, "forget_sub": forget_sub, "settings": results}


def mean_over_seeds(runs: list[dict], setting: str, method: str, key: str) -> float:
    return float(np.mean([r["settings"][setting]["methods"][method][key] for r in runs]))


__all__ = ["LR_GRID", "METRICS", "hier_data", "run_experiment", "run_setting", "tarf_for"]
