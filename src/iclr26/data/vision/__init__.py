"""Synthetic and bundled image data of the shared tiny vision stack (numpy, seeded, offline).

Every generator returns float32 images (n, 3, H, W) in [0, 1] and is deterministic for a
fixed seed, with a separate random stream per component (labels, pose, colour, background,
noise). The modules: ``shapes`` (families A and B), ``scenes`` (scenes and videos with
instance masks), ``parts`` (bird-like part objects), ``spurious`` (shapes on water/land
backgrounds), ``hierarchy`` (super/sub-class shapes), ``real`` (scikit-image/scikit-learn
images).
"""

from iclr26.data.vision.hierarchy import make_hier_shapes
from iclr26.data.vision.parts import PARTS, make_part_objects, part_attributes
from iclr26.data.vision.real import SKIMAGE_RGB, digits, lfw_faces, skimage_crops, skimage_images
from iclr26.data.vision.scenes import MIN_VISIBLE, make_scenes, make_videos
from iclr26.data.vision.shapes import FAMILY_A, FAMILY_B, family_shapes, make_shapes
from iclr26.data.vision.spurious import BACKGROUNDS, make_spurious_shapes

__all__ = [
    "BACKGROUNDS",
    "FAMILY_A",
    "FAMILY_B",
    "MIN_VISIBLE",
    "PARTS",
    "SKIMAGE_RGB",
    "digits",
    "family_shapes",
    "lfw_faces",
    "make_hier_shapes",
    "make_part_objects",
    "make_scenes",
    "make_shapes",
    "make_spurious_shapes",
    "make_videos",
    "part_attributes",
    "skimage_crops",
    "skimage_images",
]
