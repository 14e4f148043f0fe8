"""The forward operator of CoGuide: synthetic homes, a path planner and the trajectory raster.

A floor plan is a square array with +1 on walls and -1 on free space. A trajectory is what the
planner A(x) produces: shortest paths (breadth-first search on free cells) between consecutive
random waypoints, added until the walked cells cover a target fraction of the free space (the
paper's sparse / medium / dense regimes of about 10 / 25 / 40 % coverage). The metrics at the
end compare a reconstructed plan with the ground truth and with the observed walk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from iclr26 import validation as V

REGIMES = {"sparse": 0.10, "medium": 0.25, "dense": 0.40}
_OFFSETS4 = ((-1, 0), (1, 0), (0, -1), (0, 1))
_OFFSETS8 = _OFFSETS4 + ((-1, -1), (-1, 1), (1, -1), (1, 1))


def wall(x):
    """Wall probability of a plan in the +-1 convention: (1 + x) / 2 (works on arrays and
    tensors)."""
    V.check_finite(x, "x")
    return (1 + x) / 2


def _check_plan(x, name: str = "x") -> np.ndarray:
    arr = V.check_array(x, name, ndim=2, dtype=np.float64)
    if arr.shape[0] != arr.shape[1] or arr.shape[0] < 8:
        raise ValueError(f"{name} must be a square plan of side >= 8, got shape {arr.shape}")
    return arr


class FloorplanGenerator:
    """Synthetic homes by recursive binary space partition.

    Outer wall, 1-cell interior walls splitting rooms until a side would fall below
    ``min_room``, one door of 1-2 cells in every split wall (so the rooms form a connected
    tree), and with probability ``l_shape`` one corner quadrant filled solid (kept only when the
    free space stays connected). Plans are +1 on walls, -1 on free cells.
    """

    def __init__(self, size: int = 32, min_room: int = 5, l_shape: float = 0.3):
        self.size = V.check_int(size, "size", low=8)
        self.min_room = V.check_int(min_room, "min_room", low=2)
        if 2 * self.min_room + 1 > self.size - 2:
            raise ValueError(
                f"min_room must leave room for one split, got {min_room} for size {size}"
            )
        self.l_shape = V.check_probability(l_shape, "l_shape")

    def _split(self, grid, rng, r0, r1, c0, c1, doors) -> None:
        """Split the free rectangle rows r0..r1-1, cols c0..c1-1 (exclusive ends)."""
        h, w = r1 - r0, c1 - c0
        m = self.min_room
        can_h, can_w = h >= 2 * m + 1, w >= 2 * m + 1
        if not (can_h or can_w) or (min(h, w) < 2 * m + 3 and rng.random() < 0.25):
            return
        horizontal = can_h and (not can_w or (h > w) or (h == w and rng.random() < 0.5))
        lo, hi, span = (r0, r1, (c0, c1)) if horizontal else (c0, c1, (r0, r1))
        # a split line must not end on a door of the enclosing walls (it would block it)
        cand = [
            p
            for p in range(lo + m, hi - m)
            if not any(
                (d[0] == p if horizontal else d[1] == p)
                and (span[0] - 1 <= (d[1] if horizontal else d[0]) <= span[1])
                for d in doors
            )
        ]
        if not cand:
            return
        p = int(rng.choice(cand))
        width = int(rng.integers(1, 3))
        d0 = int(rng.integers(span[0], span[1] - width + 1))
        if horizontal:
            grid[p, c0:c1] = 1.0
            grid[p, d0 : d0 + width] = -1.0
            doors.extend((p, d) for d in range(d0, d0 + width))
            self._split(grid, rng, r0, p, c0, c1, doors)
            self._split(grid, rng, p + 1, r1, c0, c1, doors)
        else:
            grid[r0:r1, p] = 1.0
            grid[d0 : d0 + width, p] = -1.0
            doors.extend((d, p) for d in range(d0, d0 + width))
            self._split(grid, rng, r0, r1, c0, p, doors)
            self._split(grid, rng, r0, r1, p + 1, c1, doors)

    def plan(self, rng: np.random.Generator) -> np.ndarray:
        """One plan drawn with ``rng``."""
        s = self.size
        grid = -np.ones((s, s), dtype=np.float32)
        grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = 1.0
        self._split(grid, rng, 1, s - 1, 1, s - 1, [])
        if rng.random() < self.l_shape:
            cut = grid.copy()
            half = s // 2
            rows = slice(0, half) if rng.random() < 0.5 else slice(s - half, s)
            cols = slice(0, half) if rng.random() < 0.5 else slice(s - half, s)
            cut[rows, cols] = 1.0
            if is_connected(cut) and (cut < 0).sum() >= 0.3 * s * s:
                grid = cut
        return grid

    def sample(self, n: int, seed: int | None = 0) -> np.ndarray:
        """``n`` plans, shape (n, size, size), float32 in {-1, +1}."""
        n = V.check_int(n, "n", low=1)
        rng = np.random.default_rng(seed)
        return np.stack([self.plan(rng) for _ in range(n)])


def is_connected(x) -> bool:
    """True when the free cells (x < 0) form one 4-connected component."""
    free = _check_plan(x) < 0
    _, count = ndimage.label(free)
    return count == 1


@dataclass
class Trajectory:
    """A walk through a plan: the visited ``cells`` (L, 2) in order (row, col) and the
    ``waypoints`` (m, 2) between which the planner routed; ``clipped`` counts jittered cells
    that fell outside the plan and were moved to its border (a counted handling)."""

    cells: np.ndarray
    waypoints: np.ndarray
    clipped: int = 0
    segments: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.cells)


def _free_graph(free: np.ndarray, connectivity: int):
    """Sparse adjacency of the free cells; diagonal moves never cut a wall corner."""
    s = free.shape[0]
    idx = np.arange(s * s).reshape(s, s)
    rows, cols = [], []
    offsets = _OFFSETS8 if connectivity == 8 else _OFFSETS4
    for dr, dc in offsets:
        a = free[max(0, -dr) : s - max(0, dr), max(0, -dc) : s - max(0, dc)]
        b = free[max(0, dr) : s - max(0, -dr), max(0, dc) : s - max(0, -dc)]
        ok = a & b
        if dr and dc:  # both orthogonal neighbours must be free
            o1 = free[max(0, dr) : s - max(0, -dr), max(0, -dc) : s - max(0, dc)]
            o2 = free[max(0, -dr) : s - max(0, dr), max(0, dc) : s - max(0, -dc)]
            ok = ok & o1 & o2
        src = idx[max(0, -dr) : s - max(0, dr), max(0, -dc) : s - max(0, dc)][ok]
        dst = idx[max(0, dr) : s - max(0, -dr), max(0, dc) : s - max(0, -dc)][ok]
        rows.append(src)
        cols.append(dst)
    r, c = np.concatenate(rows), np.concatenate(cols)
    return coo_matrix((np.ones(len(r)), (r, c)), shape=(s * s, s * s)).tocsr()


class PathPlanner:
    """The forward operator A(x): breadth-first shortest paths on free cells between
    consecutive waypoints (``connectivity`` 4 or 8; ties broken at random or by the first
    predecessor), waypoints added until ``coverage`` of the free cells is walked."""

    def __init__(self, connectivity: int = 8, tie_break: str = "random", max_segments: int = 200):
        self.connectivity = V.check_choice(connectivity, "connectivity", (4, 8))
        self.tie_break = V.check_choice(tie_break, "tie_break", ("random", "first"))
        self.max_segments = V.check_int(max_segments, "max_segments", low=1)

    def _offsets(self):
        return _OFFSETS8 if self.connectivity == 8 else _OFFSETS4

    def distances(self, x, sources) -> np.ndarray:
        """BFS step distances from each source cell, shape (len(sources), s, s); inf where
        unreachable or on walls."""
        x = _check_plan(x)
        s = x.shape[0]
        src = np.atleast_2d(np.asarray(sources, dtype=int))
        graph = _free_graph(x < 0, self.connectivity)
        d = shortest_path(graph, unweighted=True, indices=src[:, 0] * s + src[:, 1])
        return np.atleast_2d(d).reshape(len(src), s, s)

    def _walk(self, free, dist_to_goal, start, rng) -> list[tuple[int, int]] | None:
        s = free.shape[0]
        cur = (int(start[0]), int(start[1]))
        if not np.isfinite(dist_to_goal[cur]):
            return None
        path = [cur]
        while dist_to_goal[cur] > 0:
            d = dist_to_goal[cur]
            nxt = []
            for dr, dc in self._offsets():
                r, c = cur[0] + dr, cur[1] + dc
                if not (0 <= r < s and 0 <= c < s) or dist_to_goal[r, c] != d - 1:
                    continue
                if dr and dc and not (free[cur[0] + dr, cur[1]] and free[cur[0], cur[1] + dc]):
                    continue
                nxt.append((r, c))
            cur = nxt[int(rng.integers(len(nxt)))] if self.tie_break == "random" else nxt[0]
            path.append(cur)
        return path

    def route(self, x, waypoints, seed: int | None = 0) -> np.ndarray | None:
        """The walked cells through ``waypoints`` in order, or ``None`` when a waypoint is on a
        wall or unreachable (used to re-plan on a reconstructed plan)."""
        x = _check_plan(x)
        wp = V.check_array(waypoints, "waypoints", ndim=2, dtype=np.int64, min_rows=2)
        s = x.shape[0]
        if wp.shape[1] != 2 or wp.min() < 0 or wp.max() >= s:
            raise ValueError(f"waypoints must be (m, 2) cells inside the {s}x{s} plan")
        free = x < 0
        if not free[wp[:, 0], wp[:, 1]].all():
            return None
        rng = np.random.default_rng(seed)
        dist = self.distances(x, wp[1:])
        cells = [tuple(wp[0])]
        for k in range(1, len(wp)):
            seg = self._walk(free, dist[k - 1], wp[k - 1], rng)
            if seg is None:
                return None
            cells.extend(seg[1:])
        return np.asarray(cells, dtype=np.int64)

    def __call__(
        self,
        x,
        coverage: float = 0.25,
        seed: int | None = 0,
        jitter: float = 0.0,
    ) -> Trajectory:
        """Walk ``x`` until ``coverage`` of its free cells are visited (or ``max_segments``
        segments are spent). ``jitter`` adds Gaussian localisation noise (in cells) to the
        recorded positions; positions pushed outside the plan are clipped to it and counted in
        ``Trajectory.clipped``."""
        x = _check_plan(x)
        coverage = V.check_scalar(coverage, "coverage", low=0.0, high=1.0, low_open=True)
        jitter = V.check_scalar(jitter, "jitter", low=0.0)
        rng = np.random.default_rng(seed)
        s = x.shape[0]
        free = x < 0
        free_cells = np.argwhere(free)
        if len(free_cells) < 2:
            raise ValueError("x must have at least two free cells (x < 0)")
        visited = np.zeros_like(free)
        start = free_cells[rng.integers(len(free_cells))]
        wps, cells, seg_lens = [start], [tuple(start)], []
        visited[tuple(start)] = True
        target = coverage * len(free_cells)
        graph = _free_graph(free, self.connectivity)
        attempts = 0  # bounded: a start cut off from the rest cannot loop forever
        while visited.sum() < target and len(seg_lens) < self.max_segments:
            attempts += 1
            if attempts > 10 * self.max_segments:
                break
            goal = free_cells[rng.integers(len(free_cells))]
            dist = shortest_path(graph, unweighted=True, indices=goal[0] * s + goal[1])
            seg = self._walk(free, dist.reshape(s, s), wps[-1], rng)
            if seg is None or len(seg) < 2:
                continue
            wps.append(goal)
            cells.extend(seg[1:])
            seg_lens.append(len(seg) - 1)
            for c in seg:
                visited[c] = True
        if len(wps) < 2:
            raise ValueError("x has no two connected free cells to walk between")
        out = np.asarray(cells, dtype=np.int64)
        clipped = 0
        if jitter > 0:
            noisy = np.rint(out + rng.normal(0.0, jitter, out.shape)).astype(np.int64)
            clipped = int(((noisy < 0) | (noisy >= s)).any(axis=1).sum())
            out = np.clip(noisy, 0, s - 1)
        return Trajectory(out, np.asarray(wps, dtype=np.int64), clipped, seg_lens)


def _cells_of(y, name: str = "y") -> np.ndarray:
    if isinstance(y, Trajectory):
        y = y.cells
    arr = V.check_array(y, name, ndim=2, dtype=np.int64)
    if arr.shape[1] != 2:
        raise ValueError(f"{name} must be (L, 2) cells (row, col), got shape {arr.shape}")
    return arr


def rasterize(y, size: int) -> np.ndarray:
    """Binary visited-cell mask (size, size) of a trajectory (a :class:`Trajectory` or (L, 2)
    cells). A cell outside the plan is an error that says how many left it."""
    size = V.check_int(size, "size", low=1)
    cells = _cells_of(y)
    outside = ((cells < 0) | (cells >= size)).any(axis=1)
    if outside.any():
        raise ValueError(
            f"y has {int(outside.sum())} of {len(cells)} cells outside the {size}x{size} floor plan"
        )
    mask = np.zeros((size, size), dtype=np.float32)
    mask[cells[:, 0], cells[:, 1]] = 1.0
    return mask


def intersection_penalty(x, y_mask):
    """The paper's "no walking through walls" term ||y * wall(x)||_1 (summed over cells; on a
    binary plan the number of walked cells on walls). Works on arrays and tensors; batches
    sum over the last two axes. Negative wall values (x < -1) count as zero."""
    if hasattr(x, "clamp"):
        V.check_tensor(x, "x", min_ndim=2, floating=True)
        V.check_tensor(
            y_mask, "y_mask", shape=tuple(x.shape[-2:]) if y_mask.dim() == 2 else x.shape
        )
    else:
        x = V.check_array(x, "x", ndim=(2, 3))
        y_mask = V.check_array(y_mask, "y_mask", low=0.0, high=1.0)
        if y_mask.shape[-2:] != x.shape[-2:]:
            raise ValueError(f"y_mask must match x's plan shape {x.shape[-2:]}, got {y_mask.shape}")
    w = wall(x)
    if hasattr(w, "clamp"):
        return (y_mask * w.clamp(min=0)).sum(dim=(-2, -1))
    return (np.asarray(y_mask) * np.clip(w, 0, None)).sum(axis=(-2, -1))


# ------------------------------------------------------------------------------ metrics


def free_space_scores(x_hat, x_true) -> dict[str, float]:
    """The paper's metric: IoU and F1 of the free space (x < 0) of ``x_hat`` against
    ``x_true``."""
    a = _check_plan(x_hat, "x_hat") < 0
    b = _check_plan(x_true, "x_true") < 0
    if a.shape != b.shape:
        raise ValueError(f"x_hat and x_true must match, got {a.shape} and {b.shape}")
    inter, union = (a & b).sum(), (a | b).sum()
    iou = inter / union if union else 1.0
    denom = a.sum() + b.sum()
    f1 = 2 * inter / denom if denom else 1.0
    return {"iou": float(iou), "f1": float(f1)}


def trajectory_consistency(x_hat, y: Trajectory, planner: PathPlanner | None = None) -> float:
    """M1: IoU between the cells of the path re-planned on ``x_hat`` through the observed
    waypoints (same planner) and the observed cells; 0 when a waypoint is walled off."""
    if not isinstance(y, Trajectory):
        raise TypeError(f"y must be a Trajectory, got {type(y).__name__}")
    planner = planner or PathPlanner()
    route = planner.route(x_hat, y.waypoints, seed=0)
    if route is None:
        return 0.0
    a = {tuple(c) for c in route.tolist()}
    b = {tuple(c) for c in y.cells.tolist()}
    return len(a & b) / len(a | b)


def feasibility(x_hat, y) -> float:
    """M2: the fraction of observed path cells that are free in ``x_hat``."""
    x = _check_plan(x_hat, "x_hat")
    cells = _cells_of(y)
    rasterize(cells, x.shape[0])  # refuses cells outside the plan
    return float((x[cells[:, 0], cells[:, 1]] < 0).mean())
