"""Obscuro's search for FoW chess: a knowledge-limited subgame rooted at sampled positions of
our belief, grown by one-sided GT-CFR and solved by PCFR+.

The root is a chance node over the sampled positions x (prior p(x)); all of them form our one
root infoset, the opponent's root infosets group them by the opponent's observation history
(order 1). With ``order=2`` (KLUSS) the positions of the previous turn's tree that the
opponent cannot tell apart from one of ours, but we can, are added as roots too; our strategy
there is solved as well ("unfrozen") unless ``freeze=True``. Infosets below are keyed by each
player's observation history since the root (own moves included). The tree grows by
expansion steps: walk down from a root drawn by p, at the exploring player's infosets by PUCT
on the counterfactual action values, elsewhere by the current strategy mixed with epsilon
uniform, and add all children of the first unexpanded node (evaluated by the leaf evaluator).
The exploring player alternates between expansions. Every ``expansions_per_solve``
expansions, ``cfr_iters_per_solve`` PCFR+ iterations run on the whole current tree."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import chess
import numpy as np

from iclr26 import validation as V

from .evaluate import CachedEval
from .fow_chess import board_key, pseudo_legal_moves, view_key

US, THEM = 0, 1


class Node:
    __slots__ = ("board", "player", "keys", "moves", "children", "value", "terminal", "order2")

    def __init__(self, board, player, keys, value, terminal=False, order2=False):
        self.board = board
        self.player = player  # 0 us, 1 opponent: who moves here
        self.keys = keys  # (our history key, opponent history key) or None until expanded
        self.moves = None
        self.children = None
        self.value = value  # our-perspective leaf value (or the terminal value)
        self.terminal = terminal
        self.order2 = order2


@dataclass
class Infoset:
    player: int
    actions: list
    regret: np.ndarray
    prediction: np.ndarray
    sigma: np.ndarray
    avg: np.ndarray
    q: np.ndarray
    visits: np.ndarray
    frozen: bool = False
    cfv: np.ndarray = field(default=None)
    reach_opp: float = 0.0
    reach_own: float = 0.0

    @classmethod
    def new(cls, player: int, actions: list, frozen: bool = False) -> Infoset:
        n = len(actions)
        return cls(
            player,
            actions,
            np.zeros(n),
            np.zeros(n),
            np.full(n, 1.0 / n),
            np.zeros(n),
            np.zeros(n),
            np.zeros(n),
            frozen,
            np.zeros(n),
        )

    def average(self) -> np.ndarray:
        s = self.avg.sum()
        return self.avg / s if s > 0 else self.sigma.copy()


def _rm(x: np.ndarray) -> np.ndarray:
    pos = np.maximum(x, 0.0)
    s = pos.sum()
    return pos / s if s > 0 else np.full(len(x), 1.0 / len(x))


class FoWSubgame:
    """One turn's search tree. ``roots``: boards (our side to move) with prior weights;
    ``order2_roots``: extra boards the opponent confuses with ours (KLUSS)."""

    def __init__(
        self,
        us: bool,
        roots: list[chess.Board],
        prior: list[float],
        evaluator: CachedEval,
        opp_root_keys: list | None = None,
        order2_roots: list | None = None,
        c_puct: float = 1.0,
        epsilon: float = 0.05,
        explore: str = "alternate",
        freeze: bool = False,
        seed: int = 0,
        pawn_sees_blocker: bool = False,
    ) -> None:
        if not roots:
            raise ValueError("roots is empty: the search needs at least one position")
        self.us = V.check_bool(us, "us")
        V.check_same_length(roots=roots, prior=prior)
        V.check_array(list(prior), "prior", ndim=1, low=0.0)
        c_puct = V.check_scalar(c_puct, "c_puct", low=0.0)
        epsilon = V.check_probability(epsilon, "epsilon")
        explore = V.check_choice(explore, "explore", ("alternate", "self"))
        if not callable(evaluator):
            raise TypeError(f"evaluator must be callable, got {type(evaluator).__name__}")
        self.evaluator = evaluator
        self.c_puct, self.epsilon, self.explore, self.freeze = c_puct, epsilon, explore, freeze
        self.rng = random.Random(seed)
        self.pawn_sees_blocker = pawn_sees_blocker
        self.infosets: dict = {}
        self.roots: list[Node] = []
        weights = list(prior)
        order2_roots = order2_roots or []
        all_boards = list(roots) + [b for b, _, _ in order2_roots]
        weights += [w for _, w, _ in order2_roots]
        opp_keys = list(opp_root_keys or [None] * len(roots)) + [k for _, _, k in order2_roots]
        total = float(sum(weights))
        if not (total > 0) or not all(w >= 0 for w in weights):
            raise ValueError("prior must be non-negative with a positive sum")
        self.prior = [w / total for w in weights]
        for i, board in enumerate(all_boards):
            o2 = i >= len(roots)
            ok = opp_keys[i] if opp_keys[i] is not None else view_key(board, not us)
            our_key = ("root",) if not o2 else ("order2", i)
            node = Node(board, US, (hash(our_key), hash(("opp-root", ok))), 0.0, order2=o2)
            node.value = self._leaf_value(board)
            self.roots.append(node)
        self.n_nodes = len(self.roots)
        self.n_expansions = 0
        self.n_iterations = 0
        self.t = 0
        self._explorer = US
        for node in self.roots:
            self._expand(node)

    # ---------------------------------------------------------------- tree growth

    def _leaf_value(self, board: chess.Board) -> float:
        v = self.evaluator(board)
        return v if board.turn == self.us else -v

    def _expand(self, node: Node) -> None:
        board = node.board
        moves = sorted(pseudo_legal_moves(board), key=chess.Move.uci)
        if not moves:
            node.terminal, node.value = True, 0.0
            return
        mover = node.player
        key = node.keys[mover]
        frozen = node.order2 and mover == US and self.freeze
        info = self.infosets.get(key)
        if info is None:
            info = self.infosets[key] = Infoset.new(mover, [m.uci() for m in moves], frozen)
        elif len(info.actions) != len(moves):
            # cannot happen when views determine the moves; kept as a hard check
            raise RuntimeError("two positions of one infoset have different move lists")
        children = []
        for move in moves:
            captured = board.piece_type_at(move.to_square)
            if captured == chess.KING:
                children.append(Node(None, 1 - mover, None, 1.0 if mover == US else -1.0, True))
                continue
            child = board.copy(stack=False)
            child.push(move)
            node_c = Node(child, 1 - mover, None, self._leaf_value(child), order2=node.order2)
            if child.halfmove_clock >= 100:
                node_c.terminal, node_c.value = True, 0.0
            children.append(node_c)
        node.moves = moves
        node.children = children
        self.n_nodes += len(children)

    def _child_keys(self, parent: Node, child: Node, move: chess.Move) -> tuple:
        b = child.board
        ours = hash(
            (
                parent.keys[US],
                move.uci() if parent.player == US else None,
                view_key(b, self.us, self.pawn_sees_blocker),
            )
        )
        theirs = hash(
            (
                parent.keys[THEM],
                move.uci() if parent.player == THEM else None,
                view_key(b, not self.us, self.pawn_sees_blocker),
            )
        )
        return (ours, theirs)

    def expansion_step(self) -> bool:
        """Walk down and expand one node; False when the walk ends on a terminal."""
        explorer = self._explorer
        if self.explore == "alternate":
            self._explorer = 1 - self._explorer
        else:
            explorer = US
        node = self.rng.choices(self.roots, weights=self.prior)[0]
        path = []
        while node.children is not None:
            info = self.infosets[node.keys[node.player]]
            if node.player == explorer:
                n_total = info.visits.sum()
                prior = 1.0 / len(info.actions)
                score = info.q + self.c_puct * prior * math.sqrt(n_total + 1) / (1 + info.visits)
                a = int(np.argmax(score))
            else:
                p = (1 - self.epsilon) * info.sigma + self.epsilon / len(info.sigma)
                a = self.rng.choices(range(len(p)), weights=p)[0]
            path.append((info, a))
            child = node.children[a]
            if child.terminal:
                for i, b in path:
                    i.visits[b] += 1
                return False
            if child.keys is None:
                child.keys = self._child_keys(node, child, node.moves[a])
            node = child
        self._expand(node)
        for info, a in path:
            info.visits[a] += 1
        self.n_expansions += 1
        return True

    # ---------------------------------------------------------------- PCFR+

    def _traverse(self, node: Node, player: int, reach_own: float, reach_opp: float) -> float:
        """Value for ``player`` below ``node`` (our-perspective values negated for THEM)."""
        if node.children is None:
            return node.value if player == US else -node.value
        info = self.infosets[node.keys[node.player]]
        sigma = info.sigma
        vals = np.empty(len(sigma))
        mine = node.player == player
        for a, child in enumerate(node.children):
            if mine:
                if reach_opp == 0.0 and reach_own * sigma[a] == 0.0:
                    vals[a] = 0.0
                    continue
                vals[a] = self._traverse(child, player, reach_own * sigma[a], reach_opp)
            else:
                if sigma[a] == 0.0:
                    vals[a] = 0.0
                    continue
                vals[a] = self._traverse(child, player, reach_own, reach_opp * sigma[a])
        if mine:
            info.cfv += reach_opp * vals
            info.reach_opp += reach_opp
            info.reach_own = max(info.reach_own, reach_own)
        return float(sigma @ vals)

    def iteration(self) -> None:
        """One PCFR+ iteration: player updates alternate (us, then the opponent)."""
        self.t += 1
        weight = float(self.t) ** 2
        for player in (US, THEM):
            touched = [i for i in self.infosets.values() if i.player == player]
            for info in touched:
                info.cfv[:] = 0.0
                info.reach_opp = 0.0
                info.reach_own = 0.0
            for node, p in zip(self.roots, self.prior):
                self._traverse(node, player, 1.0, p)
            for info in touched:
                if info.frozen:
                    continue
                inst = info.cfv - float(info.sigma @ info.cfv)
                info.avg += weight * info.reach_own * info.sigma
                info.regret = np.maximum(0.0, info.regret + inst)
                info.prediction = inst
                info.sigma = _rm(info.regret + info.prediction)
                if info.reach_opp > 0:
                    info.q = info.cfv / info.reach_opp
        self.n_iterations += 1

    # ---------------------------------------------------------------- driving

    def run(
        self,
        time_budget: float | None = None,
        max_expansions: int | None = None,
        expansions_per_solve: int = 16,
        cfr_iters_per_solve: int = 8,
    ) -> FoWSubgame:
        """Grow and solve until ``time_budget`` seconds or ``max_expansions`` expansions (the
        first solve step always runs, so the root strategy is defined)."""
        start = time.perf_counter()
        for _ in range(cfr_iters_per_solve):
            self.iteration()
        while True:
            if max_expansions is not None and self.n_expansions >= max_expansions:
                break
            if time_budget is not None and time.perf_counter() - start >= time_budget:
                break
            for _ in range(expansions_per_solve):
                self.expansion_step()
                if max_expansions is not None and self.n_expansions >= max_expansions:
                    break
            for _ in range(cfr_iters_per_solve):
                self.iteration()
        self.elapsed = time.perf_counter() - start
        return self

    def root_infoset(self) -> Infoset:
        return self.infosets[hash(("root",))]

    def root_strategy(self, kind: str = "average") -> dict[str, float]:
        info = self.root_infoset()
        s = info.average() if kind == "average" else info.sigma
        return dict(zip(info.actions, (float(x) for x in s)))

    def retained(self, our_move: str) -> dict:
        """Reach of every position two plies below the roots after ``our_move`` (for the next
        turn's prior) with the opponent's history key (for order-2 matching), and the other
        positions at that depth that we can tell apart but the opponent may not."""
        here, other = {}, []
        for root, p in zip(self.roots, self.prior):
            if root.children is None or root.order2:
                continue
            info = self.infosets[root.keys[US]]
            s_us = info.average()
            for a, child in enumerate(root.children):
                if child.terminal or child.children is None:
                    continue
                info_o = self.infosets[child.keys[THEM]]
                s_o = info_o.average()
                for b, grand in enumerate(child.children):
                    if grand.terminal:
                        continue
                    if grand.keys is None:
                        grand.keys = self._child_keys(child, grand, child.moves[b])
                    w = p * s_us[a] * s_o[b]
                    if child.moves is not None and root.moves[a].uci() == our_move:
                        k = board_key(grand.board)
                        here[k] = (here.get(k, (0.0, None))[0] + w, grand.keys[THEM])
                    elif w > 0:
                        other.append((grand.board, w, grand.keys[THEM]))
        return {"here": here, "other": other}

    def stats(self) -> dict:
        return {
            "nodes": self.n_nodes,
            "expansions": self.n_expansions,
            "cfr_iterations": self.n_iterations,
            "infosets": len(self.infosets),
            "roots": len(self.roots),
        }


def purify(strategy: dict[str, float], threshold: float) -> dict[str, float]:
    """Drop actions below ``threshold`` x the largest probability and renormalise."""
    threshold = V.check_probability(threshold, "purify_threshold")
    if not isinstance(strategy, dict) or not strategy:
        raise ValueError("strategy must be a non-empty {action: probability} dict")
    probs = V.check_array(list(strategy.values()), "strategy", ndim=1, low=0.0)
    if probs.sum() <= 0:
        raise ValueError("strategy has no positive probability")
    top = max(strategy.values())
    kept = {a: p for a, p in strategy.items() if p >= threshold * top and p > 0}
    total = sum(kept.values())
    return {a: p / total for a, p in kept.items()}
