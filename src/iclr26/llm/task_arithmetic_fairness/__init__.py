"""On Fairness of Task Arithmetic: subgroup task vectors, their merge and the group-fairness
metrics (DPD, EOD) that the paper compares against full fine-tuning and LoRA."""

from iclr26.llm.task_arithmetic_fairness.data import IdentityToxicity, Split, identity_toxicity
from iclr26.llm.task_arithmetic_fairness.editing import (
    evaluate,
    inject_subgroup,
    lambda_sweep,
    select_lambda,
)
from iclr26.llm.task_arithmetic_fairness.estimator import (
    SKLEARN_EXPECTED_FAILED_CHECKS,
    TaskArithmeticFairClassifier,
    estimate_lipschitz,
)
from iclr26.llm.task_arithmetic_fairness.fairness import fairness_bound, fairness_report
from iclr26.llm.task_arithmetic_fairness.model import (
    Encoded,
    encode,
    encoder_classifier,
    finetune,
    finetune_full,
    finetune_lora,
    predict_proba,
    sequence_classifier,
    subgroup_task_vectors,
)
from iclr26.llm.task_arithmetic_fairness.task_vector import (
    TaskVector,
    combine_coefficients,
    merge,
)

__all__ = [
    "SKLEARN_EXPECTED_FAILED_CHECKS",
    "TaskArithmeticFairClassifier",
    "estimate_lipschitz",
    "Encoded",
    "IdentityToxicity",
    "Split",
    "TaskVector",
    "combine_coefficients",
    "encode",
    "encoder_classifier",
    "evaluate",
    "fairness_bound",
    "fairness_report",
    "finetune",
    "finetune_full",
    "finetune_lora",
    "identity_toxicity",
    "inject_subgroup",
    "lambda_sweep",
    "merge",
    "predict_proba",
    "select_lambda",
    "sequence_classifier",
    "subgroup_task_vectors",
]
