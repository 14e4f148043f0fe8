"""Bad-input cases for the FlexProtein room (read by tests/framework/test_bad_input.py)."""

import functools

import numpy as np
import torch

from iclr26.generative.flexprotein import (
    EGNNStructure,
    FlexProteinModel,
    FlexProteinPretrainer,
    FlexRibbonModel,
    FlexRibbonPretrainer,
    HomologyBaseline,
    ProteinSet,
    ProtoFold,
    centre,
    decode_tokens,
    drmsd,
    edm_scalings,
    encode_sequence,
    kabsch_rmsd,
    knn_graph,
    load_structures,
    nerf_backbone,
    propensity_design,
    radius_of_gyration,
    random_rotations,
    rbf_pair_features,
    sequence_identity,
    smooth_lddt_loss,
)

NAN, INF = float("nan"), float("inf")
X = np.random.default_rng(0).normal(size=(6, 3)) * 5
X_NAN = X.copy()
X_NAN[2, 1] = NAN
T = torch.as_tensor(X[None], dtype=torch.float32)
T_NAN = torch.as_tensor(X_NAN[None], dtype=torch.float32)
TOK = np.zeros((2, 6), dtype=np.int64)


@functools.cache
def _model():
    return FlexProteinModel(d=8, layers=1, heads=2, dit_blocks=1)


@functools.cache
def _set():
    return ProtoFold(2, 12, members=2, n_novel=0, test_rhos=(), seed=0).train


def _nan_set():
    s = _set()
    c = s.coords.copy()
    c[0, 3, 0] = NAN
    return ProteinSet(s.tokens, c, s.ss, s.family)


def _bad_plddt():
    s = _set()
    return ProteinSet(s.tokens, s.coords, s.ss, s.family, np.full(s.tokens.shape, 150.0))


def _missing_ca_pdb():
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp())
    lines = [
        "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.00 90.00           N",
        "ATOM      2  CA  ALA A   1       1.460   0.000   0.000  1.00 90.00           C",
        "ATOM      3  N   GLY A   2       3.800   0.000   0.000  1.00 90.00           N",
        "ATOM      4  N   SER A   3       7.600   0.000   0.000  1.00 90.00           N",
        "ATOM      5  CA  SER A   3       9.060   0.000   0.000  1.00 90.00           C",
        "END",
    ]
    p = d / "m.pdb"
    p.write_text("\n".join(lines) + "\n")
    return p


