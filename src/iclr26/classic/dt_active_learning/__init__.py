"""Active learning for decision trees with a (1 + eps) multiplicative guarantee."""

from iclr26.classic.dt_active_learning.coefficient import (
    ball_disagreement,
    disagreement_coefficient,
)
from iclr26.classic.dt_active_learning.hypotheses import EnumeratedClass, GridTreeClass, StumpClass
from iclr26.classic.dt_active_learning.learners import (
    AdditiveDisagreementLearner,
    MultiplicativeActiveLearner,
    PassiveERM,
    StumpActiveLearner,
    UncertaintySamplingTree,
)
from iclr26.classic.dt_active_learning.tasks import (
    LabelOracle,
    line_pool_class,
    make_grid_task,
    make_stump_task,
    optimal_error,
    random_grid_tree,
)

__all__ = [
    "AdditiveDisagreementLearner",
    "EnumeratedClass",
    "GridTreeClass",
    "LabelOracle",
    "MultiplicativeActiveLearner",
    "PassiveERM",
    "StumpActiveLearner",
    "StumpClass",
    "UncertaintySamplingTree",
    "ball_disagreement",
    "disagreement_coefficient",
    "line_pool_class",
    "make_grid_task",
    "make_stump_task",
    "optimal_error",
    "random_grid_tree",
]
