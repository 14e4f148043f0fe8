"""Obscuro: imperfect-information search without common knowledge (knowledge-limited subgames,
one-sided GT-CFR with PCFR+) for Fog-of-War chess, on a python-chess rules engine, with a
PettingZoo environment, Kuhn and Leduc poker for exact exploitability, baseline agents and a
match runner. ``FoWChessGymEnv`` (registered as ``iclr26/FoWChess-v0``) is the single-agent
Gymnasium view against a fixed opponent."""

from .agents import (
    Agent,
    GameRecord,
    GreedyAgent,
    MatchResult,
    ObscuroAgent,
    PIMCAgent,
    RandomAgent,
    alphabeta,
    make_agent,
    play_game,
    play_match,
)
from .env import FoWChessEnv, FoWChessGymEnv, fow_chess_env
from .evaluate import CachedEval, king_capture_aware, make_evaluator, material_pst_eval
from .fow_chess import (
    BeliefOverflowError,
    BeliefState,
    FogOfWarChess,
    IllegalMoveError,
    Observation,
    decode_move,
    encode_move,
    parse_fen,
    pseudo_legal_moves,
    random_game,
    visible_squares,
)
from .games import ImperfectInfoGame, KuhnPoker, LeducPoker
from .search import FoWSubgame, purify
from .solver import (
    GameTree,
    PCFRPlus,
    SolveResult,
    build_tree,
    exploitability,
    solve,
    solve_pcfr_plus,
)
from .subgame import PIMC, SubgameSearch, profile_exploitability

__all__ = [
    "PIMC",
    "Agent",
    "BeliefOverflowError",
    "BeliefState",
    "CachedEval",
    "FoWChessEnv",
    "FoWChessGymEnv",
    "FoWSubgame",
    "FogOfWarChess",
    "GameRecord",
    "GameTree",
    "GreedyAgent",
    "IllegalMoveError",
    "ImperfectInfoGame",
    "KuhnPoker",
    "LeducPoker",
    "MatchResult",
    "ObscuroAgent",
    "Observation",
    "PCFRPlus",
    "PIMCAgent",
    "RandomAgent",
    "SolveResult",
    "SubgameSearch",
    "alphabeta",
    "build_tree",
    "decode_move",
    "encode_move",
    "exploitability",
    "fow_chess_env",
    "king_capture_aware",
    "make_agent",
    "make_evaluator",
    "material_pst_eval",
    "parse_fen",
    "play_game",
    "play_match",
    "profile_exploitability",
    "pseudo_legal_moves",
    "purify",
    "random_game",
    "solve",
    "solve_pcfr_plus",
    "visible_squares",
]
