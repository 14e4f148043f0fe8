"""FoW chess agents (Random, Greedy, PIMC, Obscuro) and a match runner over worker processes.

An agent is told its colour by ``reset(color, fen)``, picks a move with
``act(observation, legal_moves)`` and hears every observation after a ply through
``observe(observation, own_move)``. The belief-based agents (PIMC, Obscuro) keep a
:class:`BeliefState` of the positions consistent with what they saw."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import chess
import numpy as np

from iclr26 import validation as V

from .evaluate import CENTIPAWNS, can_capture_king, make_evaluator
from .fow_chess import (
    BeliefState,
    FogOfWarChess,
    IllegalMoveError,
    Observation,
    board_key,
    codes_from_key,
    moves_from,
    pseudo_legal_moves,
)
from .search import FoWSubgame, purify


def _check_turn(observation: Observation, legal_moves) -> list[chess.Move]:
    if not isinstance(observation, Observation):
        raise TypeError(f"observation must be an Observation, got {type(observation).__name__}")
    moves = moves_from(legal_moves)
    if not moves:
        raise ValueError("legal_moves is empty: there is no move to choose")
    return moves


class Agent:
    """Base class: ``reset``, ``observe`` and ``act``; ``stats`` holds per-game counters."""

    name = "agent"

    def __init__(self, seed: int = 0) -> None:
        self.seed = V.check_int(seed, "seed", low=0)
        self.rng = random.Random(self.seed)
        self.color = chess.WHITE
        self.stats: dict = {}

    def reset(self, color: bool, fen: str | None = None) -> None:
        self.color = V.check_bool(color, "color")
        self.rng = random.Random(self.seed)
        self.stats = {"moves": 0, "think_s": 0.0}

    def observe(self, observation: Observation, own_move: chess.Move | None = None) -> None:
        """Called after every ply with this agent's observation (``own_move`` set after its
        own move)."""

    def act(self, observation: Observation, legal_moves: Sequence) -> chess.Move:
        """The move to play (each agent defines it; ``Agent`` holds the shared state)."""
        raise NotImplementedError(f"{type(self).__name__} does not define act")


class RandomAgent(Agent):
    """A uniformly random pseudo-legal move."""

    name = "random"

    def act(self, observation: Observation, legal_moves: Sequence) -> chess.Move:
        moves = _check_turn(observation, legal_moves)
        return self.rng.choice(moves)


def _seen_board(observation: Observation) -> chess.Board:
    """The observed pieces on an otherwise empty board (unseen squares empty)."""
    board = chess.Board(None)
    symbols = "PNBRQKpnbrqk"
    codes = codes_from_key(observation.key).reshape(-1)
    for sq in range(64):
        if codes[sq] >= 2:
            board.set_piece_at(sq, chess.Piece.from_symbol(symbols[codes[sq] - 2]))
    board.turn = observation.turn
    return board


class GreedyAgent(Agent):
    """Capture the king if visible and capturable, else the most valuable capturable visible
    piece (cheapest capturer first), else a random move that does not step onto a square
    attacked by a visible enemy piece (a random move if there is none)."""

    name = "greedy"

    def act(self, observation: Observation, legal_moves: Sequence) -> chess.Move:
        moves = _check_turn(observation, legal_moves)
        seen = _seen_board(observation)
        enemy = not self.color
        best, best_score = None, -1.0
        for m in moves:
            victim = seen.piece_at(m.to_square)
            if victim is None or victim.color != enemy:
                continue
            if victim.piece_type == chess.KING:
                return m
            attacker = seen.piece_type_at(m.from_square) or chess.PAWN
            score = CENTIPAWNS[victim.piece_type] - CENTIPAWNS.get(attacker, 0) / 100.0
            if score > best_score:
                best, best_score = m, score
        if best is not None:
            return best
        safe = [m for m in moves if not seen.is_attacked_by(enemy, m.to_square)]
        return self.rng.choice(safe or moves)


class BeliefAgent(Agent):
    """An agent that keeps a :class:`BeliefState` (capped at ``belief_size``)."""

    def __init__(self, belief_size: int = 256, seed: int = 0) -> None:
        super().__init__(seed)
        self.belief_size = V.check_int(belief_size, "belief_size", low=1)
        self.belief: BeliefState | None = None

    def reset(self, color: bool, fen: str | None = None) -> None:
        super().reset(color, fen)
        self.belief = BeliefState(color, self.belief_size, fen=fen, seed=self.seed)
        self._pending: chess.Move | None = None

    def observe(self, observation: Observation, own_move: chess.Move | None = None) -> None:
        if self.belief is None:
            raise RuntimeError("reset(color) must be called before observe")
        t0 = time.perf_counter()
        if own_move is not None:
            self.belief.observe_own_move(own_move, observation)
        else:
            self.belief.observe_opponent_move(observation)
        self.stats["belief_s"] = self.stats.get("belief_s", 0.0) + time.perf_counter() - t0
        self.stats["belief_max"] = max(self.stats.get("belief_max", 0), len(self.belief))

    def _positions(self, observation: Observation) -> list[chess.Board]:
        if self.belief is None:
            raise RuntimeError("reset(color) must be called before act")
        if observation.turn != self.color:
            raise ValueError("observation: it is not this agent's turn")
        return self.belief.boards()


def alphabeta(
    board: chess.Board,
    depth: int,
    evaluator,
    alpha: float = -math.inf,
    beta: float = math.inf,
    counter: list | None = None,
) -> float:
    """Negamax alpha-beta of ``depth`` plies on pseudo-legal moves with king capture as the
    terminal; the value is for the side to move (``counter[0]`` counts the nodes)."""
    if not isinstance(board, chess.Board):
        raise TypeError(f"board must be a chess.Board, got {type(board).__name__}")
    depth = V.check_int(depth, "depth", low=0)
    if not callable(evaluator):
        raise TypeError(f"evaluator must be callable, got {type(evaluator).__name__}")
    alpha = V.check_scalar(alpha, "alpha", allow_inf=True)
    beta = V.check_scalar(beta, "beta", allow_inf=True)
    return _alphabeta(board.copy(), depth, alpha, beta, evaluator, counter or [0])


def _alphabeta(board: chess.Board, depth: int, alpha: float, beta: float, evaluator, counter):
    counter[0] += 1
    if can_capture_king(board):
        return 1.0
    if depth == 0:
        return evaluator(board)
    moves = pseudo_legal_moves(board)
    if not moves:
        return 0.0
    # captures first: a cheap ordering that makes the cut-offs bite
    moves.sort(key=lambda m: board.piece_type_at(m.to_square) is None)
    best = -math.inf
    for m in moves:
        board.push(m)
        v = -_alphabeta(board, depth - 1, -beta, -alpha, evaluator, counter)
        board.pop()
        if v > best:
            best = v
        alpha = max(alpha, v)
        if alpha >= beta:
            break
    return best


class PIMCAgent(BeliefAgent):
    """Perfect-information Monte Carlo: sample positions from the belief, run alpha-beta of
    ``depth`` with the same evaluator on each, play the move of best average score; stops
    sampling when ``time_per_move`` is spent (at least one sample)."""

    name = "pimc"

    def __init__(
        self,
        time_per_move: float = 0.05,
        n_samples: int = 16,
        depth: int = 2,
        evaluator="material",
        belief_size: int = 256,
        seed: int = 0,
    ) -> None:
        super().__init__(belief_size, seed)
        self.time_per_move = V.check_scalar(time_per_move, "time_per_move", low=0.0, low_open=True)
        self.n_samples = V.check_int(n_samples, "n_samples", low=1)
        self.depth = V.check_int(depth, "depth", low=1, high=6)
        self.evaluator_spec = evaluator
        self.evaluator = make_evaluator(evaluator)

    def act(self, observation: Observation, legal_moves: Sequence) -> chess.Move:
        moves = _check_turn(observation, legal_moves)
        start = time.perf_counter()
        boards = self._positions(observation)
        sample = (
            boards if len(boards) <= self.n_samples else self.rng.sample(boards, self.n_samples)
        )
        totals = np.zeros(len(moves))
        counter = [0]
        used = 0
        for board in sample:
            b = board.copy(stack=False)
            for i, m in enumerate(moves):
                if b.piece_type_at(m.to_square) == chess.KING:
                    totals[i] += 1.0
                    continue
                b.push(m)
                totals[i] += -_alphabeta(
                    b, self.depth - 1, -math.inf, math.inf, self.evaluator, counter
                )
                b.pop()
            used += 1
            if time.perf_counter() - start >= self.time_per_move:
                break
        best = np.flatnonzero(totals >= totals.max() - 1e-12)
        self.stats["moves"] += 1
        self.stats["think_s"] += time.perf_counter() - start
        self.stats["nodes"] = self.stats.get("nodes", 0) + counter[0]
        self.stats["samples"] = self.stats.get("samples", 0) + used
        return moves[int(self.rng.choice(list(best)))]


class ObscuroAgent(BeliefAgent):
    """Obscuro: each turn, sample up to ``n_root_samples`` positions of the belief (prior from
    the reach of the tree kept from the previous turn, uniform otherwise), build the
    knowledge-limited subgame (``order`` 1 or 2), grow it by one-sided GT-CFR and solve it by
    PCFR+ for ``time_per_move`` seconds (or ``max_expansions``), then sample a move from the
    purified root strategy (average, or last iterate with ``use="current"``)."""

    name = "obscuro"

    def __init__(
        self,
        time_per_move: float = 0.05,
        n_root_samples: int = 64,
        order: int = 1,
        evaluator="material",
        solver: str = "pcfr+",
        c_puct: float = 1.0,
        epsilon: float = 0.05,
        expansions_per_solve: int = 16,
        cfr_iters_per_solve: int = 8,
        purify_threshold: float = 0.1,
        explore: str = "alternate",
        use: str = "average",
        freeze: bool = False,
        max_expansions: int | None = None,
        belief_size: int = 256,
        seed: int = 0,
    ) -> None:
        super().__init__(belief_size, seed)
        self.time_per_move = V.check_scalar(time_per_move, "time_per_move", low=0.0, low_open=True)
        self.n_root_samples = V.check_int(n_root_samples, "n_root_samples", low=1)
        self.order = V.check_choice(order, "order", (1, 2))
        V.check_choice(solver, "solver", ("pcfr+",))
        self.c_puct = V.check_scalar(c_puct, "c_puct", low=0.0)
        self.epsilon = V.check_probability(epsilon, "epsilon")
        self.expansions_per_solve = V.check_int(expansions_per_solve, "expansions_per_solve", low=1)
        self.cfr_iters_per_solve = V.check_int(cfr_iters_per_solve, "cfr_iters_per_solve", low=1)
        self.purify_threshold = V.check_probability(purify_threshold, "purify_threshold")
        self.explore = V.check_choice(explore, "explore", ("alternate", "self"))
        self.use = V.check_choice(use, "use", ("average", "current"))
        self.freeze = V.check_bool(freeze, "freeze")
        self.max_expansions = V.check_int(max_expansions, "max_expansions", low=0, allow_none=True)
        self.evaluator_spec = evaluator
        self.evaluator = make_evaluator(evaluator)
        self.last_tree: FoWSubgame | None = None

    def reset(self, color: bool, fen: str | None = None) -> None:
        super().reset(color, fen)
        self._retained = None
        self.last_tree = None

    def search(self, boards: list[chess.Board]) -> FoWSubgame:
        """Build and run this turn's subgame over ``boards`` (positions, our side to move)."""
        if not boards:
            raise ValueError("boards is empty: the search needs at least one position")
        t0 = time.perf_counter()  # the budget covers building the root layer too
        sample = (
            boards
            if len(boards) <= self.n_root_samples
            else self.rng.sample(boards, self.n_root_samples)
        )
        prior, opp_keys, order2 = [1.0] * len(sample), [None] * len(sample), []
        kept = self._retained
        if kept and kept["here"]:
            reach = kept["here"]
            floor = (
                min(w for w, _ in reach.values() if w > 0)
                if any(w > 0 for w, _ in reach.values())
                else 1.0
            )
            prior, opp_keys = [], []
            for b in sample:
                w, ok = reach.get(board_key(b), (0.0, None))
                prior.append(w if w > 0 else floor)
                opp_keys.append(ok)
            if self.order == 2:
                ours = {board_key(b) for b in sample}
                wanted = {ok for ok in opp_keys if ok is not None}
                extra = [x for x in kept["other"] if x[2] in wanted and board_key(x[0]) not in ours]
                if len(extra) > self.n_root_samples:
                    extra = self.rng.sample(extra, self.n_root_samples)
                order2 = [(b, w, ("hist", ok)) for b, w, ok in extra]
                opp_keys = [None if ok is None else ("hist", ok) for ok in opp_keys]
        tree = FoWSubgame(
            self.color,
            sample,
            prior,
            self.evaluator,
            opp_root_keys=opp_keys,
            order2_roots=order2,
            c_puct=self.c_puct,
            epsilon=self.epsilon,
            explore=self.explore,
            freeze=self.freeze,
            seed=self.rng.randrange(2**31),
        )
        tree.run(
            time_budget=None
            if self.max_expansions is not None
            else max(0.0, self.time_per_move - (time.perf_counter() - t0)),
            max_expansions=self.max_expansions,
            expansions_per_solve=self.expansions_per_solve,
            cfr_iters_per_solve=self.cfr_iters_per_solve,
        )
        return tree

    def act(self, observation: Observation, legal_moves: Sequence) -> chess.Move:
        moves = _check_turn(observation, legal_moves)
        start = time.perf_counter()
        tree = self.search(self._positions(observation))
        strategy = purify(tree.root_strategy(self.use), self.purify_threshold)
        ucis = {m.uci(): m for m in moves}
        actions = [a for a in strategy if a in ucis]
        if not actions:
            raise IllegalMoveError("legal_moves does not match the positions of the belief")
        choice = self.rng.choices(actions, weights=[strategy[a] for a in actions])[0]
        self._retained = tree.retained(choice)
        self.last_tree = tree
        st = tree.stats()
        self.stats["moves"] += 1
        self.stats["think_s"] += time.perf_counter() - start
        for k in ("nodes", "expansions", "cfr_iterations"):
            self.stats[k] = self.stats.get(k, 0) + st[k]
        return ucis[choice]


