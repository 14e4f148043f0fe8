"""TARF: decoupling the class label and the target concept in machine unlearning.

The four label-domain settings (``make_setting``), TARget-aware Forgetting (``TARF``) and the
baselines FineTune, GradientAscent, NegGradPlus, RandomLabel and SalUnLite, all behind
``unlearn(model, forget, remain) -> nn.Module``, with the metrics against a Retrain reference.
"""

from .metrics import METRICS, accuracy, mia_efficacy, unlearning_report
from .model import SmallCNN, predict_proba, train_classifier
from .settings import SETTINGS, Setting, make_setting
from .unlearners import (
    TARF,
    UNLEARNERS,
    FineTune,
    GradientAscent,
    NegGradPlus,
    RandomLabel,
    SalUnLite,
    Unlearner,
    anneal,
    gravity_split,
)

__all__ = [
    "METRICS",
    "SETTINGS",
    "TARF",
    "UNLEARNERS",
    "FineTune",
    "GradientAscent",
    "NegGradPlus",
    "RandomLabel",
    "SalUnLite",
    "Setting",
    "SmallCNN",
    "Unlearner",
    "accuracy",
    "anneal",
    "gravity_split",
    "make_setting",
    "mia_efficacy",
    "predict_proba",
    "train_classifier",
    "unlearning_report",
]
