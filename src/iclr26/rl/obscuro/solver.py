"""Tabular equilibrium solving on an explicit game tree: Predictive CFR+ (the solver Obscuro
uses), CFR+ and vanilla CFR, with exact best responses and exploitability.

The tree is flattened into arrays (parent, depth, player, edge probability, the infoset
"slot" (infoset, action) of every edge), and one iteration is a handful of numpy passes per
depth: reach probabilities top-down, expected values bottom-up, counterfactual action values
aggregated per slot. PCFR+ (Farina, Kroer and Sandholm 2021): per infoset, the regret sum is
clipped at zero after every update (CFR+), the next strategy is regret matching on the sum plus
a prediction of the next instantaneous regret (the last one), players update alternately and
the average strategy weights iteration t by t^2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclr26 import validation as V

from .games import CHANCE, ImperfectInfoGame

TERMINAL = 2
CHANCE_NODE = 3
ALGORITHMS = ("pcfr+", "cfr+", "cfr")


@dataclass
class GameTree:
    """An explicit game tree (a forest under a virtual chance root when built from several
    root histories). Node 0 is the root; nodes are in breadth-first order."""

    parent: np.ndarray
    depth: np.ndarray
    kind: np.ndarray  # 0 / 1 player to act, TERMINAL, CHANCE_NODE
    edge_prob: np.ndarray  # chance probability of the edge into the node (1 if not chance)
    edge_slot: np.ndarray  # slot of the decision edge into the node, -1 otherwise
    infoset: np.ndarray  # infoset id of decision nodes, -1 otherwise
    utility: np.ndarray  # player 0's utility at terminals
    infoset_keys: list
    infoset_player: np.ndarray
    infoset_offset: np.ndarray  # first slot of each infoset
    infoset_actions: list  # the action list of each infoset
    histories: list
    levels: list = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def n_infosets(self) -> int:
        return len(self.infoset_keys)

    @property
    def n_slots(self) -> int:
        return int(self.infoset_offset[-1]) if len(self.infoset_offset) else 0

    def slot_infoset(self) -> np.ndarray:
        sizes = np.diff(self.infoset_offset)
        return np.repeat(np.arange(self.n_infosets), sizes)

    def infoset_index(self) -> dict:
        return {k: i for i, k in enumerate(self.infoset_keys)}


def build_tree(
    game: ImperfectInfoGame,
    roots: Sequence[Any] | None = None,
    weights: Sequence[float] | None = None,
    namespaces: Sequence[Any] | None = None,
    max_nodes: int = 2_000_000,
) -> GameTree:
    """Flatten ``game`` below its initial history, or below ``roots`` (a forest under a
    chance node with probabilities ``weights``, normalised). ``namespaces`` (one per root)
    keeps the infosets of different roots apart (independent subgames in one forest)."""
    V.check_module_attrs(
        game, "game", ("initial", "current_player", "legal_actions", "apply", "infoset_key")
    )
    max_nodes = V.check_int(max_nodes, "max_nodes", low=1)
    if roots is None:
        frontier = [(game.initial(), -1, 1.0, -1, None)]
    else:
        if len(roots) == 0:
            raise ValueError("roots is empty")
        w = np.ones(len(roots)) if weights is None else V.check_array(weights, "weights", ndim=1)
        V.check_same_length(roots=roots, weights=w)
        if np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        w = w / w.sum()
        if namespaces is not None:
            V.check_same_length(roots=roots, namespaces=namespaces)
        frontier = [(None, -1, 1.0, -1, None)]  # the virtual root
    parent, depth, kind, eprob, eslot, iset, util, hist = [], [], [], [], [], [], [], []
    keys: dict = {}
    key_list, players, actions_of = [], [], []
    offsets = [0]
    ns_of: list = []
    queue = list(frontier)
    head = 0
    while head < len(queue):
        h, par, p_edge, slot, ns = queue[head]
        head += 1
        node = len(parent)
        if node >= max_nodes:
            raise ValueError(f"max_nodes={max_nodes} exceeded while building the tree")
        parent.append(par)
        depth.append(0 if par < 0 else depth[par] + 1)
        eprob.append(p_edge)
        eslot.append(slot)
        hist.append(h)
        ns_of.append(ns)
        if h is None and par < 0:  # virtual root over the given roots
            kind.append(CHANCE_NODE)
            iset.append(-1)
            util.append(0.0)
            for i, r in enumerate(roots):
                queue.append(
                    (r, node, float(w[i]), -1, None if namespaces is None else namespaces[i])
                )
            continue
        if game.is_terminal(h):
            kind.append(TERMINAL)
            iset.append(-1)
            util.append(float(game.returns(h)))
            continue
        player = game.current_player(h)
        util.append(0.0)
        if player == CHANCE:
            kind.append(CHANCE_NODE)
            iset.append(-1)
            for a, p in game.chance_outcomes(h):
                queue.append((game.apply(h, a), node, float(p), -1, ns))
            continue
        kind.append(player)
        acts = list(game.legal_actions(h))
        key = (ns, player, game.infoset_key(h, player))
        i = keys.get(key)
        if i is None:
            i = keys[key] = len(key_list)
            key_list.append(key if ns is not None else key[1:])
            players.append(player)
            actions_of.append(acts)
            offsets.append(offsets[-1] + len(acts))
        elif actions_of[i] != acts:
            raise ValueError(f"infoset {key!r} has different legal actions at two histories")
        iset.append(i)
        for j, a in enumerate(acts):
            queue.append((game.apply(h, a), node, 1.0, offsets[i] + j, ns))
    tree = GameTree(
        parent=np.array(parent, dtype=np.int64),
        depth=np.array(depth, dtype=np.int64),
        kind=np.array(kind, dtype=np.int64),
        edge_prob=np.array(eprob, dtype=np.float64),
        edge_slot=np.array(eslot, dtype=np.int64),
        infoset=np.array(iset, dtype=np.int64),
        utility=np.array(util, dtype=np.float64),
        infoset_keys=key_list,
        infoset_player=np.array(players, dtype=np.int64),
        infoset_offset=np.array(offsets, dtype=np.int64),
        infoset_actions=actions_of,
        histories=hist,
    )
    _index_levels(tree)
    return tree


def _index_levels(tree: GameTree) -> None:
    order = np.argsort(tree.depth, kind="stable")
    bounds = np.searchsorted(tree.depth[order], np.arange(tree.depth.max() + 2))
    tree.levels = [order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1)]
    tree.levels = [lv for lv in tree.levels if len(lv)]
    # every infoset lies on one depth (needed by the level-wise best response)
    dec = tree.infoset >= 0
    d = np.full(tree.n_infosets, -1)
    d[tree.infoset[dec]] = tree.depth[dec]
    if tree.n_infosets and np.any(d[tree.infoset[dec]] != tree.depth[dec]):
        raise ValueError("an infoset spans several depths; this solver needs depth-aligned ones")
    tree._owner = np.where(
        tree.parent >= 0, tree.kind[np.maximum(tree.parent, 0)], CHANCE_NODE
    )  # who acts at the edge into each node


def uniform_strategy(tree: GameTree) -> np.ndarray:
    sizes = np.diff(tree.infoset_offset)
    return np.repeat(1.0 / np.maximum(sizes, 1), sizes)


def _edge_factor(tree: GameTree, sigma: np.ndarray) -> np.ndarray:
    f = tree.edge_prob.copy()
    dec = tree.edge_slot >= 0
    f[dec] = sigma[tree.edge_slot[dec]]
    return f


def _level_parts(tree: GameTree) -> list:
    """Per level below the root: (nodes, parents, [nodes and parents per edge owner])."""
    parts = getattr(tree, "_parts", None)
    if parts is None:
        parts = []
        for lv in tree.levels[1:]:
            owner = tree._owner[lv]
            split = []
            for row, who in ((0, 0), (1, 1), (2, CHANCE_NODE)):
                m = owner == who
                split.append((row, lv[m], tree.parent[lv[m]]))
            parts.append((lv, tree.parent[lv], split))
        tree._parts = parts
    return parts


def reach(tree: GameTree, sigma: np.ndarray) -> np.ndarray:
    """(3, n_nodes): reach of player 0, of player 1 and of chance at every node."""
    f = _edge_factor(tree, sigma)
    out = np.ones((3, tree.n_nodes))
    for lv, par, split in _level_parts(tree):
        out[:, lv] = out[:, par]
        for row, nodes, _ in split:
            if len(nodes):
                out[row, nodes] *= f[nodes]
    return out


def values(tree: GameTree, sigma: np.ndarray) -> np.ndarray:
    """Player 0's expected utility below every node under ``sigma``."""
    f = _edge_factor(tree, sigma)
    v = np.where(tree.kind == TERMINAL, tree.utility, 0.0)
    n = tree.n_nodes
    for lv, par, _ in reversed(_level_parts(tree)):
        v += np.bincount(par, weights=f[lv] * v[lv], minlength=n)
    return v


