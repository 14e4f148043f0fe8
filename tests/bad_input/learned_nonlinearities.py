"""Bad-input cases of the learned-nonlinearities room (tiny inputs; every call fails at the
boundary, before any training step)."""

import torch

from iclr26.nn.learned_nonlinearities import (
    AdditionTask,
    CopyTask,
    History,
    LinearSpline,
    Nonlinearities,
    SplineTransformer,
    TextTask,
    compatibility_matrix,
    discover_nonlinearities,
    load_patched_pretrained,
    masked_loss,
    patch_hf_activations,
    prose_task,
    steps_to_reach,
    text_task,
    train_with_frozen,
)

NAN = float("nan")
IDS = torch.randint(0, 10, (2, 5))
STREAMS = {k: torch.randint(0, 10, (50,)) for k in ("wts", "arch", "test")}


def _task():
    return AdditionTask(n_digits=1, n_train=40, n_test=10)


def _make(nl):
    return SplineTransformer(12, 8, 2, 1, context=8, nonlinearities=nl)


class _Loadable:
    @classmethod
    def from_pretrained(cls, path):
        raise AssertionError("never reached: the path is checked first")


CASES = [
    # splines
    ("LinearSpline", "range", lambda: LinearSpline(n_anchors=1), ValueError, "n_anchors"),
    ("LinearSpline", "nan", lambda: LinearSpline(x_range=NAN), ValueError, "x_range"),
    ("LinearSpline", "range", lambda: LinearSpline(init="cubic"), ValueError, "init"),
    ("LinearSpline", "other", lambda: LinearSpline(per_channel=True), ValueError, "channels"),
    (
        "LinearSpline",
        "dtype",
        lambda: LinearSpline()(torch.arange(3)),
        TypeError,
        "x must be a float",
    ),
    (
        "LinearSpline",
        "shape",
        lambda: LinearSpline(per_channel=True, channels=4)(torch.randn(2, 3)),
        ValueError,
        "x must have last dimension 4",
    ),
    ("Nonlinearities", "range", lambda: Nonlinearities(attention="relu"), ValueError, "attention"),
    ("Nonlinearities", "range", lambda: Nonlinearities(n_layers=0), ValueError, "n_layers"),
    # model
    (
        "SplineTransformer",
        "type",
        lambda: SplineTransformer(10, nonlinearities="gelu"),
        TypeError,
        "nonlinearities",
    ),
    ("SplineTransformer", "range", lambda: SplineTransformer(1), ValueError, "vocab_size"),
    (
        "SplineTransformer",
        "range",
        lambda: SplineTransformer(10, d_model=6, n_heads=4),
        ValueError,
        "d_model",
    ),
    (
        "SplineTransformer",
        "empty",
        lambda: SplineTransformer(10)(IDS[:, :0]),
        ValueError,
        "idx is empty",
    ),
    ("SplineTransformer", "dtype", lambda: SplineTransformer(10)(IDS.float()), TypeError, "idx"),
    ("SplineTransformer", "range", lambda: SplineTransformer(10)(IDS + 10), ValueError, "idx"),
    # tasks
    ("AdditionTask", "range", lambda: AdditionTask(arch_fraction=1.5), ValueError, "arch_fraction"),
    ("AdditionTask", "nan", lambda: AdditionTask(arch_fraction=NAN), ValueError, "arch_fraction"),
    (
        "AdditionTask",
        "range",
        lambda: AdditionTask(n_train=50, n_test=5, metric="bleu"),
        ValueError,
        "metric",
    ),
    ("AdditionTask", "type", lambda: AdditionTask(n_digits=1.5), TypeError, "n_digits"),
    ("CopyTask", "range", lambda: CopyTask(length=2, n_symbols=1), ValueError, "n_symbols"),
    (
        "CopyTask",
        "other",
        lambda: CopyTask(length=2, n_symbols=3, n_train=20, n_test=5),
        ValueError,
        "more examples",
    ),
    ("TextTask", "range", lambda: TextTask(STREAMS, 10, context=0), ValueError, "context"),
    (
        "TextTask",
        "empty",
        lambda: TextTask({**STREAMS, "wts": STREAMS["wts"][:0]}, 10, 8),
        ValueError,
        "streams",
    ),
    ("TextTask", "other", lambda: TextTask({"wts": STREAMS["wts"]}, 10), ValueError, "streams"),
    ("text_task", "range", lambda: text_task("poetry"), ValueError, "kind"),
    ("text_task", "range", lambda: text_task(context=0), ValueError, "context"),
    ("prose_task", "range", lambda: prose_task(context=-1), ValueError, "context"),
    ("prose_task", "type", lambda: prose_task(n_eval_windows=1.5), TypeError, "n_eval_windows"),
    ("masked_loss", "type", lambda: masked_loss(_make(None), IDS), TypeError, "batch"),
    (
        "masked_loss",
        "shape",
        lambda: masked_loss(_make(None), (IDS, IDS[:, :3], IDS > 0)),
        ValueError,
        "y must have shape",
    ),
    (
        "masked_loss",
        "other",
        lambda: masked_loss(_make(None), (IDS, IDS, torch.zeros_like(IDS, dtype=torch.bool))),
        ValueError,
        "mask",
    ),
    # two-stage procedure
    (
        "discover_nonlinearities",
        "range",
        lambda: discover_nonlinearities(_make, Nonlinearities(), _task(), steps=0),
        ValueError,
        "steps",
    ),
    (
        "discover_nonlinearities",
        "nan",
        lambda: discover_nonlinearities(_make, Nonlinearities(), _task(), spline_lr=NAN),
        ValueError,
        "spline_lr",
    ),
    (
        "discover_nonlinearities",
        "range",
        lambda: discover_nonlinearities(_make, Nonlinearities(), _task(), lr_schedule="cos"),
        ValueError,
        "lr_schedule",
    ),
    (
        "discover_nonlinearities",
        "type",
        lambda: discover_nonlinearities(_make, "theta", _task()),
        TypeError,
        "theta",
    ),
    (
        "train_with_frozen",
        "range",
        lambda: train_with_frozen(_make, None, _task(), lr=-1.0),
        ValueError,
        "lr",
    ),
    (
        "train_with_frozen",
        "type",
        lambda: train_with_frozen(_make, None, object()),
        TypeError,
        "task",
    ),
    (
        "train_with_frozen",
        "range",
        lambda: train_with_frozen(_make, None, _task(), eval_every=0),
        ValueError,
        "eval_every",
    ),
    (
        "compatibility_matrix",
        "empty",
        lambda: compatibility_matrix({}, {"x": _task()}, lambda t: _make),
        ValueError,
        "thetas",
    ),
    (
        "compatibility_matrix",
        "empty",
        lambda: compatibility_matrix({"a": None}, {"x": _task()}, lambda t: _make, seeds=()),
        ValueError,
        "seeds",
    ),
    (
        "steps_to_reach",
        "nan",
        lambda: steps_to_reach(History([1], [0.5]), NAN, 10),
        ValueError,
        "threshold",
    ),
    ("steps_to_reach", "type", lambda: steps_to_reach([0.5], 0.9, 10), TypeError, "history"),
    # Hugging Face
    (
        "patch_hf_activations",
        "other",
        lambda: patch_hf_activations(torch.nn.Linear(2, 2), Nonlinearities()),
        ValueError,
        "model has no MLP activation",
    ),
    (
        "patch_hf_activations",
        "type",
        lambda: patch_hf_activations(torch.nn.Linear(2, 2), "gelu"),
        TypeError,
        "theta",
    ),
    (
        "patch_hf_activations",
        "other",
        lambda: patch_hf_activations(torch.nn.Linear(2, 2), Nonlinearities(mlp=False)),
        ValueError,
        "theta",
    ),
    (
        "load_patched_pretrained",
        "type",
        lambda: load_patched_pretrained(object(), "."),
        TypeError,
        "model_class",
    ),
    (
        "load_patched_pretrained",
        "other",
        lambda: load_patched_pretrained(_Loadable, "/nonexistent-model"),
        FileNotFoundError,
        "path",
    ),
]

EXEMPT = {
    "History": "a record dataclass returned by the training functions; it takes no user data",
}
