"""Bad-input cases of the Obscuro room (FoW rules, belief, env, solvers, search, agents)."""

import chess
import numpy as np

from iclr26.rl.obscuro import (
    PIMC,
    Agent,
    BeliefState,
    CachedEval,
    FogOfWarChess,
    FoWChessEnv,
    FoWChessGymEnv,
    FoWSubgame,
    GreedyAgent,
    IllegalMoveError,
    KuhnPoker,
    ObscuroAgent,
    PCFRPlus,
    PIMCAgent,
    RandomAgent,
    SubgameSearch,
    alphabeta,
    build_tree,
    decode_move,
    encode_move,
    exploitability,
    fow_chess_env,
    king_capture_aware,
    make_agent,
    make_evaluator,
    material_pst_eval,
    parse_fen,
    play_game,
    play_match,
    profile_exploitability,
    pseudo_legal_moves,
    purify,
    random_game,
    solve,
    solve_pcfr_plus,
    visible_squares,
)

N_ACTIONS = 64 * 73
NAN, INF = float("nan"), float("inf")
BAD_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1"
NO_KING = "8/8/8/8/8/8/8/4K3 w - - 0 1"
_TREE = []


def _tree():
    if not _TREE:
        _TREE.append(build_tree(KuhnPoker()))
    return _TREE[0]


def _obs():
    return FogOfWarChess().observation(chess.WHITE)


def _step_bad(move):
    return lambda: FogOfWarChess().step(move)


def _belief_bad_obs():
    b = BeliefState(chess.WHITE)
    return b.observe_opponent_move("e2e4")


def _belief_illegal_own_move():
    game = FogOfWarChess()
    game.step("e2e4")
    BeliefState(chess.WHITE).observe_own_move("e2e5", game.observation(chess.WHITE))


def _belief_unexplained_view():
    game = FogOfWarChess()
    game.step("e2e4")
    BeliefState(chess.WHITE).observe_own_move("d2d4", game.observation(chess.WHITE))


def _gym_step(action):
    env = FoWChessGymEnv(max_plies=10)
    env.reset(seed=0)
    env.step(action)


def _env_step(action):
    env = FoWChessEnv()
    env.reset()
    env.step(action)


