"""Nested subgame search on any :class:`ImperfectInfoGame`, and perfect-information Monte Carlo
(PIMC) as its baseline, each assembled into a full strategy for one seat so that its
exploitability can be computed exactly.

At every infoset I of the searching player (in the order of its own decision depth), a
knowledge-limited subgame is rooted at the histories h of I (order 1) and, for KLUSS (order
2), at the histories the opponent cannot tell apart from them; no common-knowledge closure is
built. Root beliefs come from chance x our own strategy assembled so far x the opponent's
strategy retained from the previous subgame (uniform where none). It is solved with PCFR+
and only the strategy at I is kept. All infosets of one depth are independent given the earlier ones and
are solved together in one forest (their infosets kept apart), which is exactly equivalent to
solving them one by one."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr26 import validation as V

from .games import ImperfectInfoGame
from .solver import (
    ALGORITHMS,
    TERMINAL,
    GameTree,
    PCFRPlus,
    build_tree,
    exploitability,
    reach,
    strategy_array,
    uniform_strategy,
    values,
)


def _own_depth(tree: GameTree, player: int) -> np.ndarray:
    """Per infoset of ``player``: how many decisions of its own lie above it."""
    n = np.zeros(tree.n_nodes, dtype=np.int64)
    for lv in tree.levels[1:]:
        par = tree.parent[lv]
        n[lv] = n[par] + (tree.kind[par] == player)
    out = np.full(tree.n_infosets, -1)
    dec = np.flatnonzero(tree.infoset >= 0)
    out[tree.infoset[dec]] = n[dec]
    return out


def _beliefs(tree: GameTree, sigma: np.ndarray, player: int, nodes: np.ndarray) -> np.ndarray:
    r = reach(tree, sigma)
    w = r[2, nodes] * r[player, nodes] * r[1 - player, nodes]
    if w.sum() <= 0:  # our own strategy never reaches I: fall back to chance x uniform
        w = r[2, nodes] * r[1 - player, nodes]
    return w


@dataclass(frozen=True)
class _GadgetNode:
    """A node of the resolve gadget above a root history ``h``: ``kind`` "G" (the opponent
    chooses to terminate or to enter) or "T" (terminated, player 0 gets ``value``)."""

    kind: str
    h: Any
    okey: Any
    value: float


class _ResolveGadget:
    """The game seen through a resolve gadget (Burch, Johanson and Bowling 2014): above each
    root, the opponent may take its value from the previous solution instead of entering."""

    def __init__(self, game: ImperfectInfoGame, opponent: int) -> None:
        self.game, self.opponent = game, opponent

    def initial(self):
        return self.game.initial()

    def current_player(self, h):
        return self.opponent if isinstance(h, _GadgetNode) else self.game.current_player(h)

    def legal_actions(self, h):
        return ["T", "F"] if isinstance(h, _GadgetNode) else self.game.legal_actions(h)

    def chance_outcomes(self, h):
        return self.game.chance_outcomes(h)

    def apply(self, h, a):
        if isinstance(h, _GadgetNode):
            return _GadgetNode("T", h.h, h.okey, h.value) if a == "T" else h.h
        return self.game.apply(h, a)

    def is_terminal(self, h):
        if isinstance(h, _GadgetNode):
            return h.kind == "T"
        return self.game.is_terminal(h)

    def returns(self, h):
        return h.value if isinstance(h, _GadgetNode) else self.game.returns(h)

    def infoset_key(self, h, player):
        if isinstance(h, _GadgetNode):
            return ("gadget", h.okey)
        return self.game.infoset_key(h, player)


class SubgameSearch:
    """Nested knowledge-limited subgame search with PCFR+ at every infoset of one player.

    ``order=1`` (KLSS-style): the subgame holds only the histories of our infoset I.
    ``order=2`` (KLUSS, the paper's choice): it also holds the histories the opponent cannot
    tell apart from one of ours (same opponent infoset) but we can; our strategy below those
    is frozen to the previous solution (the subgame solved at our previous decision, or the
    uniform default policy where there is none) while the opponent is solved everywhere.

    ``iterations`` PCFR+ iterations per subgame; ``use="average"`` keeps the average strategy
    at the subgame's root infoset (``"current"``: the last iterate). ``prior`` sets the belief
    over the roots: ``"uniform"`` takes chance x our assembled reach x a uniform opponent;
    ``"retained"`` (default, as Obscuro reuses the reach probabilities of the tree it kept
    from the previous turn) takes each root's reach in the subgame solved at our previous
    decision (its opponent strategy included), the uniform prior where there is none."""

    def __init__(
        self,
        game: ImperfectInfoGame,
        iterations: int = 200,
        order: int = 2,
        algorithm: str = "pcfr+",
        use: str = "average",
        prior: str = "retained",
        freeze: bool = False,
        gadget: str | None = None,
    ) -> None:
        V.check_module_attrs(game, "game", ("initial", "current_player", "infoset_key"))
        self.game = game
        self.gadget = V.check_choice(gadget, "gadget", (None, "resolve"))
        self._prev_value: dict = {}
        self.iterations = V.check_int(iterations, "iterations", low=1)
        self.freeze = V.check_bool(freeze, "freeze")
        self.order = V.check_choice(order, "order", (1, 2))
        self.algorithm = V.check_choice(algorithm, "algorithm", ALGORITHMS)
        self.use = V.check_choice(use, "use", ("average", "current"))
        self.prior = V.check_choice(prior, "prior", ("retained", "uniform"))
        self.tree = build_tree(game)
        self._node_of = {h: n for n, h in enumerate(self.tree.histories)}
        self.subgames_solved = 0
        self.subgame_nodes = 0
        self._retained: dict = {}  # full-tree node -> reach in the subgame that held it
        self._previous: dict = {}  # our infoset -> strategy from the subgame that held it

    def _solve_batch(self, player: int, batch: dict) -> dict:
        """Solve ``{infoset key: [(history, belief, is_order2), ...]}`` in one forest; returns
        the strategy at each subgame's root infoset."""
        roots, weights, spaces, second = [], [], [], []
        for key, items in batch.items():
            for h, w, o2 in items:
                roots.append(h)
                weights.append(w)
                spaces.append(key)
                second.append(o2)
        game = self.game
        if any(isinstance(h, _GadgetNode) for h in roots):
            game = _ResolveGadget(self.game, 1 - player)
        forest = build_tree(game, roots, weights, namespaces=spaces)
        # which forest root each node descends from
        root_of = np.zeros(forest.n_nodes, dtype=np.int64)
        for d, lv in enumerate(forest.levels[1:], start=1):
            root_of[lv] = np.arange(len(lv)) if d == 1 else root_of[forest.parent[lv]]
        second = np.array(second, dtype=bool)
        fixed = np.full(forest.n_slots, np.nan)
        dec = np.flatnonzero((forest.infoset >= 0) & (forest.kind == player))
        frozen_sets = np.unique(forest.infoset[dec[second[root_of[dec]]]])
        for i in frozen_sets if self.freeze else ():
            lo, hi = forest.infoset_offset[i], forest.infoset_offset[i + 1]
            prev = self._previous.get(forest.infoset_keys[i][1:])
            acts = forest.infoset_actions[i]
            if prev is None:
                fixed[lo:hi] = 1.0 / (hi - lo)
            else:
                fixed[lo:hi] = [prev.get(a, 0.0) for a in acts]
        solver = PCFRPlus(forest, self.algorithm, fixed=fixed).iterate(self.iterations)
        sigma = solver.average_strategy() if self.use == "average" else solver.sigma
        r = reach(forest, sigma).prod(axis=0)
        v = values(forest, sigma)
        for n in range(1, forest.n_nodes):
            if second[root_of[n]]:
                continue
            hist = forest.histories[n]
            full = None if isinstance(hist, _GadgetNode) else self._node_of.get(hist)
            if full is not None:
                self._retained[full] = r[n]
                self._prev_value[full] = v[n]
        for i in np.unique(forest.infoset[dec[~second[root_of[dec]]]]):
            lo = forest.infoset_offset[i]
            acts = forest.infoset_actions[i]
            self._previous[forest.infoset_keys[i][1:]] = {
                a: float(sigma[lo + j]) for j, a in enumerate(acts)
            }
        self.subgames_solved += len(batch)
        self.subgame_nodes += forest.n_nodes
        index = forest.infoset_index()
        out = {}
        for key in batch:
            i = index[(key,) + key]
            lo = forest.infoset_offset[i]
            acts = forest.infoset_actions[i]
            out[key] = {a: float(sigma[lo + j]) for j, a in enumerate(acts)}
        return out

    def _weights(self, sigma, player, nodes, k) -> np.ndarray:
        w = _beliefs(self.tree, sigma, player, nodes)
        if self.prior == "retained" and k > 0:
            kept = np.array([self._retained.get(n, 0.0) for n in nodes])
            if kept.sum() > 0:
                return kept
        return w

    def _with_gadget(self, batch: dict, sigma: np.ndarray, player: int) -> dict:
        """Put a resolve gadget above the roots of every subgame: roots drawn by chance x our
        reach only; per opponent root infoset O, terminating pays O's value under the previous
        solution (averaged with those weights)."""
        tree = self.tree
        r = reach(tree, sigma)
        out = {}
        for key, items in batch.items():
            groups = defaultdict(list)
            for h, _, o2 in items:
                n = self._node_of[h]
                okey = (int(tree.depth[n]), self.game.infoset_key(h, 1 - player))
                groups[okey].append((h, o2, r[player, n] * r[2, n], self._prev_value.get(n)))
            new = []
            for okey, members in groups.items():
                known = [(w, v) for _, _, w, v in members if v is not None and w > 0]
                if not known:
                    new += [(h, w, o2) for h, o2, w, _ in members if w > 0]
                    continue
                alt = sum(w * v for w, v in known) / sum(w for w, _ in known)
                new += [
                    (_GadgetNode("G", h, okey, float(alt)), w, o2)
                    for h, o2, w, _ in members
                    if w > 0
                ]
            out[key] = new if new else items
        return out

    def assemble(self, player: int) -> dict:
        """The searching ``player``'s full strategy, subgame by subgame in the order of its own
        decision depth (earlier solutions shape the later beliefs and frozen parts)."""
        player = V.check_choice(player, "player", (0, 1))
        tree = self.tree
        depth = _own_depth(tree, player)
        nodes_of = defaultdict(list)
        for n in np.flatnonzero(tree.infoset >= 0):
            nodes_of[tree.infoset[n]].append(n)
        opp_key = {}
        strategy: dict = {}
        self._retained, self._previous, self._prev_value = {}, {}, {}
        for k in range(int(depth.max()) + 1):
            sigma = strategy_array(tree, strategy)
            level_sets = np.flatnonzero((tree.infoset_player == player) & (depth == k))
            # order-2: histories the opponent confuses with ours, grouped by its infoset
            by_opp = defaultdict(list)
            if self.order == 2:
                for i in level_sets:
                    for n in nodes_of[i]:
                        ok = (tree.depth[n], self.game.infoset_key(tree.histories[n], 1 - player))
                        opp_key[n] = ok
                        by_opp[ok].append(n)
            batch = {}
            for i in level_sets:
                nodes = np.array(nodes_of[i])
                w = self._weights(sigma, player, nodes, k)
                items = [(tree.histories[n], float(x), False) for n, x in zip(nodes, w) if x > 0]
                if self.order == 2:
                    own = set(nodes.tolist())
                    extra = sorted({m for n in nodes for m in by_opp[opp_key[n]] if m not in own})
                    if extra:
                        we = self._weights(sigma, player, np.array(extra), k)
                        items += [
                            (tree.histories[m], float(x), True) for m, x in zip(extra, we) if x > 0
                        ]
                if not any(not o2 for _, _, o2 in items):
                    w = _beliefs(tree, sigma, player, nodes)
                    items = [(tree.histories[n], float(x), False) for n, x in zip(nodes, w)]
                batch[tree.infoset_keys[i]] = items
            if batch and self.gadget == "resolve" and k > 0:
                batch = self._with_gadget(batch, sigma, player)
            if batch:
                strategy.update(self._solve_batch(player, batch))
        return strategy

    def profile(self) -> dict:
        """Both seats searched: the strategy profile whose exploitability C1 measures."""
        return {**self.assemble(0), **self.assemble(1)}


def minimax_values(tree: GameTree, player: int) -> np.ndarray:
    """Perfect-information values for ``player``: max at its nodes, min at the opponent's,
    expectation at chance (every hidden card revealed)."""
    sign = 1.0 if player == 0 else -1.0
    v = np.where(tree.kind == TERMINAL, sign * tree.utility, 0.0)
    best = np.where(tree.kind == player, -np.inf, np.inf)
    for lv in reversed(tree.levels[1:]):
        par = tree.parent[lv]
        owner = tree._owner[lv]
        chance = owner == 3
        np.add.at(v, par[chance], tree.edge_prob[lv[chance]] * v[lv[chance]])
        mine = owner == player
        np.maximum.at(best, par[mine], v[lv[mine]])
        theirs = ~chance & ~mine
        np.minimum.at(best, par[theirs], v[lv[theirs]])
        done = np.unique(par[~chance])
        v[done] = best[done]
    return v


class PIMC:
    """Perfect-information Monte Carlo: at each infoset, determinise the hidden state from the
    same beliefs as :class:`SubgameSearch` (weighted exactly instead of sampled), score every
    action by perfect-information minimax and play the best average (ties split evenly)."""

    def __init__(self, game: ImperfectInfoGame) -> None:
        V.check_module_attrs(game, "game", ("initial", "current_player", "infoset_key"))
        self.game = game
        self.tree = build_tree(game)

    def assemble(self, player: int) -> dict:
        player = V.check_choice(player, "player", (0, 1))
        tree = self.tree
        mm = minimax_values(tree, player)
        depth = _own_depth(tree, player)
        children = defaultdict(dict)
        for n in np.flatnonzero(tree.edge_slot >= 0):
            children[tree.parent[n]][tree.edge_slot[n]] = n
        nodes_of = defaultdict(list)
        for n in np.flatnonzero(tree.infoset >= 0):
            nodes_of[tree.infoset[n]].append(n)
        strategy: dict = {}
        for k in range(int(depth.max()) + 1):
            sigma = strategy_array(tree, strategy) if strategy else uniform_strategy(tree)
            for i in np.flatnonzero((tree.infoset_player == player) & (depth == k)):
                nodes = np.array(nodes_of[i])
                w = _beliefs(tree, sigma, player, nodes)
                lo, hi = tree.infoset_offset[i], tree.infoset_offset[i + 1]
                score = np.array(
                    [
                        sum(w[j] * mm[children[n][s]] for j, n in enumerate(nodes))
                        for s in range(lo, hi)
                    ]
                )
                top = np.isclose(score, score.max(), rtol=0, atol=1e-12)
                probs = top / top.sum()
                strategy[tree.infoset_keys[i]] = {
                    a: float(p) for a, p in zip(tree.infoset_actions[i], probs)
                }
        return strategy

    def profile(self) -> dict:
        return {**self.assemble(0), **self.assemble(1)}


def profile_exploitability(game_or_tree, profile: dict) -> float:
    """Exploitability of a ``{infoset: {action: prob}}`` profile (missing infosets uniform)."""
    tree = game_or_tree if isinstance(game_or_tree, GameTree) else build_tree(game_or_tree)
    if not isinstance(profile, dict):
        raise TypeError(f"profile must be a dict, got {type(profile).__name__}")
    return exploitability(tree, strategy_array(tree, profile))