def counterfactual_values(
    tree: GameTree, sigma: np.ndarray, player: int, r: np.ndarray | None = None
) -> np.ndarray:
    """Per slot: sum over the infoset's histories of (opponent and chance reach) x the
    player's utility after the action."""
    r = reach(tree, sigma) if r is None else r
    v = values(tree, sigma) * (1.0 if player == 0 else -1.0)
    child = getattr(tree, "_child_of", {}).get(player)
    if child is None:
        child = np.flatnonzero((tree.edge_slot >= 0) & (tree._owner == player))
        tree._child_of = {**getattr(tree, "_child_of", {}), player: child}
    par = tree.parent[child]
    w = r[1 - player, par] * r[2, par]
    return np.bincount(tree.edge_slot[child], weights=w * v[child], minlength=tree.n_slots)


def _regret_match(x: np.ndarray, offset: np.ndarray) -> np.ndarray:
    pos = np.maximum(x, 0.0)
    sums = np.add.reduceat(pos, offset[:-1]) if len(pos) else pos
    sizes = np.diff(offset)
    sums_rep = np.repeat(sums, sizes)
    uni = np.repeat(1.0 / np.maximum(sizes, 1), sizes)
    return np.where(sums_rep > 0, pos / np.where(sums_rep > 0, sums_rep, 1.0), uni)


