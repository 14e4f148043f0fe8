"""Bad-input cases for the SIR-SNC room (read by tests/framework/test_bad_input.py)."""

import numpy as np
import torch

from iclr26.three_d.sir_snc import (
    SIR,
    DownConv3d,
    FactorizedPrior,
    ResBlock,
    SNCCodec,
    SparseImplicitRep,
    SubmanifoldConv3d,
    UpConv3d,
    bd_rate,
    chamfer,
    decode_latent,
    decode_octree,
    dense_lzma_bytes,
    dense_tsdf,
    draco_decode,
    draco_encode,
    encode_latent,
    encode_octree,
    mesh_sdf,
    neighbour_table,
    normalize_mesh,
    quantized_sir_decode,
    quantized_sir_encode,
    random_shape,
    reference_mesh,
    sparse_marching_cubes,
)

NAN = float("nan")
TRI_V = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
TRI_F = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
V_NAN = TRI_V.copy()
V_NAN[1, 0] = NAN
V_INF = TRI_V.copy()
V_INF[2, 1] = np.inf
COORDS = np.array([[0, 0, 0], [1, 1, 1]])
SMALL = SIR(COORDS, np.array([0.5, -0.5], dtype=np.float32), 8, 0.1)


def _sphere(p):
    return np.linalg.norm(p, axis=1) - 0.5