CASES = [
    ("FlexProteinModel", "range", lambda: FlexProteinModel(d=0), ValueError, "d"),
    ("FlexProteinModel", "range", lambda: FlexProteinModel(d=8, heads=3), ValueError, "d"),
    (
        "FlexProteinModel",
        "nan",
        lambda: FlexProteinModel(d=8, heads=2, sigma_data=NAN),
        ValueError,
        "sigma_data",
    ),
    (
        "FlexProteinModel",
        "inf",
        lambda: FlexProteinModel(d=8, heads=2, sigma_max=INF),
        ValueError,
        "sigma_max",
    ),
    (
        "FlexProteinModel",
        "nan",
        lambda: _model()(torch.zeros(1, 6, dtype=torch.long), T_NAN, torch.ones(1, 6)),
        ValueError,
        "x_noisy",
    ),
    (
        "FlexProteinModel",
        "range",
        lambda: _model()(torch.zeros(1, 6, dtype=torch.long), T, -torch.ones(1, 6)),
        ValueError,
        "sigma",
    ),
    (
        "FlexProteinModel",
        "shape",
        lambda: _model()(torch.zeros(1, 5, dtype=torch.long), T, torch.ones(1, 5)),
        ValueError,
        "x_noisy",
    ),
    ("FlexProteinModel", "range", lambda: _model().embed(np.full((1, 6), 30)), ValueError, "seqs"),
    ("FlexProteinModel", "other", lambda: _model().embed(["AC", "ACD"]), ValueError, "seqs"),
    ("FlexProteinModel", "type", lambda: _model().embed(np.zeros((1, 6))), TypeError, "seqs"),
    ("FlexProteinModel", "range", lambda: _model().fold(TOK, steps=0), ValueError, "steps"),
    (
        "FlexProteinModel",
        "nan",
        lambda: _model().design(TOK[:1], X_NAN[None], np.ones((1, 6), bool)),
        ValueError,
        "structs",
    ),
    (
        "FlexProteinModel",
        "shape",
        lambda: _model().design(TOK[:1], X[None], np.ones((1, 5), bool)),
        ValueError,
        "region",
    ),
    (
        "FlexProteinModel",
        "empty",
        lambda: _model().design(TOK[:1], X[None], np.zeros((1, 6), bool)),
        ValueError,
        "region",
    ),
    (
        "FlexProteinModel",
        "other",
        lambda: FlexProteinModel.from_pretrained("/nonexistent/m.pt"),
        FileNotFoundError,
        "path",
    ),
    ("FlexRibbonModel", "range", lambda: FlexRibbonModel(layers=0), ValueError, "layers"),
    (
        "FlexProteinModel",
        "range",
        lambda: FlexProteinModel(d=8, heads=2, arch="gcn"),
        ValueError,
        "arch",
    ),
    (
        "FlexProteinModel",
        "range",
        lambda: FlexProteinModel(d=8, heads=2, arch="egnn", k_neighbors=0),
        ValueError,
        "k_neighbors",
    ),
    ("EGNNStructure", "range", lambda: EGNNStructure(8, 1, k=0), ValueError, "k_neighbors"),
    ("EGNNStructure", "range", lambda: EGNNStructure(8, 0, k=4), ValueError, "blocks"),
    (
        "EGNNStructure",
        "shape",
        lambda: EGNNStructure(8, 1, k=4)(torch.zeros(1, 6, 8), T[:, :5]),
        ValueError,
        "x",
    ),
    (
        "EGNNStructure",
        "nan",
        lambda: EGNNStructure(8, 1, k=4)(torch.zeros(1, 6, 8), T_NAN),
        ValueError,
        "x",
    ),
    (
        "FlexProteinModel",
        "range",
        lambda: FlexProteinModel(d=8, heads=2, cond_floor=0.0),
        ValueError,
        "cond_floor",
    ),
    (
        "FlexProteinModel",
        "range",
        lambda: FlexProteinModel(d=8, heads=2, rho=0.0),
        ValueError,
        "rho",
    ),
    (
        "FlexProteinModel",
        "range",
        lambda: FlexProteinModel(d=8, heads=2, sigma_min=9.0),
        ValueError,
        "sigma_min",
    ),
    (
        "FlexProteinModel",
        "nan",
        lambda: FlexProteinModel(d=8, heads=2, sigma_min=NAN),
        ValueError,
        "sigma_min",
    ),
    ("knn_graph", "nan", lambda: knn_graph(T_NAN, 3), ValueError, "x"),
    ("knn_graph", "range", lambda: knn_graph(T, 0), ValueError, "k"),
    ("knn_graph", "shape", lambda: knn_graph(T[:, :1], 3), ValueError, "x"),
    ("FlexProteinPretrainer", "type", lambda: FlexProteinPretrainer("model"), TypeError, "model"),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), mask_rate=0.0),
        ValueError,
        "mask_rate",
    ),
    (
        "FlexProteinPretrainer",
        "nan",
        lambda: FlexProteinPretrainer(_model(), lambda_struct=NAN),
        ValueError,
        "lambda_struct",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), modes=("cubist",)),
        ValueError,
        "modes",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), mlm_warmup_frac=1.0),
        ValueError,
        "mlm_warmup_frac",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), replace=(0.5, 0.1, 0.1)),
        ValueError,
        "replace",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), confidence="step"),
        ValueError,
        "confidence",
    ),
    (
        "FlexProteinPretrainer",
        "nan",
        lambda: FlexProteinPretrainer(_model(), plddt_scale=NAN),
        ValueError,
        "plddt_scale",
    ),
    (
        "FlexProteinPretrainer",
        "shape",
        lambda: FlexProteinPretrainer(_model(), mode_weights=(1.0, 1.0)),
        ValueError,
        "mode_weights",
    ),
    (
        "FlexProteinPretrainer",
        "nan",
        lambda: FlexProteinPretrainer(_model(), mode_weights=(1.0, NAN, 1.0)),
        ValueError,
        "mode_weights",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), mode_weights=(0.0, 0.0, 0.0)),
        ValueError,
        "mode_weights",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), local_window=-1),
        ValueError,
        "local_window",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), loss_weight="karras"),
        ValueError,
        "loss_weight",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), dist_loss="huber"),
        ValueError,
        "dist_loss",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model(), dist_cutoff=0.0),
        ValueError,
        "dist_cutoff",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model()).confidence_weight(np.full((1, 3), 120.0)),
        ValueError,
        "plddt",
    ),
    (
        "FlexProteinPretrainer",
        "type",
        lambda: FlexProteinPretrainer(_model()).fit(X, steps=1),
        TypeError,
        "data",
    ),
    (
        "FlexProteinPretrainer",
        "range",
        lambda: FlexProteinPretrainer(_model()).fit(_set(), steps=0),
        ValueError,
        "steps",
    ),
    (
        "FlexRibbonPretrainer",
        "range",
        lambda: FlexRibbonPretrainer(_model(), lr=-1.0),
        ValueError,
        "lr",
    ),
    ("HomologyBaseline", "type", lambda: HomologyBaseline().fit(X), TypeError, "train"),
    (
        "HomologyBaseline",
        "shape",
        lambda: HomologyBaseline().fit(_set()).predict_structure(np.zeros((1, 5), np.int64)),
        ValueError,
        "tokens",
    ),
    (
        "HomologyBaseline",
        "shape",
        lambda: HomologyBaseline().fit(_set(), labels=np.zeros(3)),
        ValueError,
        "labels",
    ),
    (
        "HomologyBaseline",
        "other",
        lambda: HomologyBaseline().predict_structure(TOK),
        RuntimeError,
        "fit",
    ),
    ("ProteinSet", "nan", _nan_set, ValueError, "coords"),
    ("ProteinSet", "range", _bad_plddt, ValueError, "plddt"),
    (
        "ProteinSet",
        "shape",
        lambda: ProteinSet(TOK, X[None], TOK, np.zeros(2)),
        ValueError,
        "coords",
    ),
    ("ProtoFold", "range", lambda: ProtoFold(0), ValueError, "n_families"),
    ("ProtoFold", "nan", lambda: ProtoFold(2, rho=NAN), ValueError, "rho"),
    ("ProtoFold", "range", lambda: ProtoFold(2, length=5), ValueError, "length"),
    ("ProtoFold", "range", lambda: ProtoFold(2, max_identity=0.0), ValueError, "max_identity"),
    ("centre", "nan", lambda: centre(X_NAN), ValueError, "coords"),
    ("centre", "shape", lambda: centre(np.zeros((4, 2))), ValueError, "coords"),
    ("decode_tokens", "range", lambda: decode_tokens(np.array([0, 40])), ValueError, "tokens"),
    ("decode_tokens", "dtype", lambda: decode_tokens(np.array([0.5])), TypeError, "tokens"),
    ("drmsd", "nan", lambda: drmsd(X_NAN, X), ValueError, "pred"),
    ("drmsd", "shape", lambda: drmsd(X[:5], X), ValueError, "pred"),
    ("drmsd", "range", lambda: drmsd(X, X, cutoff=0.0), ValueError, "cutoff"),
    ("edm_scalings", "range", lambda: edm_scalings(torch.tensor([-1.0]), 1.0), ValueError, "sigma"),
    (
        "edm_scalings",
        "nan",
        lambda: edm_scalings(torch.tensor([1.0]), NAN),
        ValueError,
        "sigma_data",
    ),
    ("encode_sequence", "other", lambda: encode_sequence("ACZ"), ValueError, "seq"),
    ("encode_sequence", "empty", lambda: encode_sequence(""), ValueError, "seq"),
    ("encode_sequence", "type", lambda: encode_sequence(3), TypeError, "seq"),
    ("kabsch_rmsd", "inf", lambda: kabsch_rmsd(X, X + INF), ValueError, "true"),
    ("kabsch_rmsd", "shape", lambda: kabsch_rmsd(X[:2], X[:2]), ValueError, "pred"),
    ("load_structures", "other", lambda: load_structures(_missing_ca_pdb()), ValueError, "no CA"),
    (
        "load_structures",
        "other",
        lambda: load_structures("/nonexistent/x.pdb"),
        FileNotFoundError,
        "paths",
    ),
    (
        "load_structures",
        "range",
        lambda: load_structures(_missing_ca_pdb(), on_missing="guess"),
        ValueError,
        "on_missing",
    ),
    ("load_structures", "empty", lambda: load_structures([]), ValueError, "paths"),
    ("nerf_backbone", "nan", lambda: nerf_backbone([NAN, 1.0], [1.0, 2.0]), ValueError, "phi"),
    ("nerf_backbone", "shape", lambda: nerf_backbone([1.0, 2.0], [1.0]), ValueError, "psi"),
    ("propensity_design", "range", lambda: propensity_design(np.array([0, 3])), ValueError, "ss"),
    ("radius_of_gyration", "nan", lambda: radius_of_gyration(X_NAN), ValueError, "coords"),
    ("random_rotations", "range", lambda: random_rotations(0), ValueError, "n"),
    ("random_rotations", "type", lambda: random_rotations(2, rng="x"), TypeError, "rng"),
    ("rbf_pair_features", "nan", lambda: rbf_pair_features(T_NAN), ValueError, "x"),
    ("rbf_pair_features", "range", lambda: rbf_pair_features(T, n_rbf=1), ValueError, "n_rbf"),
    (
        "sequence_identity",
        "shape",
        lambda: sequence_identity(TOK, np.zeros((2, 5))),
        ValueError,
        "a and b",
    ),
    (
        "sequence_identity",
        "empty",
        lambda: sequence_identity(np.zeros((0, 6)), TOK),
        ValueError,
        "a",
    ),
    ("smooth_lddt_loss", "nan", lambda: smooth_lddt_loss(T_NAN, T), ValueError, "pred"),
    ("smooth_lddt_loss", "shape", lambda: smooth_lddt_loss(T, T[:, :5]), ValueError, "true"),
]

EXEMPT = {
    "Structures": "a record dataclass returned by load_structures; its to_protein_set validates "
    "length (covered through load_structures' cases)",
}