@dataclass
class SolveResult:
    """What a solver run returns: average and last strategies (per slot), iterations, the
    exploitability curve if tracked and the number of node visits."""

    tree: GameTree
    average: np.ndarray
    current: np.ndarray
    iterations: int
    algorithm: str
    curve: list = field(default_factory=list)
    node_visits: int = 0

    def strategy(self, kind: str = "average") -> dict:
        """``{infoset key: {action: probability}}``."""
        s = self.average if kind == "average" else self.current
        return strategy_dict(self.tree, s)

    def exploitability(self) -> float:
        return exploitability(self.tree, self.average)


def strategy_dict(tree: GameTree, sigma: np.ndarray) -> dict:
    out = {}
    for i, key in enumerate(tree.infoset_keys):
        lo = tree.infoset_offset[i]
        out[key] = {a: float(sigma[lo + j]) for j, a in enumerate(tree.infoset_actions[i])}
    return out


def strategy_array(tree: GameTree, strategy: Mapping, default: str = "uniform") -> np.ndarray:
    """A slot array from ``{infoset key: {action: prob}}``; missing infosets are uniform."""
    sigma = uniform_strategy(tree)
    for i, key in enumerate(tree.infoset_keys):
        probs = strategy.get(key)
        if probs is None:
            continue
        lo = tree.infoset_offset[i]
        row = np.array([float(probs.get(a, 0.0)) for a in tree.infoset_actions[i]])
        total = row.sum()
        if not np.isfinite(total) or total <= 0 or np.any(row < 0):
            raise ValueError(f"strategy at infoset {key!r} is not a distribution")
        sigma[lo : lo + len(row)] = row / total
    return sigma


