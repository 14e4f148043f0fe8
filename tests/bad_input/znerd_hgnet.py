"""Bad-input cases for the Z-NERD + HGNet room (read by tests/framework/test_bad_input.py)."""

import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from iclr26.knowledge.znerd_hgnet import (
    CAFLoss,
    DenseGATConv,
    Document,
    Entity,
    GATEncoder,
    GATRelationClassifier,
    HashingEncoder,
    HGNet,
    HGNetModule,
    HierarchyLoss,
    KGPipeline,
    MultiScaleTCQKAttention,
    OrthogonalSemanticDecomposition,
    PairHead,
    PairwiseRelationClassifier,
    Relation,
    SphereLite,
    StandardAttentionTagger,
    TokenEncoder,
    ZNERDNet,
    ZNERDTagger,
    acyclicity,
    bio_labels,
    cycle_rate,
    decode_bio,
    documents_from_spans,
    entity_embeddings,
    load_sphere,
    orthogonal_semantic_decomposition,
    relation_f1,
    separation,
    span_f1,
    to_networkx,
    topo_targets,
)

NAN, INF = float("nan"), float("inf")
ENC = HashingEncoder(8)
DOC = Document(
    "alpha beta is a kind of beta.",
    [Entity("T0", "alpha beta", "Concept", ((0, 10),)), Entity("T1", "beta", "Field", ((24, 28),))],
    [Relation("T0", "T1", "is-a-subconcept-of")],
)
X3 = torch.randn(1, 4, 8)
X3_NAN = X3.clone()
X3_NAN[0, 1, 2] = NAN
SQUARE = torch.rand(3, 3)
SQUARE_NAN = SQUARE.clone()
SQUARE_NAN[0, 1] = NAN
OFFS = np.array([[0, 5], [6, 10]])


def _sphere_file(record) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="sphere-bad-"))
    path = folder / "cs.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


BROKEN = {
    "text": "short",
    "entities": [{"id": "T0", "name": "short", "span": [0, 99], "type": "Method"}],
    "relations": [],
}


def _not_fitted():
    ZNERDTagger(ENC).predict(["a text"])


