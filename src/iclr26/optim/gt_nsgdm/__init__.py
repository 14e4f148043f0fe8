"""GT-NSGDm: decentralized normalized SGD with momentum and gradient tracking, baselines,
graphs, heavy-tailed noise, and local/Ray backends."""

from iclr26.optim.gt_nsgdm import graphs
from iclr26.optim.gt_nsgdm.algorithms import (
    DSGD,
    GTDSGD,
    DecentralizedAlgorithm,
    DNSGDm,
    DSGDClip,
    GTNSGDm,
    make_algorithm,
    theory_schedule,
)
from iclr26.optim.gt_nsgdm.backends import RayNetwork, consensus_error, run_local
from iclr26.optim.gt_nsgdm.noise import HeavyTailedNoise
from iclr26.optim.gt_nsgdm.problems import HeterogeneousRegression, SyntheticOracle

__all__ = [
    "DSGD",
    "DSGDClip",
    "DNSGDm",
    "DecentralizedAlgorithm",
    "GTDSGD",
    "GTNSGDm",
    "HeavyTailedNoise",
    "HeterogeneousRegression",
    "RayNetwork",
    "SyntheticOracle",
    "consensus_error",
    "graphs",
    "make_algorithm",
    "run_local",
    "theory_schedule",
]
