"""Bad-input cases of the TARF room."""

import numpy as np
import torch

from iclr26.vision.tarf import (
    TARF,
    FineTune,
    GradientAscent,
    NegGradPlus,
    RandomLabel,
    SalUnLite,
    SmallCNN,
    accuracy,
    anneal,
    gravity_split,
    make_setting,
    mia_efficacy,
    predict_proba,
    train_classifier,
    unlearning_report,
)

Y_SUB = np.repeat(np.arange(4), 6)
Y_SUPER = Y_SUB // 2
X = torch.rand(24, 3, 8, 8)
Y = torch.as_tensor(Y_SUB)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = float("nan")
MODEL = SmallCNN(4, size=8, width=2)
PAIR = (X[:6], Y[:6])
REST = (X[6:], Y[6:])
SETTING = make_setting("all_matched", Y_SUB, Y_SUPER, 0)


def _unlearn(cls, **kw):
    return lambda: cls(**kw).unlearn(MODEL, PAIR, REST)


CASES = [
    (
        "make_setting",
        "range",
        lambda: make_setting("all_matched", Y_SUB, Y_SUPER, 7),
        ValueError,
        "forget_sub",
    ),
    (
        "make_setting",
        "other",
        lambda: make_setting("sideways", Y_SUB, Y_SUPER, 0),
        ValueError,
        "name",
    ),
    (
        "make_setting",
        "shape",
        lambda: make_setting("all_matched", Y_SUB, Y_SUPER[:5], 0),
        ValueError,
        "y_super",
    ),
    ("make_setting", "empty", lambda: make_setting("all_matched", [], [], 0), ValueError, "y_sub"),
    (
        "make_setting",
        "nan",
        lambda: make_setting("all_matched", [0.0, np.nan], [0, 0], 0),
        ValueError,
        "y_sub",
    ),
    ("SmallCNN", "range", lambda: SmallCNN(1), ValueError, "n_classes"),
    ("SmallCNN", "type", lambda: SmallCNN(2.5), TypeError, "n_classes"),
    ("train_classifier", "nan", lambda: train_classifier(MODEL, X_NAN, Y), ValueError, "X"),
    ("train_classifier", "shape", lambda: train_classifier(MODEL, X[:, 0], Y), ValueError, "X"),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(MODEL, X, Y, lr=float("nan")),
        ValueError,
        "lr",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(MODEL, X, Y, epochs=0),
        ValueError,
        "epochs",
    ),
    ("train_classifier", "shape", lambda: train_classifier(MODEL, X, Y[:3]), ValueError, "y"),
    ("predict_proba", "type", lambda: predict_proba(MODEL, np.zeros((2, 3, 8, 8))), TypeError, "X"),
    ("predict_proba", "nan", lambda: predict_proba(MODEL, X_NAN), ValueError, "X"),
    ("accuracy", "empty", lambda: accuracy(MODEL, X[:0], Y[:0]), ValueError, "X"),
    ("accuracy", "inf", lambda: accuracy(MODEL, X * float("inf"), Y), ValueError, "X"),
    (
        "mia_efficacy",
        "nan",
        lambda: mia_efficacy(MODEL, (X_NAN, Y), PAIR, REST),
        ValueError,
        "member",
    ),
    (
        "mia_efficacy",
        "empty",
        lambda: mia_efficacy(MODEL, PAIR, (X[:0], Y[:0]), REST),
        ValueError,
        "non_member",
    ),
    (
        "unlearning_report",
        "type",
        lambda: unlearning_report(MODEL, "all_matched", X, X, Y_SUB, Y_SUPER),
        TypeError,
        "setting",
    ),
    (
        "unlearning_report",
        "shape",
        lambda: unlearning_report(MODEL, SETTING, X, X, Y_SUB, Y_SUPER[:3]),
        ValueError,
        "y_super_test",
    ),
    (
        "unlearning_report",
        "nan",
        lambda: unlearning_report(MODEL, SETTING, X_NAN, X, Y_SUB, Y_SUPER),
        ValueError,
        "X_train",
    ),
    ("anneal", "other", lambda: anneal(1, 5, 1.0, "square"), ValueError, "kind"),
    (
        "gravity_split",
        "nan",
        lambda: gravity_split(np.array([0.1, np.nan, 0.2, 0.3])),
        ValueError,
        "scores",
    ),
    ("gravity_split", "shape", lambda: gravity_split(np.zeros((3, 2))), ValueError, "scores"),
    ("TARF", "range", _unlearn(TARF, alpha0=float("nan")), ValueError, "alpha0"),
    ("TARF", "range", _unlearn(TARF, phase_fracs=(0.8, 0.2)), ValueError, "phase_fracs"),
    ("TARF", "other", _unlearn(TARF, select_by="luck"), ValueError, "select_by"),
    ("TARF", "range", _unlearn(TARF, quantile=1.5), ValueError, "quantile"),
    ("TARF", "type", lambda: TARF().unlearn("model", PAIR, REST), TypeError, "model"),
    ("TARF", "nan", lambda: TARF().unlearn(MODEL, (X_NAN[:6], Y[:6]), REST), ValueError, "forget"),
    ("TARF", "empty", lambda: TARF().unlearn(MODEL, (X[:0], Y[:0]), REST), ValueError, "forget"),
    (
        "TARF",
        "shape",
        lambda: TARF().unlearn(MODEL, PAIR, (X[6:, :, :4], Y[6:])),
        ValueError,
        "differ in shape",
    ),
    ("FineTune", "range", _unlearn(FineTune, lr=0.0), ValueError, "lr"),
    ("FineTune", "range", _unlearn(FineTune, epochs=-1), ValueError, "epochs"),
    (
        "GradientAscent",
        "range",
        _unlearn(GradientAscent, loss_max=float("inf")),
        ValueError,
        "loss_max",
    ),
    (
        "GradientAscent",
        "nan",
        lambda: GradientAscent().unlearn(MODEL, PAIR, (X_NAN[:18], Y[:18])),
        ValueError,
        "remain",
    ),
    ("NegGradPlus", "range", _unlearn(NegGradPlus, beta=float("nan")), ValueError, "beta"),
    ("NegGradPlus", "range", _unlearn(NegGradPlus, momentum=1.0), ValueError, "momentum"),
    ("RandomLabel", "range", _unlearn(RandomLabel, batch=0), ValueError, "batch"),
    ("RandomLabel", "type", lambda: RandomLabel().unlearn(MODEL, X, REST), TypeError, "forget"),
    ("SalUnLite", "range", _unlearn(SalUnLite, saliency=0.0), ValueError, "saliency"),
    ("SalUnLite", "range", _unlearn(SalUnLite, saliency=float("nan")), ValueError, "saliency"),
]

EXEMPT = {
    "Setting": "a record of index sets built by make_setting (which validates); not built by hand",
    "Unlearner": "the abstract base of the unlearners; each subclass is covered",
}