CASES = [
    (
        "SparseImplicitRep",
        "range",
        lambda: SparseImplicitRep(res=30, num_levels=3),
        ValueError,
        "res",
    ),
    ("SparseImplicitRep", "range", lambda: SparseImplicitRep(factor=NAN), ValueError, "factor"),
    ("SparseImplicitRep", "type", lambda: SparseImplicitRep(16, 2).from_sdf(3.0), TypeError, "sdf"),
    (
        "SparseImplicitRep",
        "other",
        lambda: SparseImplicitRep(16, 2).from_sdf(lambda p: p[:, 0] * 0 + 5),
        ValueError,
        "sdf",
    ),
    (
        "SparseImplicitRep",
        "nan",
        lambda: SparseImplicitRep(16, 2).from_sdf(lambda p: p[:, 0] * NAN),
        ValueError,
        "sdf",
    ),
    (
        "SparseImplicitRep",
        "nan",
        lambda: SparseImplicitRep(16, 2).from_mesh(V_NAN, TRI_F),
        ValueError,
        "vertices",
    ),
    ("quantized_sir_encode", "type", lambda: quantized_sir_encode("x"), TypeError, "sir"),
    (
        "normalize_mesh",
        "empty",
        lambda: normalize_mesh(np.zeros((0, 3)), TRI_F),
        ValueError,
        "vertices",
    ),
    ("normalize_mesh", "range", lambda: normalize_mesh(TRI_V, TRI_F + 4), ValueError, "faces"),
    (
        "normalize_mesh",
        "dtype",
        lambda: normalize_mesh(TRI_V, TRI_F.astype(float)),
        TypeError,
        "faces",
    ),
    ("mesh_sdf", "inf", lambda: mesh_sdf(V_INF, TRI_F), ValueError, "vertices"),
    ("mesh_sdf", "shape", lambda: mesh_sdf(TRI_V[:, :2], TRI_F), ValueError, "vertices"),
    ("dense_tsdf", "range", lambda: dense_tsdf(_sphere, 1), ValueError, "res"),
    (
        "sparse_marching_cubes",
        "range",
        lambda: sparse_marching_cubes(COORDS + 8, SMALL.tsdf, 8),
        ValueError,
        "coords",
    ),
    (
        "sparse_marching_cubes",
        "nan",
        lambda: sparse_marching_cubes(COORDS, [NAN, 0.0], 8),
        ValueError,
        "tsdf",
    ),
    (
        "sparse_marching_cubes",
        "shape",
        lambda: sparse_marching_cubes(COORDS, [0.0], 8),
        ValueError,
        "tsdf",
    ),
    (
        "sparse_marching_cubes",
        "dtype",
        lambda: sparse_marching_cubes(COORDS * 1.0, SMALL.tsdf, 8),
        TypeError,
        "coords",
    ),
    ("neighbour_table", "dtype", lambda: neighbour_table(torch.zeros(3, 3)), TypeError, "coords"),
    (
        "neighbour_table",
        "shape",
        lambda: neighbour_table(torch.zeros(3, 2, dtype=torch.int64)),
        ValueError,
        "coords",
    ),
    ("SubmanifoldConv3d", "range", lambda: SubmanifoldConv3d(0, 4), ValueError, "in_channels"),
    ("DownConv3d", "range", lambda: DownConv3d(4, 0), ValueError, "out_channels"),
    ("UpConv3d", "range", lambda: UpConv3d(-1, 4), ValueError, "in_channels"),
    ("ResBlock", "range", lambda: ResBlock(0), ValueError, "channels"),
    ("FactorizedPrior", "range", lambda: FactorizedPrior(0), ValueError, "channels"),
    ("FactorizedPrior", "range", lambda: FactorizedPrior(2, (3, 0)), ValueError, "filters"),
    (
        "encode_latent",
        "dtype",
        lambda: encode_latent(FactorizedPrior(2), np.zeros((3, 2))),
        TypeError,
        "symbols",
    ),
    (
        "encode_latent",
        "shape",
        lambda: encode_latent(FactorizedPrior(2), np.zeros((3, 3), int)),
        ValueError,
        "symbols",
    ),
    (
        "decode_latent",
        "other",
        lambda: decode_latent(FactorizedPrior(2), b"", 3),
        ValueError,
        "data",
    ),
    (
        "decode_latent",
        "range",
        lambda: decode_latent(FactorizedPrior(2), b"\0" * 8, 0),
        ValueError,
        "n",
    ),
    ("encode_octree", "range", lambda: encode_octree(COORDS, 1), ValueError, "coords"),
    (
        "encode_octree",
        "empty",
        lambda: encode_octree(np.zeros((0, 3), int), 4),
        ValueError,
        "coords",
    ),
    ("decode_octree", "other", lambda: decode_octree(b""), ValueError, "data"),
    ("SNCCodec", "range", lambda: SNCCodec(lmbda=0.0), ValueError, "lmbda"),
    ("SNCCodec", "range", lambda: SNCCodec(channels=NAN), TypeError, "channels"),
    ("SNCCodec", "empty", lambda: SNCCodec(channels=2).fit([]), ValueError, "sirs"),
    (
        "SNCCodec",
        "nan",
        lambda: SNCCodec(channels=2).fit([SIR(COORDS, np.array([NAN, 0.0], np.float32), 8, 0.1)]),
        ValueError,
        "tsdf",
    ),
    ("SNCCodec", "range", lambda: SNCCodec(channels=2).fit([SMALL], steps=0), ValueError, "steps"),
    (
        "SNCCodec",
        "range",
        lambda: SNCCodec(channels=2).compress(SIR(COORDS, SMALL.tsdf, 10, 0.1)),
        ValueError,
        "res",
    ),
    ("SNCCodec", "other", lambda: SNCCodec(channels=2).decompress(b"12"), ValueError, "data"),
    ("chamfer", "type", lambda: chamfer(TRI_V, (TRI_V, TRI_F)), TypeError, "mesh_a"),
    ("chamfer", "nan", lambda: chamfer((V_NAN, TRI_F), (TRI_V, TRI_F)), ValueError, "mesh_a"),
    (
        "chamfer",
        "range",
        lambda: chamfer((TRI_V, TRI_F), (TRI_V, TRI_F), n_samples=0),
        ValueError,
        "n_samples",
    ),
    ("bd_rate", "nan", lambda: bd_rate([1, NAN], [1, 2], [1, 2], [1, 2]), ValueError, "rate_a"),
    ("bd_rate", "range", lambda: bd_rate([1, 2], [1, 0], [1, 2], [1, 2]), ValueError, "dist_a"),
    ("bd_rate", "shape", lambda: bd_rate([1, 2], [1], [1, 2], [1, 2]), ValueError, "dist_a"),
    ("bd_rate", "empty", lambda: bd_rate([1], [1], [1, 2], [1, 2]), ValueError, "rate_a"),
    (
        "draco_encode",
        "range",
        lambda: draco_encode(TRI_V, TRI_F, 0),
        ValueError,
        "quantization_bits",
    ),
    ("draco_encode", "nan", lambda: draco_encode(V_NAN, TRI_F), ValueError, "vertices"),
    ("draco_decode", "empty", lambda: draco_decode(b""), ValueError, "data"),
    ("quantized_sir_encode", "range", lambda: quantized_sir_encode(SMALL, 1), ValueError, "levels"),
    ("quantized_sir_decode", "other", lambda: quantized_sir_decode(b"1"), ValueError, "data"),
    (
        "dense_lzma_bytes",
        "range",
        lambda: dense_lzma_bytes(np.full((2, 2, 2), 3.0)),
        ValueError,
        "tsdf_volume",
    ),
    (
        "dense_lzma_bytes",
        "shape",
        lambda: dense_lzma_bytes(np.zeros((2, 2))),
        ValueError,
        "tsdf_volume",
    ),
    (
        "random_shape",
        "range",
        lambda: random_shape(np.random.default_rng(0), 0),
        ValueError,
        "n_parts",
    ),
    ("random_shape", "type", lambda: random_shape(0), TypeError, "rng"),
    ("reference_mesh", "range", lambda: reference_mesh(_sphere, 1), ValueError, "res"),
]

EXEMPT = {
    "SIR": "a plain record dataclass; every function that takes one validates its fields",
}
