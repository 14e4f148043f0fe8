"""Bad-input cases of the ILNN room (tiny points on L^3; every call fails at the boundary)."""

import torch

from iclr26.nn.ilnn import (
    GyroAdd,
    GyroBN,
    GyroLBN,
    ILNNSeqCNN,
    LorentzBasicBlock,
    LorentzBN,
    LorentzConv1d,
    LorentzConv2d,
    LorentzDropout,
    LorentzFC,
    LorentzGlobalPool,
    LorentzReLU,
    LorentzResNet18,
    ResNet18,
    SeqCNN,
    load_cifar10,
    lorentz_concat,
    ops,
    phylo_dna,
    signed_distance,
)

NAN, INF = float("nan"), float("inf")
POINTS = ops.expmap0(torch.randn(4, 3) * 0.3)  # (4, 4): four points on L^3
P_NAN = POINTS.clone()
P_NAN[1, 2] = NAN
P_INF = POINTS.clone()
P_INF[0, 0] = INF
EMPTY = POINTS[:0]
SEQ = ops.expmap0(torch.randn(2, 5, 3) * 0.3)  # (B, L, 1 + C), C = 3
SEQ_NAN = SEQ.clone()
SEQ_NAN[0, 1, 1] = NAN
GRID = ops.expmap0(torch.randn(2, 4, 4, 3) * 0.3)  # (B, H, W, 1 + C)
GRID_INF = GRID.clone()
GRID_INF[0, 0, 0, 1] = INF
ONE_HOT = torch.eye(4)[torch.randint(0, 4, (2, 12))]
ONE_HOT_NAN = ONE_HOT.clone()
ONE_HOT_NAN[0, 0, 0] = NAN
IMAGES = torch.rand(2, 3, 8, 8)
IMAGES_NAN = IMAGES.clone()
IMAGES_NAN[0, 0, 0, 0] = NAN
Z, A = torch.randn(2, 3), torch.zeros(2)