AGENTS = {"random": RandomAgent, "greedy": GreedyAgent, "pimc": PIMCAgent, "obscuro": ObscuroAgent}


def make_agent(spec) -> Agent:
    """An agent from an instance, a name in :data:`AGENTS`, or ``(name, kwargs)``."""
    if isinstance(spec, Agent):
        return spec
    if isinstance(spec, str):
        name, kwargs = spec, {}
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], dict):
        name, kwargs = spec
    else:
        raise TypeError(f"agent must be an Agent, a name or (name, kwargs), got {spec!r}")
    V.check_choice(name, "agent", tuple(AGENTS))
    return AGENTS[name](**kwargs)


@dataclass
class GameRecord:
    white: str
    black: str
    result: str
    termination: str
    plies: int
    pgn: str
    wall_s: float
    stats: dict = field(default_factory=dict)


def play_game(
    white, black, max_plies: int | None = 60, adjudicate: float = 3.0, fen: str | None = None
) -> GameRecord:
    """One game between two agents (instances, names or ``(name, kwargs)``)."""
    white, black = make_agent(white), make_agent(black)
    game = FogOfWarChess(fen, max_plies=max_plies, adjudicate=adjudicate)
    agents = {chess.WHITE: white, chess.BLACK: black}
    for color, agent in agents.items():
        agent.reset(color, fen)
    t0 = time.perf_counter()
    while not game.is_over():
        mover = game.turn
        move = agents[mover].act(game.observation(mover), game.legal_moves())
        game.step(move)
        if game.is_over():
            break
        for color, agent in agents.items():
            agent.observe(game.observation(color), move if color == mover else None)
    return GameRecord(
        white=white.name,
        black=black.name,
        result=game.result(),
        termination=game.termination,
        plies=game.ply,
        pgn=game.pgn(white.name, black.name),
        wall_s=time.perf_counter() - t0,
        stats={"white": dict(white.stats), "black": dict(black.stats)},
    )


