"""Pointer-content serialisation (component (b) of 3WM / LRAS).

Every scene element is a node of the graphical model: two RGB frames, the flow between them
and the relative camera pose. A patch ``p`` of a patch node with code ``c`` becomes the token
triple ``[node, pointer(p), content(c)]``; the camera node is six such triples (3 translation
and 3 axis-angle components, each uniformly binned) with pointers of their own. Because the
pointer says *where* before the content says *what*, patches can be given or generated in any
order. The vocabulary is, in this order: node ids, patch pointers, camera pointers, RGB codes,
flow codes, pose bins.
"""

from __future__ import annotations

import torch

from iclr26 import validation as V

__all__ = ["NODES", "PointerContentSerializer"]

NODES = ("RGB0", "RGB1", "FLOW", "CAM")


class PointerContentSerializer:
    """Token layout for ``n_patches`` patches per frame, ``rgb_codes`` / ``flow_codes``
    codebook entries and ``pose_bins`` bins per pose component over ``[-max_translation,
    max_translation]`` (translations) and ``[-max_rotation, max_rotation]`` (axis-angle)."""

    def __init__(
        self,
        n_patches: int,
        rgb_codes: int = 256,
        flow_codes: int = 128,
        pose_bins: int = 64,
        *,
        max_translation: float = 0.3,
        max_rotation: float = 0.05,
    ):
        self.n_patches = V.check_int(n_patches, "n_patches", low=1)
        self.rgb_codes = V.check_int(rgb_codes, "rgb_codes", low=2)
        self.flow_codes = V.check_int(flow_codes, "flow_codes", low=2)
        self.pose_bins = V.check_int(pose_bins, "pose_bins", low=2)
        self.max_translation = V.check_scalar(
            max_translation, "max_translation", low=0.0, low_open=True
        )
        self.max_rotation = V.check_scalar(max_rotation, "max_rotation", low=0.0, low_open=True)
        self.node_base = 0
        self.pointer_base = len(NODES)
        self.cam_pointer_base = self.pointer_base + self.n_patches
        self.rgb_base = self.cam_pointer_base + 6
        self.flow_base = self.rgb_base + self.rgb_codes
        self.pose_base = self.flow_base + self.flow_codes
        self.vocab_size = self.pose_base + self.pose_bins

    # ------------------------------------------------------------------ ranges
    def node_token(self, node: str) -> int:
        return self.node_base + NODES.index(V.check_choice(node, "node", NODES))

    def content_range(self, node: str) -> tuple[int, int]:
        """``[start, stop)`` of the content tokens of ``node``."""
        node = V.check_choice(node, "node", NODES)
        if node in ("RGB0", "RGB1"):
            return self.rgb_base, self.flow_base
        if node == "FLOW":
            return self.flow_base, self.pose_base
        return self.pose_base, self.vocab_size

    def node_length(self, node: str) -> int:
        """Number of tokens of a full node (3 per patch; 18 for the camera)."""
        node = V.check_choice(node, "node", NODES)
        return 18 if node == "CAM" else 3 * self.n_patches

    # ------------------------------------------------------------------ pose bins
    def pose_to_bins(self, R: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``(B, 6)`` bin indices of relative poses (translations clipped to the range)."""
        from iclr26.three_d.world_model_3wm.geometry import matrix_to_axis_angle

        R = V.check_tensor(R, "R", ndim=(2, 3), floating=True)
        t = V.check_tensor(t, "t", ndim=(1, 2), floating=True)
        R = R[None] if R.dim() == 2 else R
        t = t[None] if t.dim() == 1 else t
        if tuple(R.shape[1:]) != (3, 3) or t.shape[1:] != (3,) or len(R) != len(t):
            raise ValueError("R must be (B, 3, 3) and t (B, 3) with the same B")
        w = matrix_to_axis_angle(R)
        scale = torch.tensor([self.max_translation] * 3 + [self.max_rotation] * 3)
        unit = (torch.cat([t, w], 1) / scale).clamp(-1, 1)
        return ((unit + 1) / 2 * self.pose_bins).floor().clamp(max=self.pose_bins - 1).long()

    def bins_to_pose(self, bins: torch.Tensor):
        """Bin centres back to ``(R, t)``."""
        from iclr26.three_d.world_model_3wm.geometry import axis_angle_to_matrix

        bins = V.check_tensor(bins, "bins", ndim=2, integer=True, low=0, high=self.pose_bins - 1)
        unit = (bins.float() + 0.5) / self.pose_bins * 2 - 1
        scale = torch.tensor([self.max_translation] * 3 + [self.max_rotation] * 3)
        vals = unit * scale
        return axis_angle_to_matrix(vals[:, 3:]), vals[:, :3]

    # ------------------------------------------------------------------ (de)serialisation
    def node_tokens(
        self, node: str, codes: torch.Tensor, order: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Tokens ``(B, 3 k)`` of a node: ``codes`` (B, N) patch codes (pose bins (B, 6) for
        ``CAM``) emitted in ``order`` (B, k) of pointer indices (default: all, raster)."""
        node = V.check_choice(node, "node", NODES)
        codes = V.check_tensor(codes, "codes", ndim=2, integer=True)
        width = 6 if node == "CAM" else self.n_patches
        lo, hi = self.content_range(node)
        if codes.shape[1] != width:
            raise ValueError(f"codes of node {node} must have {width} columns, got {codes.shape}")
        if codes.min() < 0 or codes.max() >= hi - lo:
            raise ValueError(f"codes of node {node} must lie in [0, {hi - lo - 1}]")
        b = codes.shape[0]
        if order is None:
            order = torch.arange(width).expand(b, width)
        order = V.check_tensor(order, "order", ndim=2, integer=True, low=0, high=width - 1)
        if order.shape[0] != b:
            raise ValueError(f"order must have {b} rows, got {order.shape[0]}")
        base = self.cam_pointer_base if node == "CAM" else self.pointer_base
        content = torch.gather(codes, 1, order) + lo
        nodes = torch.full_like(order, self.node_token(node))
        return torch.stack([nodes, order + base, content], -1).reshape(b, -1)

    def decode(self, tokens: torch.Tensor) -> list[list[tuple[str, int, int]]]:
        """Tokens ``(B, L)`` (L a multiple of 3) to ``(node, pointer, code)`` triples per row."""
        tokens = V.check_tensor(tokens, "tokens", ndim=2, integer=True)
        if tokens.shape[1] % 3:
            raise ValueError(f"tokens must hold whole triples, got length {tokens.shape[1]}")
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise ValueError(f"tokens must lie in [0, {self.vocab_size - 1}]")
        out = []
        for row in tokens.reshape(tokens.shape[0], -1, 3).tolist():
            triples = []
            for nid, ptr, content in row:
                if nid >= len(NODES):
                    raise ValueError(f"tokens: expected a node id, got token {nid}")
                node = NODES[nid]
                base = self.cam_pointer_base if node == "CAM" else self.pointer_base
                width = 6 if node == "CAM" else self.n_patches
                lo, hi = self.content_range(node)
                if not (base <= ptr < base + width) or not (lo <= content < hi):
                    raise ValueError(f"tokens: malformed triple {(nid, ptr, content)}")
                triples.append((node, ptr - base, content - lo))
            out.append(triples)
        return out

    def encode(self, triples: list[list[tuple[str, int, int]]]) -> torch.Tensor:
        """Inverse of :meth:`decode`."""
        if not triples or not all(len(r) == len(triples[0]) for r in triples):
            raise ValueError("triples must be a non-empty list of rows of equal length")
        rows = []
        for row in triples:
            toks = []
            for node, ptr, code in row:
                base = self.cam_pointer_base if node == "CAM" else self.pointer_base
                toks += [self.node_token(node), base + int(ptr), self.content_range(node)[0] + code]
            rows.append(toks)
        return torch.tensor(rows, dtype=torch.long)