CASES = [
    (
        "load_sphere",
        "other",
        lambda: load_sphere(_sphere_file(BROKEN)),
        ValueError,
        "path.*broken offset",
    ),
    (
        "load_sphere",
        "range",
        lambda: load_sphere(_sphere_file(BROKEN), errors="ignore"),
        ValueError,
        "errors",
    ),
    (
        "load_sphere",
        "other",
        lambda: load_sphere("/nonexistent/sphere.jsonl"),
        FileNotFoundError,
        "path",
    ),
    ("SphereLite", "range", lambda: SphereLite(0, p_neutral=1.5), ValueError, "p_neutral"),
    ("SphereLite", "range", lambda: SphereLite(0, p_extend=NAN), ValueError, "p_extend"),
    ("SphereLite", "range", lambda: SphereLite(0).documents(0), ValueError, "n"),
    ("topo_targets", "type", lambda: topo_targets({"text": "x"}), TypeError, "doc"),
    ("HashingEncoder", "range", lambda: HashingEncoder(1), ValueError, "dim"),
    ("HashingEncoder", "empty", lambda: HashingEncoder(4).encode([]), ValueError, "texts"),
    ("TokenEncoder", "range", lambda: TokenEncoder(max_length=2), ValueError, "max_length"),
    (
        "TokenEncoder",
        "type",
        lambda: TokenEncoder("minilm").encode("one string"),
        TypeError,
        "texts",
    ),
    ("CAFLoss", "range", lambda: CAFLoss(4, delta=NAN), ValueError, "delta"),
    ("CAFLoss", "nan", lambda: CAFLoss(8)(X3_NAN[0], torch.tensor([[0, 1]])), ValueError, "h"),
    (
        "CAFLoss",
        "shape",
        lambda: CAFLoss(8)(X3[0], torch.tensor([[0, 1, 2]])),
        ValueError,
        "child_parent",
    ),
    ("HierarchyLoss", "range", lambda: HierarchyLoss(lambda_acyc=-1.0), ValueError, "lambda_acyc"),
    ("HierarchyLoss", "nan", lambda: HierarchyLoss()(SQUARE_NAN), ValueError, "adjacency"),
    ("HierarchyLoss", "range", lambda: HierarchyLoss(method="taylor"), ValueError, "method"),
    ("acyclicity", "nan", lambda: acyclicity(SQUARE_NAN), ValueError, "adjacency"),
    ("acyclicity", "shape", lambda: acyclicity(torch.rand(3, 4)), ValueError, "adjacency"),
    ("acyclicity", "inf", lambda: acyclicity(SQUARE * INF), ValueError, "adjacency"),
    ("separation", "shape", lambda: separation(torch.rand(3)), ValueError, "adjacency"),
    ("separation", "nan", lambda: separation(SQUARE_NAN), ValueError, "adjacency"),
    (
        "MultiScaleTCQKAttention",
        "range",
        lambda: MultiScaleTCQKAttention(8, 4, (2, 4)),
        ValueError,
        "kernel_sizes",
    ),
    (
        "MultiScaleTCQKAttention",
        "range",
        lambda: MultiScaleTCQKAttention(9, 3, (1, 3)),
        ValueError,
        "heads",
    ),
    (
        "MultiScaleTCQKAttention",
        "nan",
        lambda: MultiScaleTCQKAttention(8, 2, (1, 3))(X3_NAN),
        ValueError,
        "x",
    ),
    (
        "MultiScaleTCQKAttention",
        "shape",
        lambda: MultiScaleTCQKAttention(6, 2, (1, 3))(X3),
        ValueError,
        "x",
    ),
    (
        "OrthogonalSemanticDecomposition",
        "nan",
        lambda: OrthogonalSemanticDecomposition()(X3_NAN),
        ValueError,
        "embeddings",
    ),
    (
        "OrthogonalSemanticDecomposition",
        "range",
        lambda: OrthogonalSemanticDecomposition(eps=0.0),
        ValueError,
        "eps",
    ),
    (
        "orthogonal_semantic_decomposition",
        "shape",
        lambda: orthogonal_semantic_decomposition(torch.randn(4, 8)),
        ValueError,
        "embeddings",
    ),
    (
        "orthogonal_semantic_decomposition",
        "shape",
        lambda: orthogonal_semantic_decomposition(X3, torch.ones(1, 5)),
        ValueError,
        "mask",
    ),
    ("ZNERDNet", "range", lambda: ZNERDNet(8, 9, input_mode="sum"), ValueError, "input_mode"),
    (
        "ZNERDNet",
        "nan",
        lambda: ZNERDNet(8, 9, heads=4, proj_dim=8)(X3_NAN),
        ValueError,
        "embeddings",
    ),
    ("ZNERDTagger", "range", lambda: ZNERDTagger(ENC, heads=0), ValueError, "heads"),
    ("ZNERDTagger", "range", lambda: ZNERDTagger(ENC, kernel_sizes=(1, 3, 5)), ValueError, "heads"),
    ("ZNERDTagger", "empty", lambda: ZNERDTagger(ENC).fit([]), ValueError, "docs"),
    ("ZNERDTagger", "range", lambda: ZNERDTagger(ENC).fit([DOC], lr=NAN), ValueError, "lr"),
    ("ZNERDTagger", "other", _not_fitted, RuntimeError, "not fitted"),
    (
        "StandardAttentionTagger",
        "range",
        lambda: StandardAttentionTagger(ENC, use_tcqk=True),
        ValueError,
        "use_tcqk",
    ),
    (
        "StandardAttentionTagger",
        "empty",
        lambda: StandardAttentionTagger(ENC).fit([]),
        ValueError,
        "docs",
    ),
    ("bio_labels", "shape", lambda: bio_labels(np.zeros((3, 3)), []), ValueError, "offsets"),
    ("bio_labels", "other", lambda: bio_labels(OFFS, [(0, 5, "Gene")]), ValueError, "mentions"),
    ("decode_bio", "range", lambda: decode_bio(np.array([0, 99]), OFFS), ValueError, "label_ids"),
    ("decode_bio", "shape", lambda: decode_bio(np.array([0, 1, 2]), OFFS), ValueError, "offsets"),
    ("span_f1", "shape", lambda: span_f1([[]], [[], []]), ValueError, "predicted"),
    ("span_f1", "range", lambda: span_f1([[]], [[]], min_words=-1), ValueError, "min_words"),
    ("KGPipeline", "type", lambda: KGPipeline(object(), object()), TypeError, "tagger"),
    (
        "documents_from_spans",
        "shape",
        lambda: documents_from_spans(["ab"], [[], []]),
        ValueError,
        "spans",
    ),
    (
        "documents_from_spans",
        "range",
        lambda: documents_from_spans(["ab"], [[(0, 9, "Field")]]),
        ValueError,
        "spans",
    ),
    ("documents_from_spans", "empty", lambda: documents_from_spans([], []), ValueError, "texts"),
    ("to_networkx", "empty", lambda: to_networkx([]), ValueError, "docs"),
    (
        "to_networkx",
        "shape",
        lambda: to_networkx([DOC], relations=[[], []]),
        ValueError,
        "relations",
    ),
    (
        "DenseGATConv",
        "nan",
        lambda: DenseGATConv(8, 4)(X3_NAN, torch.ones(1, 4, 4)),
        ValueError,
        "x",
    ),
    (
        "DenseGATConv",
        "shape",
        lambda: DenseGATConv(8, 4)(X3, torch.ones(1, 3, 3)),
        ValueError,
        "adjacency",
    ),
    ("DenseGATConv", "range", lambda: DenseGATConv(8, 4, heads=0), ValueError, "heads"),
    ("GATEncoder", "range", lambda: GATEncoder(8, 6, heads=4), ValueError, "hidden"),
    ("GATEncoder", "range", lambda: GATEncoder(8, 8, backend="dgl"), ValueError, "backend"),
    ("GATEncoder", "nan", lambda: GATEncoder(8, 8)(X3_NAN, torch.ones(1, 4)), ValueError, "h"),
    (
        "GATRelationClassifier",
        "range",
        lambda: GATRelationClassifier(ENC, layers=0),
        ValueError,
        "layers",
    ),
    (
        "GATRelationClassifier",
        "empty",
        lambda: GATRelationClassifier(ENC).fit([]),
        ValueError,
        "docs",
    ),
    ("HGNet", "range", lambda: HGNet(ENC, lambda_sep=-0.1), ValueError, "lambda_sep"),
    ("HGNet", "range", lambda: HGNet(ENC, delta=NAN), ValueError, "delta"),
    ("HGNet", "range", lambda: HGNet(ENC, gammas=(1.0,)), ValueError, "gammas"),
    ("HGNet", "empty", lambda: HGNet(ENC).fit([]), ValueError, "docs"),
    ("HGNet", "type", lambda: HGNet(ENC).fit(["not a document"]), TypeError, "docs"),
    ("HGNet", "other", lambda: HGNet(ENC).predict([DOC]), RuntimeError, "not fitted"),
    ("HGNetModule", "nan", lambda: HGNetModule(8, 8)(X3_NAN), ValueError, "h"),
    ("HGNetModule", "shape", lambda: HGNetModule(6, 8)(X3), ValueError, "h"),
    ("HGNetModule", "range", lambda: HGNetModule(8, 8, layers=0), ValueError, "layers"),
    ("PairHead", "nan", lambda: PairHead(8)(X3_NAN), ValueError, "h"),
    ("PairHead", "shape", lambda: PairHead(6)(X3), ValueError, "h"),
    (
        "PairwiseRelationClassifier",
        "range",
        lambda: PairwiseRelationClassifier(ENC, epochs=0),
        ValueError,
        "epochs",
    ),
    (
        "PairwiseRelationClassifier",
        "range",
        lambda: PairwiseRelationClassifier(ENC, dropout=1.0),
        ValueError,
        "dropout",
    ),
    ("cycle_rate", "empty", lambda: cycle_rate([]), ValueError, "probabilities"),
    ("cycle_rate", "nan", lambda: cycle_rate([np.full((2, 2), NAN)]), ValueError, "probabilities"),
    (
        "cycle_rate",
        "range",
        lambda: cycle_rate([np.zeros((2, 2))], threshold=2.0),
        ValueError,
        "threshold",
    ),
    (
        "entity_embeddings",
        "nan",
        lambda: entity_embeddings(np.full((2, 4), NAN), OFFS, DOC),
        ValueError,
        "features",
    ),
    (
        "entity_embeddings",
        "shape",
        lambda: entity_embeddings(np.zeros((3, 4)), OFFS, DOC),
        ValueError,
        "offsets",
    ),
    ("relation_f1", "shape", lambda: relation_f1([[], []], [DOC]), ValueError, "predicted"),
    ("relation_f1", "empty", lambda: relation_f1([], []), ValueError, "docs"),
]

EXEMPT = {
    "Document": "a plain record dataclass (text, entities, relations); validated where it is used",
    "Entity": "a plain record dataclass; spans are checked by load_sphere and the consumers",
    "Relation": "a plain record dataclass; endpoints are checked by load_sphere",
    "SphereLoadReport": "a record returned by load_sphere; takes no user data",
}
