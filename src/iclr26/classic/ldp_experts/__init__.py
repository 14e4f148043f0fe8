"""Prediction with expert advice under local differential privacy (RW-FTPL, RW-AdaBatch, RW-Meta)."""

from iclr26.classic.ldp_experts.central import CentralDPHedge, TreeAggregator
from iclr26.classic.ldp_experts.env import HospitalSelectionEnv
from iclr26.classic.ldp_experts.ftpl import (
    RWFTPL,
    OnlineExpertAlgorithm,
    RWAdaBatch,
    compute_delay,
    switching_probability_bound,
)
from iclr26.classic.ldp_experts.meta import RollingRidgeLearner, RWMeta, decorrelate
from iclr26.classic.ldp_experts.online import OnlineResult, run_online
from iclr26.classic.ldp_experts.panel import (
    alternating_leader_gains,
    bernoulli_gains,
    make_hospital_panel,
    oracle_ratio,
)
from iclr26.classic.ldp_experts.privacy import (
    LDPReportStream,
    compose_gdp,
    gaussian_ldp_report,
    noise_scale,
)

__all__ = [
    "RWFTPL",
    "CentralDPHedge",
    "HospitalSelectionEnv",
    "LDPReportStream",
    "OnlineExpertAlgorithm",
    "OnlineResult",
    "RWAdaBatch",
    "RWMeta",
    "RollingRidgeLearner",
    "TreeAggregator",
    "alternating_leader_gains",
    "bernoulli_gains",
    "compose_gdp",
    "compute_delay",
    "decorrelate",
    "gaussian_ldp_report",
    "make_hospital_panel",
    "noise_scale",
    "oracle_ratio",
    "run_online",
    "switching_probability_bound",
]
