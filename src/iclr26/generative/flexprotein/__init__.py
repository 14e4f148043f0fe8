"""FlexProtein (published as FlexRibbon): joint sequence–structure protein pretraining with
masked-residue prediction plus EDM coordinate denoising in three SIMLM modes, a residue
transformer → structure DiT with a geometric attention bias (or, as an ablation, an
E(n)-equivariant graph network), the ProtoFold generator of
protein-like families with held-out families, a biotite PDB/mmCIF reader, and the baselines
homology transfer, sequence-only and structure-only models and propensity-only design."""

from iclr26.generative.flexprotein.baselines import HomologyBaseline, propensity_design
from iclr26.generative.flexprotein.data import (
    AMINO_ACIDS,
    PROPENSITY,
    ProteinSet,
    ProtoFold,
    Structures,
    decode_tokens,
    encode_sequence,
    load_structures,
    nerf_backbone,
    sequence_identity,
)
from iclr26.generative.flexprotein.geometry import (
    centre,
    drmsd,
    kabsch_rmsd,
    radius_of_gyration,
    random_rotations,
    smooth_lddt_loss,
)
from iclr26.generative.flexprotein.model import (
    EGNNStructure,
    FlexProteinModel,
    edm_scalings,
    knn_graph,
    rbf_pair_features,
)
from iclr26.generative.flexprotein.pretrain import MODES, FlexProteinPretrainer

FlexRibbonModel = FlexProteinModel
FlexRibbonPretrainer = FlexProteinPretrainer

__all__ = [
    "AMINO_ACIDS",
    "EGNNStructure",
    "MODES",
    "PROPENSITY",
    "FlexProteinModel",
    "FlexProteinPretrainer",
    "FlexRibbonModel",
    "FlexRibbonPretrainer",
    "HomologyBaseline",
    "ProteinSet",
    "ProtoFold",
    "Structures",
    "centre",
    "decode_tokens",
    "drmsd",
    "edm_scalings",
    "encode_sequence",
    "kabsch_rmsd",
    "knn_graph",
    "load_structures",
    "nerf_backbone",
    "propensity_design",
    "radius_of_gyration",
    "random_rotations",
    "rbf_pair_features",
    "sequence_identity",
    "smooth_lddt_loss",
]