def _play_one(args) -> GameRecord:
    a, b, a_white, max_plies, adjudicate, seed_a, seed_b = args
    agent_a, agent_b = make_agent(a), make_agent(b)
    agent_a.seed, agent_b.seed = seed_a, seed_b
    if a_white:
        return play_game(agent_a, agent_b, max_plies, adjudicate)
    return play_game(agent_b, agent_a, max_plies, adjudicate)


@dataclass
class MatchResult:
    """W/D/L of agent A, its score (win 1, draw 0.5) with a 95% normal-approximation CI, the
    Elo difference with its CI, the games (PGN) and per-agent search counters."""

    wins: int
    draws: int
    losses: int
    score: float
    ci95: tuple
    elo: float
    elo_ci95: tuple
    games: list
    a_stats: dict
    b_stats: dict

    @property
    def n_games(self) -> int:
        return self.wins + self.draws + self.losses

    def pgn(self) -> str:
        return "\n".join(g.pgn for g in self.games)

    def to_dict(self) -> dict:
        return {
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "games": self.n_games,
            "score": self.score,
            "ci95": list(self.ci95),
            "elo": self.elo,
            "elo_ci95": list(self.elo_ci95),
            "a_stats": self.a_stats,
            "b_stats": self.b_stats,
        }


def elo_from_score(score: float, n: int) -> float:
    s = min(max(score, 0.5 / n), 1 - 0.5 / n)
    return -400.0 * math.log10(1.0 / s - 1.0)


