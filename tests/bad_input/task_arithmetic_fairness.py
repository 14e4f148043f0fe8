"""Bad-input cases for the task-arithmetic fairness room (read by tests/framework/test_bad_input.py)."""

import numpy as np
import torch

from iclr26.llm.task_arithmetic_fairness import (
    Encoded,
    TaskArithmeticFairClassifier,
    TaskVector,
    combine_coefficients,
    encode,
    encoder_classifier,
    estimate_lipschitz,
    evaluate,
    fairness_bound,
    fairness_report,
    finetune,
    finetune_full,
    finetune_lora,
    identity_toxicity,
    inject_subgroup,
    lambda_sweep,
    merge,
    predict_proba,
    select_lambda,
    sequence_classifier,
    subgroup_task_vectors,
)

NAN = float("nan")
_Y = np.array([1, 0, 1, 0])
_P = np.array([1, 1, 0, 0])
_G = np.array(["a", "a", "b", "b"])


def _lin(width=3):
    torch.manual_seed(0)
    return torch.nn.Linear(width, 2)


def _tv(width=3):
    base, tuned = _lin(width), _lin(width)
    with torch.no_grad():
        tuned.weight.add_(1.0)
    return TaskVector.from_models(base, tuned)


_ENC = Encoded(torch.ones((4, 3), dtype=torch.long), torch.ones((4, 3), dtype=torch.long))
_SWEEP = [{"lam": 0.0, "val": {"accuracy": 0.5, "dpd": 0.1, "eod": 0.2}}]


class _Tok:
    pad_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1, 2]}


_ENC2 = Encoded(torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))
_TFC = TaskArithmeticFairClassifier