class PCFRPlus:
    """An iterative solver on a :class:`GameTree` (``algorithm`` pcfr+, cfr+ or cfr)."""

    def __init__(
        self, tree: GameTree, algorithm: str = "pcfr+", fixed: np.ndarray | None = None
    ) -> None:
        if not isinstance(tree, GameTree):
            raise TypeError(f"tree must be a GameTree, got {type(tree).__name__}")
        self.tree = tree
        self.algorithm = V.check_choice(algorithm, "algorithm", ALGORITHMS)
        n = tree.n_slots
        self.regret = np.zeros(n)
        self.prediction = np.zeros(n)
        self.avg = np.zeros(n)
        self.sigma = uniform_strategy(tree)
        self.t = 0
        self._slot_player = tree.infoset_player[tree.slot_infoset()] if n else np.zeros(0, int)
        # frozen slots (NaN = free): a strategy held fixed, never updated (KLUSS order-2 nodes)
        self.fixed = np.full(n, np.nan) if fixed is None else np.asarray(fixed, dtype=float)
        if self.fixed.shape != (n,):
            raise ValueError(f"fixed must have {n} entries, got shape {self.fixed.shape}")
        frozen = ~np.isnan(self.fixed)
        self.sigma[frozen] = self.fixed[frozen]
        self._slot_player = np.where(frozen, -1, self._slot_player)
        self._isets = tree.slot_infoset()
        self._first_node = np.full(tree.n_infosets, -1)
        dec = np.flatnonzero(tree.infoset >= 0)
        self._first_node[tree.infoset[dec[::-1]]] = dec[::-1]

    def _update(self, player: int, weight: float) -> None:
        tree = self.tree
        r = reach(tree, self.sigma)
        cfv = counterfactual_values(tree, self.sigma, player, r)
        mask = self._slot_player == player
        isets = self._isets
        ev = np.bincount(isets, weights=self.sigma * cfv, minlength=tree.n_infosets)
        inst = cfv - ev[isets]
        own_reach = r[player, self._first_node][isets]
        self.avg[mask] += weight * (own_reach * self.sigma)[mask]
        if self.algorithm == "cfr":
            self.regret[mask] += inst[mask]
            new = _regret_match(self.regret, tree.infoset_offset)
        else:
            self.regret[mask] = np.maximum(0.0, self.regret[mask] + inst[mask])
            if self.algorithm == "pcfr+":
                self.prediction[mask] = inst[mask]
                new = _regret_match(self.regret + self.prediction, tree.infoset_offset)
            else:
                new = _regret_match(self.regret, tree.infoset_offset)
        self.sigma[mask] = new[mask]

    def iterate(self, n: int = 1) -> PCFRPlus:
        n = V.check_int(n, "n", low=1)
        for _ in range(n):
            self.t += 1
            if self.algorithm == "cfr":
                weight = 1.0
                old = self.sigma.copy()
                self._update(0, weight)
                new0 = self.sigma.copy()
                self.sigma = old  # simultaneous updates: player 1 sees the old strategy
                self._update(1, weight)
                m0 = self._slot_player == 0
                self.sigma[m0] = new0[m0]
            else:
                weight = float(self.t) ** 2 if self.algorithm == "pcfr+" else float(self.t)
                self._update(0, weight)
                self._update(1, weight)
        return self

    def average_strategy(self) -> np.ndarray:
        tree = self.tree
        sums = np.add.reduceat(self.avg, tree.infoset_offset[:-1]) if len(self.avg) else self.avg
        sizes = np.diff(tree.infoset_offset)
        rep = np.repeat(sums, sizes)
        out = np.where(rep > 0, self.avg / np.where(rep > 0, rep, 1.0), uniform_strategy(tree))
        frozen = ~np.isnan(self.fixed)
        out[frozen] = self.fixed[frozen]
        return out