def play_match(
    agent_a,
    agent_b,
    n_games: int = 2,
    time_per_move: float | None = None,
    max_plies: int | None = 60,
    adjudicate: float = 3.0,
    n_workers: int = 1,
    seed: int = 0,
    pgn_path=None,
) -> MatchResult:
    """``n_games`` games of A against B, colours alternating, over ``n_workers`` processes.
    ``time_per_move`` (if given) overrides both agents' budgets; ``(name, kwargs)`` specs are
    rebuilt in each worker. PGN of every game goes to ``pgn_path`` when set."""
    n_games = V.check_int(n_games, "n_games", low=1)
    n_workers = V.check_int(n_workers, "n_workers", low=1)
    max_plies = V.check_int(max_plies, "max_plies", low=1, allow_none=True)
    adjudicate = V.check_scalar(adjudicate, "adjudicate", low=0.0, low_open=True)
    seed = V.check_int(seed, "seed", low=0)
    specs = []
    for spec in (agent_a, agent_b):
        agent = make_agent(spec)
        if time_per_move is not None and hasattr(agent, "time_per_move"):
            agent.time_per_move = V.check_scalar(
                time_per_move, "time_per_move", low=0.0, low_open=True
            )
        specs.append(agent)
    jobs = [
        (specs[0], specs[1], g % 2 == 0, max_plies, adjudicate, seed + 2 * g, seed + 2 * g + 1)
        for g in range(n_games)
    ]
    if n_workers == 1:
        games = [_play_one(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            games = list(pool.map(_play_one, jobs))
    points, a_stats, b_stats = [], {}, {}
    for g, (_, _, a_white, *_rest) in zip(games, jobs):
        res = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[g.result]
        points.append(res if a_white else 1.0 - res)
        for stats, side in (
            (a_stats, "white" if a_white else "black"),
            (b_stats, "black" if a_white else "white"),
        ):
            for k, v in g.stats[side].items():
                stats[k] = stats.get(k, 0) + v if k != "belief_max" else max(stats.get(k, 0), v)
    pts = np.array(points)
    n = len(pts)
    score = float(pts.mean())
    se = float(pts.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.5
    ci = (max(0.0, score - 1.96 * se), min(1.0, score + 1.96 * se))
    if pgn_path is not None:
        with open(pgn_path, "w") as fh:
            fh.write("\n".join(g.pgn for g in games))
    return MatchResult(
        wins=int((pts == 1).sum()),
        draws=int((pts == 0.5).sum()),
        losses=int((pts == 0).sum()),
        score=score,
        ci95=ci,
        elo=elo_from_score(score, n),
        elo_ci95=(elo_from_score(ci[0], n), elo_from_score(ci[1], n)),
        games=games,
        a_stats=a_stats,
        b_stats=b_stats,
    )
