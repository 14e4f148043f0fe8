"""Z-NERD + HGNet: text -> hierarchical scientific knowledge graph (Joshi & Rekik, ICLR 2026).

Stage 1, Z-NERD, tags entities with Orthogonal Semantic Decomposition features and multi-scale
TCQK attention; stage 2, HGNet, extracts relations with three-channel (parent / child / peer)
message passing over a soft latent graph, regularised by the Differentiable Hierarchy Loss and the
Continuum Abstraction Field loss. ``SphereLite`` generates annotated scientific text offline;
``load_sphere`` reads the paper's SPHERE files; ``KGPipeline`` exports the graph to networkx.
"""

from .data import (
    DOMAINS,
    ENTITY_TYPES,
    RELATION_TYPES,
    Document,
    Entity,
    Relation,
    SphereLite,
    SphereLoadReport,
    load_sphere,
    topo_targets,
)
from .encoder import HashingEncoder, TokenEncoder
from .losses import CAFLoss, HierarchyLoss, acyclicity, separation
from .ner import (
    MultiScaleTCQKAttention,
    OrthogonalSemanticDecomposition,
    StandardAttentionTagger,
    ZNERDNet,
    ZNERDTagger,
    bio_labels,
    decode_bio,
    orthogonal_semantic_decomposition,
    span_f1,
)
from .pipeline import KGPipeline, documents_from_spans, to_networkx
from .relation import (
    DenseGATConv,
    GATEncoder,
    GATRelationClassifier,
    HGNet,
    HGNetModule,
    PairHead,
    PairwiseRelationClassifier,
    cycle_rate,
    entity_embeddings,
    relation_f1,
)

__all__ = [
    "DOMAINS",
    "ENTITY_TYPES",
    "RELATION_TYPES",
    "Document",
    "Entity",
    "Relation",
    "SphereLite",
    "SphereLoadReport",
    "load_sphere",
    "topo_targets",
    "HashingEncoder",
    "TokenEncoder",
    "CAFLoss",
    "HierarchyLoss",
    "acyclicity",
    "separation",
    "MultiScaleTCQKAttention",
    "OrthogonalSemanticDecomposition",
    "StandardAttentionTagger",
    "ZNERDNet",
    "ZNERDTagger",
    "bio_labels",
    "decode_bio",
    "orthogonal_semantic_decomposition",
    "span_f1",
    "KGPipeline",
    "documents_from_spans",
    "to_networkx",
    "DenseGATConv",
    "GATEncoder",
    "GATRelationClassifier",
    "HGNet",
    "HGNetModule",
    "PairHead",
    "PairwiseRelationClassifier",
    "cycle_rate",
    "entity_embeddings",
    "relation_f1",
]