CASES = [
    (
        "estimate_lipschitz",
        "empty",
        lambda: estimate_lipschitz(torch.nn.Linear(1, 1), [], _ENC2),
        ValueError,
        "vectors",
    ),
    (
        "estimate_lipschitz",
        "type",
        lambda: estimate_lipschitz(torch.nn.Linear(1, 1), [3], _ENC2),
        TypeError,
        r"vectors\[0\]",
    ),
    (
        "estimate_lipschitz",
        "range",
        lambda: estimate_lipschitz(
            torch.nn.Linear(1, 1), [TaskVector({"weight": torch.ones(1, 1)})], _ENC2, radius=NAN
        ),
        ValueError,
        "radius",
    ),
    (
        "estimate_lipschitz",
        "range",
        lambda: estimate_lipschitz(
            torch.nn.Linear(1, 1), [TaskVector({"weight": torch.ones(1, 1)})], _ENC2, n_directions=0
        ),
        ValueError,
        "n_directions",
    ),
    ("TaskArithmeticFairClassifier", "empty", lambda: _TFC().fit([], [], []), ValueError, "texts"),
    (
        "TaskArithmeticFairClassifier",
        "shape",
        lambda: _TFC().fit(["a", "b"], [0], ["g", "h"]),
        ValueError,
        "y",
    ),
    (
        "TaskArithmeticFairClassifier",
        "other",
        lambda: _TFC().fit(["a", "b"], [1, 1], ["g", "h"]),
        ValueError,
        "y",
    ),
    (
        "TaskArithmeticFairClassifier",
        "nan",
        lambda: _TFC().fit(["a", "b"], [0.0, NAN], ["g", "h"]),
        ValueError,
        "y",
    ),
    (
        "TaskArithmeticFairClassifier",
        "range",
        lambda: _TFC(lr=-1.0).fit(["a", "b"], [0, 1], ["g", "h"]),
        ValueError,
        "lr",
    ),
    (
        "TaskArithmeticFairClassifier",
        "range",
        lambda: _TFC(lam="best").fit(["a", "b"], [0, 1], ["g", "h"]),
        ValueError,
        "lam",
    ),
    (
        "TaskArithmeticFairClassifier",
        "other",
        lambda: _TFC().fit(["a", "b"], [0, 1], ["g", "h"]),
        ValueError,
        "val",
    ),
    (
        "TaskArithmeticFairClassifier",
        "type",
        lambda: _TFC().fit("ab", [0, 1], ["g", "h"]),
        TypeError,
        "texts",
    ),
    # TaskVector: another shape, NaN, empty, wrong types
    ("TaskVector", "shape", lambda: _tv(3).apply_to(_lin(4)), ValueError, "base"),
    (
        "TaskVector",
        "shape",
        lambda: TaskVector.from_models(_lin(3), _lin(4)),
        ValueError,
        "finetuned",
    ),
    ("TaskVector", "shape", lambda: _tv(3) + _tv(4), ValueError, "other"),
    ("TaskVector", "nan", lambda: TaskVector({"w": torch.tensor([NAN])}), ValueError, "vector"),
    (
        "TaskVector",
        "inf",
        lambda: TaskVector({"w": torch.tensor([float("inf")])}),
        ValueError,
        "vector",
    ),
    ("TaskVector", "empty", lambda: TaskVector({}), ValueError, "vector"),
    ("TaskVector", "dtype", lambda: TaskVector({"w": torch.tensor([1])}), TypeError, "vector"),
    ("TaskVector", "range", lambda: _tv() * NAN, ValueError, "scale"),
    ("TaskVector", "range", lambda: _tv() * 1e38 * 1e3, ValueError, "scale"),  # overflow
    ("TaskVector", "range", lambda: _tv() * 3e38 + _tv() * 3e38, ValueError, "sum"),
    ("TaskVector", "type", lambda: TaskVector.from_models("model", _lin()), TypeError, "base"),
    ("merge", "shape", lambda: merge(_lin(4), [_tv(3)], 0.5), ValueError, "base"),
    ("merge", "empty", lambda: merge(_lin(), [], 0.5), ValueError, "vectors"),
    ("merge", "nan", lambda: merge(_lin(), [_tv()], [NAN]), ValueError, r"coeffs\[0\]"),
    ("merge", "shape", lambda: merge(_lin(), [_tv()], [0.1, 0.2]), ValueError, "coeffs"),
    (
        "combine_coefficients",
        "range",
        lambda: combine_coefficients(0.5, 2, "max"),
        ValueError,
        "convention",
    ),
    ("combine_coefficients", "nan", lambda: combine_coefficients(NAN, 2), ValueError, "lam"),
    ("inject_subgroup", "shape", lambda: inject_subgroup(_lin(4), _tv(3), 0.3), ValueError, "base"),
    (
        "inject_subgroup",
        "inf",
        lambda: inject_subgroup(_lin(), _tv(), float("inf")),
        ValueError,
        "lam",
    ),
    (
        "inject_subgroup",
        "type",
        lambda: inject_subgroup(_lin(), {"w": 1}, 0.3),
        TypeError,
        "vector",
    ),
    # fairness metrics: subgroup labels missing, NaN labels, wrong shapes
    ("fairness_report", "other", lambda: fairness_report(_Y, _P, None), ValueError, "groups"),
    (
        "fairness_report",
        "nan",
        lambda: fairness_report(_Y, _P, np.array([0, 1, NAN, 1])),
        ValueError,
        "groups",
    ),
    (
        "fairness_report",
        "other",
        lambda: fairness_report(_Y, _P, ["a", None, "b", "b"]),
        ValueError,
        "groups",
    ),
    ("fairness_report", "shape", lambda: fairness_report(_Y, _P, _G[:3]), ValueError, "groups"),
    ("fairness_report", "range", lambda: fairness_report(_Y, _P, ["a"] * 4), ValueError, "groups"),
    (
        "fairness_report",
        "nan",
        lambda: fairness_report([1.0, NAN, 0, 0], _P, _G),
        ValueError,
        "y_true",
    ),
    (
        "fairness_report",
        "range",
        lambda: fairness_report(_Y, [2, 0, 1, 0], _G),
        ValueError,
        "y_pred",
    ),
    ("fairness_report", "shape", lambda: fairness_report(_Y, _P[:3], _G), ValueError, "y_pred"),
    ("fairness_report", "empty", lambda: fairness_report([], [], []), ValueError, "y_true"),
    (
        "fairness_report",
        "range",
        lambda: fairness_report(_Y, _P, _G, n_bootstrap=-1),
        ValueError,
        "n_bootstrap",
    ),
    ("fairness_bound", "nan", lambda: fairness_bound([NAN], [1.0], 1, 1, 1), ValueError, "coeffs"),
    (
        "fairness_bound",
        "range",
        lambda: fairness_bound([1.0], [-1.0], 1, 1, 1),
        ValueError,
        "tau_norms",
    ),
    (
        "fairness_bound",
        "shape",
        lambda: fairness_bound([1.0, 2.0], [1.0], 1, 1, 1),
        ValueError,
        "tau_norms",
    ),
    ("fairness_bound", "range", lambda: fairness_bound([1.0], [1.0], -1, 1, 1), ValueError, "L"),
    (
        "fairness_bound",
        "inf",
        lambda: fairness_bound([1.0], [1.0], 1, float("inf"), 1),
        ValueError,
        "B0",
    ),
    # editing
    ("select_lambda", "range", lambda: select_lambda(_SWEEP, "best"), ValueError, "rule"),
    ("select_lambda", "empty", lambda: select_lambda([], "acc"), ValueError, "sweep"),
    (
        "select_lambda",
        "other",
        lambda: select_lambda(_SWEEP, "fair_guarded"),
        ValueError,
        "reference_accuracy",
    ),
    (
        "select_lambda",
        "nan",
        lambda: select_lambda(_SWEEP, "fair_guarded", reference_accuracy=NAN),
        ValueError,
        "reference_accuracy",
    ),
    (
        "lambda_sweep",
        "empty",
        lambda: lambda_sweep(_lin(), [], {"v": (_ENC, _Y, _G)}),
        ValueError,
        "vectors",
    ),
    (
        "lambda_sweep",
        "other",
        lambda: lambda_sweep(_lin(), [_tv()], {"v": (_ENC, _Y, None)}),
        ValueError,
        "groups",
    ),
    (
        "lambda_sweep",
        "range",
        lambda: lambda_sweep(_lin(), [_tv()], {"v": (_ENC, _Y, _G)}, convention="max"),
        ValueError,
        "convention",
    ),
    (
        "lambda_sweep",
        "nan",
        lambda: lambda_sweep(_lin(), [_tv()], {"v": (_ENC, _Y, _G)}, grid=[NAN]),
        ValueError,
        "grid",
    ),
    (
        "evaluate",
        "range",
        lambda: evaluate(_lin(), _ENC, _Y, _G, threshold=1.5),
        ValueError,
        "threshold",
    ),
    # training and data
    ("finetune", "shape", lambda: finetune(_lin(), _ENC, _Y[:3]), ValueError, "y"),
    ("finetune", "nan", lambda: finetune(_lin(), _ENC, [1.0, NAN, 0, 1]), ValueError, "y"),
    ("finetune", "range", lambda: finetune(_lin(), _ENC, _Y, lr=NAN), ValueError, "lr"),
    ("finetune", "range", lambda: finetune(_lin(), _ENC, _Y, epochs=0), ValueError, "epochs"),
    ("finetune", "type", lambda: finetune(_lin(), np.ones((4, 3)), _Y), TypeError, "enc"),
    ("finetune_full", "range", lambda: finetune_full(_lin(), _ENC, [0, 1, 2, 0]), ValueError, "y"),
    ("finetune_lora", "range", lambda: finetune_lora(_lin(), _ENC, _Y, r=0), ValueError, "r"),
    (
        "finetune_lora",
        "range",
        lambda: finetune_lora(_lin(), _ENC, _Y, dropout=1.0),
        ValueError,
        "dropout",
    ),
    (
        "subgroup_task_vectors",
        "other",
        lambda: subgroup_task_vectors(_lin(), _ENC, _Y, None),
        ValueError,
        "groups",
    ),
    (
        "subgroup_task_vectors",
        "shape",
        lambda: subgroup_task_vectors(_lin(), _ENC, _Y, ["a", "b"]),
        ValueError,
        "groups",
    ),
    ("predict_proba", "type", lambda: predict_proba(_lin(), [[1, 2]]), TypeError, "enc"),
    (
        "predict_proba",
        "range",
        lambda: predict_proba(_lin(), _ENC, batch_size=0),
        ValueError,
        "batch_size",
    ),
    ("encode", "empty", lambda: encode(_Tok(), []), ValueError, "texts"),
    ("encode", "type", lambda: encode(_Tok(), "one string"), TypeError, "texts"),
    ("encode", "dtype", lambda: encode(_Tok(), ["ok", 3]), TypeError, "texts"),
    ("encode", "range", lambda: encode(_Tok(), ["ok"], max_length=0), ValueError, "max_length"),
    ("sequence_classifier", "type", lambda: sequence_classifier(3), TypeError, "base"),
    (
        "sequence_classifier",
        "range",
        lambda: sequence_classifier("test", seed=-1),
        ValueError,
        "seed",
    ),
    ("encoder_classifier", "range", lambda: encoder_classifier(seed=-1), ValueError, "seed"),
    (
        "encoder_classifier",
        "range",
        lambda: encoder_classifier(num_labels=1),
        ValueError,
        "num_labels",
    ),
    ("encoder_classifier", "type", lambda: encoder_classifier(path=3), TypeError, "path"),
    (
        "encoder_classifier",
        "other",
        lambda: encoder_classifier(path="no-such-model-folder"),
        ValueError,
        "path",
    ),
    (
        "encode",
        "type",
        lambda: encode(_Tok(), ["ok"], special_tokens="yes"),
        TypeError,
        "special_tokens",
    ),
    ("identity_toxicity", "range", lambda: identity_toxicity(groups=5), ValueError, "groups"),
    (
        "identity_toxicity",
        "range",
        lambda: identity_toxicity(annotator_bias=NAN),
        ValueError,
        "annotator_bias",
    ),
    ("identity_toxicity", "range", lambda: identity_toxicity(n_train=0), ValueError, "n_train"),
]

EXEMPT = {
    "Encoded": "a record of token ids and mask returned by encode; takes no user data",
    "IdentityToxicity": "a record dataclass returned by identity_toxicity; takes no user data",
    "Split": "a record dataclass of one split returned by identity_toxicity",
}
