"""Leaf evaluators for FoW chess search: ``value(board) -> [-1, 1]`` from the side to move's
perspective. The default is material plus piece-square tables squashed by tanh(cp / 400),
overridden by +1 when the side to move can capture the enemy king (a king capture in one must
dominate any material score). Evaluations are cached by position."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import chess

from .fow_chess import board_key

CENTIPAWNS = {
    chess.PAWN: 100,
    chess.KNIGHT: 320,
    chess.BISHOP: 330,
    chess.ROOK: 500,
    chess.QUEEN: 900,
    chess.KING: 0,
}

# piece-square bonuses (centipawns) from white's side, rank 1 first; mirrored for black
_PAWN = [0] * 8 + [5, 10, 10, -20, -20, 10, 10, 5] + [5, -5, -10, 0, 0, -10, -5, 5]
_PAWN += [0, 0, 0, 20, 20, 0, 0, 0] + [5, 5, 10, 25, 25, 10, 5, 5]
_PAWN += [10, 10, 20, 30, 30, 20, 10, 10] + [50] * 8 + [0] * 8
_KNIGHT = [-50, -40, -30, -30, -30, -30, -40, -50, -40, -20, 0, 5, 5, 0, -20, -40]
_KNIGHT += [-30, 5, 10, 15, 15, 10, 5, -30, -30, 0, 15, 20, 20, 15, 0, -30] * 2
_KNIGHT += [-40, -20, 0, 0, 0, 0, -20, -40, -50, -40, -30, -30, -30, -30, -40, -50]
_CENTER = [
    -10 if f in (0, 7) or r in (0, 7) else (10 if 2 <= f <= 5 and 2 <= r <= 5 else 0)
    for r in range(8)
    for f in range(8)
]
_KING = [20, 30, 10, 0, 0, 10, 30, 20] + [-10] * 48 + [-30] * 8
PST = {
    chess.PAWN: _PAWN,
    chess.KNIGHT: _KNIGHT,
    chess.BISHOP: _CENTER,
    chess.ROOK: [0] * 64,
    chess.QUEEN: _CENTER,
    chess.KING: _KING,
}


class EvalFn(Protocol):
    def __call__(self, board: chess.Board) -> float: ...


def centipawns(board: chess.Board) -> float:
    """Material + piece-square score for the side to move (centipawns)."""
    score = 0
    for piece, value in CENTIPAWNS.items():
        table = PST[piece]
        for sq in chess.scan_forward(board.pieces_mask(piece, chess.WHITE)):
            score += value + table[sq]
        for sq in chess.scan_forward(board.pieces_mask(piece, chess.BLACK)):
            score -= value + table[chess.square_mirror(sq)]
    return float(score if board.turn == chess.WHITE else -score)


def material_pst_eval(board: chess.Board) -> float:
    """tanh(centipawns / 400) for the side to move."""
    if not isinstance(board, chess.Board):
        raise TypeError(f"board must be a chess.Board, got {type(board).__name__}")
    return math.tanh(centipawns(board) / 400.0)


def can_capture_king(board: chess.Board) -> bool:
    """Whether the side to move attacks the enemy king (a king capture in one)."""
    king = board.king(not board.turn)
    return king is not None and board.is_attacked_by(board.turn, king)


class _KingCaptureAware:
    """Picklable wrapper (match workers receive agents by pickling)."""

    def __init__(self, base: Callable[[chess.Board], float]) -> None:
        self.base = base

    def __call__(self, board: chess.Board) -> float:
        if can_capture_king(board):
            return 1.0
        return max(-0.99, min(0.99, float(self.base(board))))


def king_capture_aware(base: Callable[[chess.Board], float]) -> Callable[[chess.Board], float]:
    """+1 when the side to move can capture the enemy king, else ``base``, capped at 0.99
    in absolute value so that a sure king capture always ranks above material."""
    if not callable(base):
        raise TypeError(f"base must be callable, got {type(base).__name__}")
    return _KingCaptureAware(base)


class CachedEval:
    """A FEN-keyed cache around an evaluator (hits and misses counted)."""

    def __init__(self, fn: Callable[[chess.Board], float], max_entries: int = 200_000) -> None:
        if not callable(fn):
            raise TypeError(f"evaluator must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.max_entries = max_entries
        self.cache: dict = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, board: chess.Board) -> float:
        key = board_key(board)
        v = self.cache.get(key)
        if v is None:
            self.misses += 1
            v = float(self.fn(board))
            if not math.isfinite(v):
                raise ValueError(f"evaluator returned a non-finite value {v}")
            if len(self.cache) >= self.max_entries:
                self.cache.clear()
            self.cache[key] = v
        else:
            self.hits += 1
        return v


EVALUATORS = {"material": lambda: CachedEval(king_capture_aware(material_pst_eval))}


def make_evaluator(spec: str | Callable) -> CachedEval:
    """``"material"`` (the default above) or any callable ``board -> value``."""
    if isinstance(spec, str):
        if spec not in EVALUATORS:
            raise ValueError(f"evaluator must be one of {sorted(EVALUATORS)} or a callable")
        return EVALUATORS[spec]()
    if callable(spec):
        return spec if isinstance(spec, CachedEval) else CachedEval(spec)
    raise TypeError(f"evaluator must be a name or a callable, got {type(spec).__name__}")
