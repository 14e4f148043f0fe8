"""SIR-SNC: neural compression of 3-D meshes through a Sparse Implicit Representation (a
narrow-band TSDF built coarse to fine, decoded by sparse marching cubes) and SNC, a
sparse-convolution autoencoder with a learned factorized entropy model."""

from iclr26.three_d.sir_snc.codec import SNCCodec
from iclr26.three_d.sir_snc.entropy import (
    FactorizedPrior,
    decode_latent,
    decode_octree,
    encode_latent,
    encode_octree,
)
from iclr26.three_d.sir_snc.evaluate import (
    bd_rate,
    chamfer,
    dense_lzma_bytes,
    draco_decode,
    draco_encode,
    quantized_sir_decode,
    quantized_sir_encode,
    random_shape,
    reference_mesh,
)
from iclr26.three_d.sir_snc.sir import (
    SIR,
    SparseImplicitRep,
    dense_tsdf,
    mesh_sdf,
    normalize_mesh,
    sparse_marching_cubes,
)
from iclr26.three_d.sir_snc.sparse import (
    DownConv3d,
    ResBlock,
    SubmanifoldConv3d,
    UpConv3d,
    neighbour_table,
)

__all__ = [
    "SIR",
    "DownConv3d",
    "FactorizedPrior",
    "ResBlock",
    "SNCCodec",
    "SparseImplicitRep",
    "SubmanifoldConv3d",
    "UpConv3d",
    "bd_rate",
    "chamfer",
    "decode_latent",
    "decode_octree",
    "dense_lzma_bytes",
    "dense_tsdf",
    "draco_decode",
    "draco_encode",
    "encode_latent",
    "encode_octree",
    "mesh_sdf",
    "neighbour_table",
    "normalize_mesh",
    "quantized_sir_decode",
    "quantized_sir_encode",
    "random_shape",
    "reference_mesh",
    "sparse_marching_cubes",
]
