"""CoGuide: contrastive diffusion guidance for spatial inverse problems (ICLR 2026).

Reconstruct a floor plan from a walk through it. The forward operator (a path planner) is not
differentiable, so instead of differentiating it, CoGuide trains plan and trajectory encoders
contrastively onto the unit sphere, uses their scaled inner product as a surrogate
log-likelihood, and steers the DDIM sampler of a diffusion prior with its gradient through Adam
updates under an annealed, gated step size, plus a no-walking-through-walls penalty.
"""

from iclr26.generative.coguide.floorplan import (
    REGIMES,
    FloorplanGenerator,
    PathPlanner,
    Trajectory,
    feasibility,
    free_space_scores,
    intersection_penalty,
    is_connected,
    rasterize,
    trajectory_consistency,
    wall,
)
from iclr26.generative.coguide.likelihood import (
    ContrastiveLikelihood,
    Encoder,
    align_weight,
    contrastive_loss,
    hard_negative,
    supcon_loss,
)
from iclr26.generative.coguide.pipeline import CoGuide
from iclr26.generative.coguide.prior import FloorplanPrior, UNet, cosine_alpha_bar
from iclr26.generative.coguide.sampler import (
    CoGuideSampler,
    DDIMSampler,
    InpaintingSampler,
    PlannerGuidedSampler,
    soft_value_iteration,
    soft_visitation,
    step_size_schedule,
)

__all__ = [
    "REGIMES",
    "CoGuide",
    "CoGuideSampler",
    "ContrastiveLikelihood",
    "DDIMSampler",
    "Encoder",
    "FloorplanGenerator",
    "FloorplanPrior",
    "InpaintingSampler",
    "PathPlanner",
    "PlannerGuidedSampler",
    "Trajectory",
    "UNet",
    "align_weight",
    "contrastive_loss",
    "cosine_alpha_bar",
    "feasibility",
    "free_space_scores",
    "hard_negative",
    "intersection_penalty",
    "is_connected",
    "rasterize",
    "soft_value_iteration",
    "soft_visitation",
    "step_size_schedule",
    "supcon_loss",
    "trajectory_consistency",
    "wall",
]