CASES = [
    # LorentzFC
    ("LorentzFC", "nan", lambda: LorentzFC(3, 2)(P_NAN), ValueError, "x contains NaN"),
    ("LorentzFC", "inf", lambda: LorentzFC(3, 2)(P_INF), ValueError, "x contains infinity"),
    ("LorentzFC", "empty", lambda: LorentzFC(3, 2)(EMPTY), ValueError, "x is empty"),
    ("LorentzFC", "shape", lambda: LorentzFC(4, 2)(POINTS), ValueError, "x must hold points"),
    ("LorentzFC", "dtype", lambda: LorentzFC(3, 2)(POINTS.long()), TypeError, "x must be a float"),
    ("LorentzFC", "range", lambda: LorentzFC(0, 2), ValueError, "in_features"),
    ("LorentzFC", "range", lambda: LorentzFC(3, 2.5), TypeError, "out_features"),
    ("LorentzFC", "range", lambda: LorentzFC(3, 2, curvature=NAN), ValueError, "curvature"),
    ("LorentzFC", "range", lambda: LorentzFC(3, 2, curvature=0.5), ValueError, "curvature"),
    ("LorentzFC", "type", lambda: LorentzFC(3, 2, head=1), TypeError, "head"),
    ("LorentzFC", "other", lambda: LorentzFC(3, 2)(torch.randn(4, 4)), ValueError, "x is not on"),
    # signed_distance
    ("signed_distance", "nan", lambda: signed_distance(P_NAN, Z, A), ValueError, "x contains NaN"),
    (
        "signed_distance",
        "shape",
        lambda: signed_distance(POINTS, Z[:, :2], A),
        ValueError,
        "z must",
    ),
    ("signed_distance", "shape", lambda: signed_distance(POINTS, Z, A[:1]), ValueError, "a must"),
    (
        "signed_distance",
        "nan",
        lambda: signed_distance(POINTS, Z * NAN, A),
        ValueError,
        "z contains",
    ),
    (
        "signed_distance",
        "range",
        lambda: signed_distance(POINTS, Z, A, c=-1.0),
        ValueError,
        "c must",
    ),
    # norms
    ("GyroLBN", "nan", lambda: GyroLBN(3)(P_NAN), ValueError, "x contains NaN"),
    ("GyroLBN", "inf", lambda: GyroLBN(3)(P_INF), ValueError, "x contains infinity"),
    ("GyroLBN", "empty", lambda: GyroLBN(3)(EMPTY), ValueError, "x is empty"),
    ("GyroLBN", "shape", lambda: GyroLBN(5)(POINTS), ValueError, "x must hold points of size 6"),
    ("GyroLBN", "other", lambda: GyroLBN(3)(POINTS[:1]), ValueError, "x must hold more than 1"),
    ("GyroLBN", "range", lambda: GyroLBN(3, momentum=0.0), ValueError, "momentum"),
    ("GyroLBN", "range", lambda: GyroLBN(3, momentum=NAN), ValueError, "momentum"),
    ("GyroLBN", "range", lambda: GyroLBN(3, eps=-1.0), ValueError, "eps"),
    ("GyroLBN", "range", lambda: GyroLBN(0), ValueError, "num_features"),
    ("GyroLBN", "range", lambda: GyroLBN(3, dispersion="std"), ValueError, "dispersion"),
    ("LorentzBN", "nan", lambda: LorentzBN(3)(P_NAN), ValueError, "x contains NaN"),
    ("LorentzBN", "other", lambda: LorentzBN(3)(POINTS[:1]), ValueError, "x must hold more than 1"),
    ("LorentzBN", "range", lambda: LorentzBN(3, momentum=1.5), ValueError, "momentum"),
    ("GyroBN", "inf", lambda: GyroBN(3)(P_INF), ValueError, "x contains infinity"),
    ("GyroBN", "other", lambda: GyroBN(3)(POINTS[:1]), ValueError, "x must hold more than 1"),
    ("GyroBN", "range", lambda: GyroBN(3, iters=0), ValueError, "iters"),
    # activation, dropout, residual, pooling
    ("LorentzReLU", "nan", lambda: LorentzReLU()(P_NAN), ValueError, "x contains NaN"),
    ("LorentzReLU", "range", lambda: LorentzReLU(curvature=INF), ValueError, "curvature"),
    ("LorentzDropout", "inf", lambda: LorentzDropout(0.2)(P_INF), ValueError, "x contains"),
    ("LorentzDropout", "range", lambda: LorentzDropout(1.0), ValueError, "p must be"),
    ("LorentzDropout", "range", lambda: LorentzDropout(NAN), ValueError, "p must be"),
    ("GyroAdd", "nan", lambda: GyroAdd()(POINTS, P_NAN), ValueError, "y contains NaN"),
    ("GyroAdd", "shape", lambda: GyroAdd()(POINTS, POINTS[:2]), ValueError, "shapes differ"),
    ("LorentzGlobalPool", "nan", lambda: LorentzGlobalPool()(SEQ_NAN), ValueError, "x contains"),
    ("LorentzGlobalPool", "shape", lambda: LorentzGlobalPool()(POINTS), ValueError, "x must be"),
    ("LorentzGlobalPool", "empty", lambda: LorentzGlobalPool()(SEQ[:0]), ValueError, "x is empty"),
    # convolutions and blocks
    ("LorentzConv1d", "nan", lambda: LorentzConv1d(2, 3, 3)(SEQ_NAN), ValueError, "x contains"),
    ("LorentzConv1d", "shape", lambda: LorentzConv1d(2, 3, 3)(SEQ), ValueError, "x must be"),
    ("LorentzConv1d", "range", lambda: LorentzConv1d(2, 3, 0), ValueError, "kernel_size"),
    ("LorentzConv1d", "range", lambda: LorentzConv1d(2, 3, 3, padding=-1), ValueError, "padding"),
    ("LorentzConv2d", "inf", lambda: LorentzConv2d(2, 3, 3)(GRID_INF), ValueError, "x contains"),
    ("LorentzConv2d", "shape", lambda: LorentzConv2d(2, 3, 3)(SEQ), ValueError, "x must be"),
    ("LorentzConv2d", "range", lambda: LorentzConv2d(2, 3, 3, stride=0), ValueError, "stride"),
    (
        "LorentzBasicBlock",
        "inf",
        lambda: LorentzBasicBlock(2, 2)(GRID_INF),
        ValueError,
        "x contains",
    ),
    ("LorentzBasicBlock", "range", lambda: LorentzBasicBlock(2, 0), ValueError, "out_channels"),
    # models
    ("ILNNSeqCNN", "nan", lambda: ILNNSeqCNN(channels=4)(ONE_HOT_NAN), ValueError, "x contains"),
    ("ILNNSeqCNN", "shape", lambda: ILNNSeqCNN(vocab=5)(ONE_HOT), ValueError, "x must be one-hot"),
    ("ILNNSeqCNN", "empty", lambda: ILNNSeqCNN(channels=4)(ONE_HOT[:0]), ValueError, "x is empty"),
    ("ILNNSeqCNN", "range", lambda: ILNNSeqCNN(norm="layer"), ValueError, "norm must be"),
    ("ILNNSeqCNN", "range", lambda: ILNNSeqCNN(kernel_size=4), ValueError, "kernel_size"),
    ("ILNNSeqCNN", "range", lambda: ILNNSeqCNN(classes=1), ValueError, "classes"),
    ("SeqCNN", "nan", lambda: SeqCNN(channels=4)(ONE_HOT_NAN), ValueError, "x contains NaN"),
    ("SeqCNN", "range", lambda: SeqCNN(channels=0), ValueError, "channels"),
    ("LorentzResNet18", "nan", lambda: LorentzResNet18(width=2)(IMAGES_NAN), ValueError, "images"),
    (
        "LorentzResNet18",
        "shape",
        lambda: LorentzResNet18(width=2)(IMAGES[:, :1]),
        ValueError,
        "images",
    ),
    (
        "LorentzResNet18",
        "dtype",
        lambda: LorentzResNet18(width=2)(IMAGES.long()),
        TypeError,
        "images",
    ),
    ("LorentzResNet18", "range", lambda: LorentzResNet18(width=0), ValueError, "width"),
    ("LorentzResNet18", "range", lambda: LorentzResNet18(blocks=()), TypeError, "blocks"),
    ("ResNet18", "inf", lambda: ResNet18(width=2)(IMAGES_NAN * INF), ValueError, "images"),
    ("ResNet18", "range", lambda: ResNet18(num_classes=1), ValueError, "num_classes"),
    # functions
    ("lorentz_concat", "nan", lambda: lorentz_concat(SEQ_NAN), ValueError, "points contains"),
    ("lorentz_concat", "shape", lambda: lorentz_concat(POINTS[0]), ValueError, "points must have"),
    ("lorentz_concat", "empty", lambda: lorentz_concat(SEQ[:0]), ValueError, "points is empty"),
    ("lorentz_concat", "range", lambda: lorentz_concat(SEQ, c=0.0), ValueError, "c must be"),
    ("phylo_dna", "range", lambda: phylo_dna(10, n_leaves=48), ValueError, "n_leaves"),
    ("phylo_dna", "range", lambda: phylo_dna(10, mut_rate=NAN), ValueError, "mut_rate"),
    ("phylo_dna", "range", lambda: phylo_dna(10, noise=1.5), ValueError, "noise"),
    ("phylo_dna", "range", lambda: phylo_dna(0), ValueError, "n must be"),
    ("phylo_dna", "range", lambda: phylo_dna(10, class_depth=7), ValueError, "class_depth"),
    ("phylo_dna", "range", lambda: phylo_dna(10, max_shift=-1), ValueError, "max_shift"),
    (
        "load_cifar10",
        "other",
        lambda: load_cifar10("/nonexistent/cifar-10-batches-py"),
        FileNotFoundError,
        "data_batch_1",
    ),
]

EXEMPT = {}