CASES = [
    # rules engine
    ("parse_fen", "other", lambda: parse_fen(BAD_FEN), ValueError, "fen"),
    ("parse_fen", "other", lambda: parse_fen(NO_KING), ValueError, "fen"),
    ("parse_fen", "type", lambda: parse_fen(None), TypeError, "fen"),
    ("FogOfWarChess", "other", lambda: FogOfWarChess("garbage"), ValueError, "fen"),
    ("FogOfWarChess", "range", lambda: FogOfWarChess(max_plies=0), ValueError, "max_plies"),
    ("FogOfWarChess", "nan", lambda: FogOfWarChess(adjudicate=NAN), ValueError, "adjudicate"),
    ("FogOfWarChess", "other", _step_bad("e2e5"), IllegalMoveError, "move"),
    ("FogOfWarChess", "other", _step_bad("e2"), IllegalMoveError, "move"),
    ("FogOfWarChess", "type", _step_bad(12), TypeError, "move"),
    ("FogOfWarChess", "type", lambda: FogOfWarChess().observation("white"), TypeError, "color"),
    ("pseudo_legal_moves", "type", lambda: pseudo_legal_moves("e4"), TypeError, "board"),
    ("visible_squares", "type", lambda: visible_squares(None, True), TypeError, "board"),
    (
        "visible_squares",
        "type",
        lambda: visible_squares(chess.Board(), 1),
        TypeError,
        "color",
    ),
    ("encode_move", "other", lambda: encode_move("zz", True), IllegalMoveError, "move"),
    ("encode_move", "type", lambda: encode_move(3, True), TypeError, "move"),
    ("decode_move", "range", lambda: decode_move(-1, True), ValueError, "index"),
    ("decode_move", "range", lambda: decode_move(4672, True), ValueError, "index"),
    ("decode_move", "other", lambda: decode_move(28, True), IllegalMoveError, "index"),
    ("random_game", "range", lambda: random_game(-1), ValueError, "n_plies"),
    ("random_game", "other", lambda: random_game(2, fen=BAD_FEN), ValueError, "fen"),
    # belief
    ("BeliefState", "range", lambda: BeliefState(True, max_size=0), ValueError, "max_size"),
    ("BeliefState", "type", lambda: BeliefState("white"), TypeError, "color"),
    (
        "BeliefState",
        "range",
        lambda: BeliefState(True, on_overflow="drop"),
        ValueError,
        "on_overflow",
    ),
    ("BeliefState", "other", lambda: BeliefState(True, fen=NO_KING), ValueError, "fen"),
    ("BeliefState", "type", _belief_bad_obs, TypeError, "observation"),
    ("BeliefState", "other", _belief_illegal_own_move, IllegalMoveError, "move e2e5"),
    ("BeliefState", "other", _belief_unexplained_view, ValueError, "observation"),
    (
        "BeliefState",
        "other",
        lambda: BeliefState(True).observe_opponent_move(FogOfWarChess().observation(False)),
        ValueError,
        "observation",
    ),
    # env
    ("FoWChessEnv", "other", lambda: FoWChessEnv(fen=BAD_FEN), ValueError, "fen"),
    ("FoWChessEnv", "range", lambda: FoWChessEnv(max_plies=0), ValueError, "max_plies"),
    ("FoWChessEnv", "range", lambda: _env_step(-3), ValueError, "action"),
    ("FoWChessEnv", "other", lambda: _env_step(0), IllegalMoveError, "index|move"),
    ("fow_chess_env", "range", lambda: fow_chess_env(max_plies=-1), ValueError, "max_plies"),
    (
        "fow_chess_env",
        "nan",
        lambda: fow_chess_env(illegal_reward=float("nan")),
        ValueError,
        "illegal_reward",
    ),
    ("FoWChessEnv", "other", lambda: _env_step("zzzz"), IllegalMoveError, "action"),
    ("FoWChessGymEnv", "range", lambda: FoWChessGymEnv(max_plies=0), ValueError, "max_plies"),
    ("FoWChessGymEnv", "type", lambda: FoWChessGymEnv(color="white"), TypeError, "color"),
    ("FoWChessGymEnv", "other", lambda: FoWChessGymEnv(fen=BAD_FEN), ValueError, "fen"),
    ("FoWChessGymEnv", "range", lambda: FoWChessGymEnv(opponent="nobody"), ValueError, "agent"),
    (
        "FoWChessGymEnv",
        "nan",
        lambda: FoWChessGymEnv(illegal_reward=float("nan")),
        ValueError,
        "illegal_reward",
    ),
    ("FoWChessGymEnv", "range", lambda: _gym_step(N_ACTIONS), ValueError, "action"),
    ("FoWChessGymEnv", "type", lambda: _gym_step(1.5), TypeError, "action"),
    # solvers
    ("build_tree", "type", lambda: build_tree(object()), TypeError, "game"),
    ("build_tree", "empty", lambda: build_tree(KuhnPoker(), roots=[]), ValueError, "roots"),
    (
        "build_tree",
        "nan",
        lambda: build_tree(KuhnPoker(), roots=[(0, 1)], weights=[NAN]),
        ValueError,
        "weights",
    ),
    (
        "build_tree",
        "shape",
        lambda: build_tree(KuhnPoker(), roots=[(0, 1)], weights=[0.5, 0.5]),
        ValueError,
        "roots|weights",
    ),
    ("build_tree", "range", lambda: build_tree(KuhnPoker(), max_nodes=0), ValueError, "max_nodes"),
    ("solve", "range", lambda: solve(KuhnPoker(), 0), ValueError, "iterations"),
    ("solve", "range", lambda: solve(KuhnPoker(), 5, "dcfr"), ValueError, "algorithm"),
    ("solve", "range", lambda: solve(KuhnPoker(), 5, track_every=0), ValueError, "track_every"),
    (
        "solve_pcfr_plus",
        "range",
        lambda: solve_pcfr_plus(KuhnPoker(), -2),
        ValueError,
        "iterations",
    ),
    ("PCFRPlus", "type", lambda: PCFRPlus("tree"), TypeError, "tree"),
    ("PCFRPlus", "range", lambda: PCFRPlus(_tree(), "dcfr"), ValueError, "algorithm"),
    ("PCFRPlus", "shape", lambda: PCFRPlus(_tree(), fixed=np.zeros(3)), ValueError, "fixed"),
    ("PCFRPlus", "range", lambda: PCFRPlus(_tree()).iterate(0), ValueError, "n"),
    (
        "exploitability",
        "nan",
        lambda: exploitability(_tree(), np.full(_tree().n_slots, NAN)),
        ValueError,
        "sigma",
    ),
    (
        "exploitability",
        "shape",
        lambda: exploitability(_tree(), np.ones(3) / 3),
        ValueError,
        "sigma",
    ),
    (
        "exploitability",
        "other",
        lambda: exploitability(_tree(), {(0, (0, ())): {0: -1.0, 1: 0.0}}),
        ValueError,
        "strategy",
    ),
    ("SubgameSearch", "type", lambda: SubgameSearch(object()), TypeError, "game"),
    ("SubgameSearch", "range", lambda: SubgameSearch(KuhnPoker(), 0), ValueError, "iterations"),
    ("SubgameSearch", "range", lambda: SubgameSearch(KuhnPoker(), 5, order=3), ValueError, "order"),
    (
        "SubgameSearch",
        "range",
        lambda: SubgameSearch(KuhnPoker(), 5, prior="blueprint"),
        ValueError,
        "prior",
    ),
    (
        "SubgameSearch",
        "range",
        lambda: SubgameSearch(KuhnPoker(), 5).assemble(2),
        ValueError,
        "player",
    ),
    (
        "SubgameSearch",
        "range",
        lambda: SubgameSearch(KuhnPoker(), 5, gadget="maxmargin"),
        ValueError,
        "gadget",
    ),
    ("PIMC", "type", lambda: PIMC(None), TypeError, "game"),
    ("PIMC", "range", lambda: PIMC(KuhnPoker()).assemble(-1), ValueError, "player"),
    (
        "profile_exploitability",
        "type",
        lambda: profile_exploitability(KuhnPoker(), [1]),
        TypeError,
        "profile",
    ),
    # evaluation and search
    ("material_pst_eval", "type", lambda: material_pst_eval("fen"), TypeError, "board"),
    ("king_capture_aware", "type", lambda: king_capture_aware(3), TypeError, "base"),
    ("CachedEval", "type", lambda: CachedEval(None), TypeError, "evaluator"),
    (
        "CachedEval",
        "nan",
        lambda: CachedEval(lambda b: NAN)(chess.Board()),
        ValueError,
        "evaluator",
    ),
    ("make_evaluator", "range", lambda: make_evaluator("stockfish9"), ValueError, "evaluator"),
    ("make_evaluator", "type", lambda: make_evaluator(3), TypeError, "evaluator"),
    (
        "FoWSubgame",
        "empty",
        lambda: FoWSubgame(True, [], [], make_evaluator("material")),
        ValueError,
        "roots",
    ),
    (
        "FoWSubgame",
        "nan",
        lambda: FoWSubgame(True, [chess.Board()], [NAN], make_evaluator("material")),
        ValueError,
        "prior",
    ),
    (
        "FoWSubgame",
        "range",
        lambda: FoWSubgame(True, [chess.Board()], [1.0], make_evaluator("material"), epsilon=2),
        ValueError,
        "epsilon",
    ),
    (
        "FoWSubgame",
        "shape",
        lambda: FoWSubgame(True, [chess.Board()], [1.0, 1.0], make_evaluator("material")),
        ValueError,
        "roots|prior",
    ),
    ("purify", "range", lambda: purify({"a": 1.0}, NAN), ValueError, "purify_threshold"),
    ("purify", "empty", lambda: purify({}, 0.1), ValueError, "strategy"),
    ("purify", "nan", lambda: purify({"a": NAN}, 0.1), ValueError, "strategy"),
    ("alphabeta", "type", lambda: alphabeta("board", 1, material_pst_eval), TypeError, "board"),
    (
        "alphabeta",
        "range",
        lambda: alphabeta(chess.Board(), -1, material_pst_eval),
        ValueError,
        "depth",
    ),
    (
        "alphabeta",
        "nan",
        lambda: alphabeta(chess.Board(), 1, material_pst_eval, NAN),
        ValueError,
        "alpha",
    ),
    ("alphabeta", "type", lambda: alphabeta(chess.Board(), 1, None), TypeError, "evaluator"),
    # agents and matches
    ("Agent", "range", lambda: Agent(seed=-1), ValueError, "seed"),
    ("Agent", "type", lambda: Agent().reset("white"), TypeError, "color"),
    ("RandomAgent", "empty", lambda: RandomAgent().act(_obs(), []), ValueError, "legal_moves"),
    ("RandomAgent", "type", lambda: RandomAgent().act("obs", ["e2e4"]), TypeError, "observation"),
    (
        "RandomAgent",
        "other",
        lambda: RandomAgent().act(_obs(), ["e9e4"]),
        IllegalMoveError,
        "legal_moves",
    ),
    ("GreedyAgent", "empty", lambda: GreedyAgent().act(_obs(), []), ValueError, "legal_moves"),
    ("GreedyAgent", "type", lambda: GreedyAgent(seed=1.5), TypeError, "seed"),
    ("PIMCAgent", "range", lambda: PIMCAgent(depth=0), ValueError, "depth"),
    ("PIMCAgent", "nan", lambda: PIMCAgent(time_per_move=NAN), ValueError, "time_per_move"),
    ("PIMCAgent", "range", lambda: PIMCAgent(n_samples=0), ValueError, "n_samples"),
    ("PIMCAgent", "other", lambda: PIMCAgent().act(_obs(), ["e2e4"]), RuntimeError, "reset"),
    ("ObscuroAgent", "nan", lambda: ObscuroAgent(time_per_move=NAN), ValueError, "time_per_move"),
    ("ObscuroAgent", "inf", lambda: ObscuroAgent(time_per_move=INF), ValueError, "time_per_move"),
    ("ObscuroAgent", "range", lambda: ObscuroAgent(n_root_samples=0), ValueError, "n_root_samples"),
    ("ObscuroAgent", "range", lambda: ObscuroAgent(order=3), ValueError, "order"),
    ("ObscuroAgent", "range", lambda: ObscuroAgent(epsilon=1.5), ValueError, "epsilon"),
    ("ObscuroAgent", "range", lambda: ObscuroAgent(solver="cfr"), ValueError, "solver"),
    ("ObscuroAgent", "range", lambda: ObscuroAgent(belief_size=0), ValueError, "belief_size"),
    ("ObscuroAgent", "empty", lambda: ObscuroAgent().search([]), ValueError, "boards"),
    ("make_agent", "range", lambda: make_agent("stockfish"), ValueError, "agent"),
    ("make_agent", "type", lambda: make_agent(3), TypeError, "agent"),
    ("play_game", "range", lambda: play_game("random", "nobody"), ValueError, "agent"),
    (
        "play_game",
        "range",
        lambda: play_game("random", "random", max_plies=0),
        ValueError,
        "max_plies",
    ),
    (
        "play_match",
        "range",
        lambda: play_match("random", "random", n_games=0),
        ValueError,
        "n_games",
    ),
    (
        "play_match",
        "range",
        lambda: play_match("random", "random", n_workers=0),
        ValueError,
        "n_workers",
    ),
    (
        "play_match",
        "nan",
        lambda: play_match("pimc", "random", time_per_move=NAN),
        ValueError,
        "time_per_move",
    ),
    (
        "play_match",
        "nan",
        lambda: play_match("random", "random", adjudicate=NAN),
        ValueError,
        "adjudicate",
    ),
]

EXEMPT = {
    "BeliefOverflowError": "an exception type; raised by BeliefState, takes no user data",
    "IllegalMoveError": "an exception type; raised for bad moves, takes no user data",
    "GameRecord": "a plain record of one game returned by play_game; takes no user data",
    "MatchResult": "a plain record returned by play_match; takes no user data",
    "GameTree": "a record of arrays built (and validated) by build_tree",
    "SolveResult": "a record returned by solve; takes no user data",
    "Observation": "a record built by FogOfWarChess.observation; takes no user data",
    "ImperfectInfoGame": "a typing Protocol describing the game interface; not called",
    "KuhnPoker": "a fixed game with no parameters",
    "LeducPoker": "a fixed game with no parameters",
}