def solve(
    game_or_tree: ImperfectInfoGame | GameTree,
    iterations: int = 1000,
    algorithm: str = "pcfr+",
    track_every: int | None = None,
) -> SolveResult:
    """Run ``iterations`` of ``algorithm`` on a game (its full tree) or a prepared tree."""
    iterations = V.check_int(iterations, "iterations", low=1)
    track_every = V.check_int(track_every, "track_every", low=1, allow_none=True)
    algorithm = V.check_choice(algorithm, "algorithm", ALGORITHMS)
    tree = game_or_tree if isinstance(game_or_tree, GameTree) else build_tree(game_or_tree)
    solver = PCFRPlus(tree, algorithm)
    curve = []
    done = 0
    while done < iterations:
        step = iterations - done if track_every is None else min(track_every, iterations - done)
        solver.iterate(step)
        done += step
        if track_every is not None:
            curve.append((done, exploitability(tree, solver.average_strategy())))
    return SolveResult(
        tree=tree,
        average=solver.average_strategy(),
        current=solver.sigma.copy(),
        iterations=iterations,
        algorithm=algorithm,
        curve=curve,
        node_visits=iterations * 2 * tree.n_nodes,
    )


def solve_pcfr_plus(
    game_or_tree: ImperfectInfoGame | GameTree, iterations: int = 1000, track_every=None
) -> SolveResult:
    """Predictive CFR+ (alternating updates, quadratic averaging); see :func:`solve`."""
    return solve(game_or_tree, iterations, "pcfr+", track_every)


def best_response_value(tree: GameTree, sigma: np.ndarray, player: int) -> float:
    """The best value ``player`` can reach against the other player's part of ``sigma``
    (exact, infoset by infoset, deepest first)."""
    player = V.check_choice(player, "player", (0, 1))
    sign = 1.0 if player == 0 else -1.0
    f = _edge_factor(tree, sigma)
    r = reach(tree, sigma)
    v = np.where(tree.kind == TERMINAL, sign * tree.utility, 0.0)
    slot_iset = tree.slot_infoset()
    for lv in reversed(tree.levels[1:]):
        par = tree.parent[lv]
        mine = tree._owner[lv] == player
        other = ~mine
        np.add.at(v, par[other], f[lv[other]] * v[lv[other]])
        kids = lv[mine]
        if not len(kids):
            continue
        ppar = tree.parent[kids]
        w = r[1 - player, ppar] * r[2, ppar]
        q = np.bincount(tree.edge_slot[kids], weights=w * v[kids], minlength=tree.n_slots)
        best = np.full(tree.n_infosets, -1)
        # argmax within each infoset present at this level
        present = np.unique(slot_iset[tree.edge_slot[kids]])
        for i in present:
            lo, hi = tree.infoset_offset[i], tree.infoset_offset[i + 1]
            best[i] = lo + int(np.argmax(q[lo:hi]))
        take = tree.edge_slot[kids] == best[slot_iset[tree.edge_slot[kids]]]
        v[ppar[take]] = v[kids[take]]
    return float(v[0])


def exploitability(tree_or_game: GameTree | ImperfectInfoGame, sigma) -> float:
    """(BR value of player 0 + BR value of player 1) / 2 against ``sigma`` (a slot array or
    ``{infoset: {action: prob}}``): 0 exactly at a Nash equilibrium (OpenSpiel's convention)."""
    tree = tree_or_game if isinstance(tree_or_game, GameTree) else build_tree(tree_or_game)
    if isinstance(sigma, Mapping):
        sigma = strategy_array(tree, sigma)
    sigma = V.check_array(sigma, "sigma", ndim=1, low=0.0, high=1.0 + 1e-9)
    if len(sigma) != tree.n_slots:
        raise ValueError(f"sigma must have {tree.n_slots} entries, got {len(sigma)}")
    return 0.5 * (best_response_value(tree, sigma, 0) + best_response_value(tree, sigma, 1))


def game_value(tree: GameTree, sigma: np.ndarray) -> float:
    """Player 0's expected utility under ``sigma``."""
    return float(values(tree, sigma)[0])
