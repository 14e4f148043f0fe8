"""Fog-of-War chess on python-chess: pseudo-legal moves, FoW castling, king capture, the fog
view of each player and the belief set of positions consistent with a player's observations.

Rules follow chess.com's Fog of War and OpenSpiel's ``dark_chess``: there is no check, a player
may leave the king en prise, the game ends when a king is captured; castling needs an unmoved
king and rook and empty squares between them, with no attacked-square restriction. A player
sees the squares of its own pieces and every square one of its pseudo-legal moves goes to
(pawns see a forward square only when they can move there and a diagonal only when they can
capture there), each with its content."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass

import chess
import numpy as np

from iclr26 import validation as V

log = logging.getLogger(__name__)

START_FEN = chess.STARTING_FEN
UNSEEN, EMPTY = 0, 1
# codes 2..7 white P N B R Q K, 8..13 black P N B R Q K
N_CODES = 14
PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}

_IGNORED_STATUS = (
    chess.STATUS_OPPOSITE_CHECK  # the side to move may capture the king: legal in FoW
    | chess.STATUS_TOO_MANY_CHECKERS
    | chess.STATUS_IMPOSSIBLE_CHECK
    | chess.STATUS_RACE_CHECK
)


class IllegalMoveError(ValueError):
    """A move that is malformed or not pseudo-legal in the current position."""


class BeliefOverflowError(RuntimeError):
    """A belief set grew past its cap while the belief was told to raise instead of sample."""


def parse_fen(fen: str) -> chess.Board:
    """A ``chess.Board`` from ``fen``, checked to be a valid FoW position (one king per side,
    no pawns on the back ranks, ...); the side to move may attack the enemy king."""
    if not isinstance(fen, str):
        raise TypeError(f"fen must be a string, got {type(fen).__name__}")
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise ValueError(f"fen is not a valid FEN: {exc}") from None
    status = board.status() & ~_IGNORED_STATUS
    if status != chess.STATUS_VALID:
        names = [n for n in dir(chess) if n.startswith("STATUS_") and getattr(chess, n) & status]
        raise ValueError(f"fen is not a valid position ({', '.join(sorted(names))}): {fen!r}")
    return board


def fow_castling_moves(board: chess.Board) -> list[chess.Move]:
    """Castling under FoW rules: unmoved king and rook, empty squares between, no attack test
    (python-chess's own generator refuses castling out of, through or into check)."""
    color = board.turn
    rank = 0 if color == chess.WHITE else 7
    king_sq = chess.square(4, rank)
    if not (board.kings & board.occupied_co[color] & chess.BB_SQUARES[king_sq]):
        return []
    moves = []
    rights = board.clean_castling_rights() & chess.BB_RANKS[rank]
    for rook_sq in chess.scan_forward(rights & board.rooks & board.occupied_co[color]):
        file = chess.square_file(rook_sq)
        if file == 7:
            between, target = (5, 6), 6
        elif file == 0:
            between, target = (1, 2, 3), 2
        else:  # pragma: no cover - standard chess only
            continue
        if any(board.piece_at(chess.square(f, rank)) for f in between):
            continue
        moves.append(chess.Move(king_sq, chess.square(target, rank)))
    return moves


def _check_board(board, name: str = "board") -> chess.Board:
    if not isinstance(board, chess.Board):
        raise TypeError(f"{name} must be a chess.Board, got {type(board).__name__}")
    return board


def pseudo_legal_moves(board: chess.Board) -> list[chess.Move]:
    """Every FoW move of the side to move (king captures included, castling by FoW rules)."""
    _check_board(board)
    moves = [m for m in board.generate_pseudo_legal_moves() if not board.is_castling(m)]
    moves.extend(fow_castling_moves(board))
    return moves


def _pawn_targets(board: chess.Board, color: bool, pawn_sees_blocker: bool) -> int:
    pawns = board.pawns & board.occupied_co[color]
    empty = ~board.occupied & chess.BB_ALL
    if color == chess.WHITE:
        single = (pawns << 8) & chess.BB_ALL
        double = ((single & empty & chess.BB_RANK_3) << 8) & empty
    else:
        single = pawns >> 8
        double = ((single & empty & chess.BB_RANK_6) >> 8) & empty
    seen = (single if pawn_sees_blocker else single & empty) | double
    enemy = board.occupied_co[not color]
    if board.ep_square is not None and board.turn == color:
        enemy |= chess.BB_SQUARES[board.ep_square]
    for sq in chess.scan_forward(pawns):
        hits = chess.BB_PAWN_ATTACKS[color][sq] & enemy
        seen |= hits
        if board.ep_square is not None and hits & chess.BB_SQUARES[board.ep_square]:
            # the pawn that en passant would capture is seen (as in OpenSpiel's dark_chess)
            seen |= chess.BB_SQUARES[board.ep_square + (-8 if color == chess.WHITE else 8)]
    return seen


def visible_squares(board: chess.Board, color: bool, pawn_sees_blocker: bool = False) -> int:
    """Bitboard of the squares ``color`` sees: own pieces and destinations of its moves."""
    _check_board(board)
    color = V.check_bool(color, "color")
    own = board.occupied_co[color]
    seen = own | _pawn_targets(board, color, pawn_sees_blocker)
    for sq in chess.scan_forward(own & ~board.pawns):
        seen |= board.attacks_mask(sq) & ~own
    if board.turn == color:
        castles = fow_castling_moves(board)
    else:
        flipped = board.copy(stack=False)
        flipped.turn, flipped.ep_square = color, None
        castles = fow_castling_moves(flipped)
    for m in castles:
        seen |= chess.BB_SQUARES[m.to_square]
    return seen


def view_key(board: chess.Board, color: bool, pawn_sees_blocker: bool = False) -> tuple:
    """A hashable summary of what ``color`` sees (side to move, visible squares and the pieces
    on them, own castling rights): equal keys iff equal observations."""
    vis = visible_squares(board, color, pawn_sees_blocker)
    own_rank = chess.BB_RANK_1 if color == chess.WHITE else chess.BB_RANK_8
    return (
        board.turn,
        vis,
        board.pawns & vis,
        board.knights & vis,
        board.bishops & vis,
        board.rooks & vis,
        board.queens & vis,
        board.kings & vis,
        board.occupied_co[chess.WHITE] & vis,
        board.castling_rights & own_rank,
    )


def codes_from_key(key: tuple) -> np.ndarray:
    """The 8x8 code array (row = rank 1..8, column = file a..h) of a view key."""
    vis, white = key[1], key[8]
    codes = np.zeros(64, dtype=np.int8)
    for sq in chess.scan_forward(vis):
        codes[sq] = EMPTY
    for kind, bb in enumerate(key[2:8]):
        for sq in chess.scan_forward(bb):
            codes[sq] = 2 + kind + (0 if white & chess.BB_SQUARES[sq] else 6)
    return codes.reshape(8, 8)


@dataclass(frozen=True)
class Observation:
    """What one player sees after a ply: ``codes`` (8x8; 0 unseen, 1 empty, 2..13 pieces),
    whose turn it is, and ``key`` (hashable, equal iff the views are equal)."""

    color: bool
    turn: bool
    key: tuple
    ply: int

    @property
    def codes(self) -> np.ndarray:
        return codes_from_key(self.key)

    @property
    def visible(self) -> int:
        return self.key[1]

    def fog_string(self) -> str:
        """The view as a FEN-like board string, ``?`` for unseen squares (OpenSpiel style)."""
        symbols = "?." + "PNBRQK" + "pnbrqk"
        codes = self.codes
        rows = []
        for rank in range(7, -1, -1):
            row, empties = "", 0
            for file in range(8):
                c = int(codes[rank, file])
                if c == EMPTY:
                    empties += 1
                    continue
                if empties:
                    row, empties = row + str(empties), 0
                row += symbols[c]
            rows.append(row + (str(empties) if empties else ""))
        return "/".join(rows)

    def planes(self) -> np.ndarray:
        """(14, 8, 8) float32: 12 piece planes (white P..K, black P..K), unseen, to-move."""
        codes = self.codes
        out = np.zeros((N_CODES, 8, 8), dtype=np.float32)
        for c in range(2, N_CODES):
            out[c - 2] = codes == c
        out[12] = codes == UNSEEN
        out[13] = float(self.turn == self.color)
        return out


def material(board: chess.Board, color: bool) -> int:
    return sum(v * chess.popcount(board.pieces_mask(p, color)) for p, v in PIECE_VALUES.items())


def board_key(board: chess.Board) -> tuple:
    """Position identity without move counters (pieces, side, castling, en-passant)."""
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.turn,
        board.castling_rights,
        board.ep_square if board.has_pseudo_legal_en_passant() else None,
    )


def _as_move(move: chess.Move | str, name: str = "move") -> chess.Move:
    if isinstance(move, chess.Move):
        return move
    if isinstance(move, str):
        try:
            return chess.Move.from_uci(move.strip())
        except (ValueError, chess.InvalidMoveError):
            raise IllegalMoveError(f"{name} {move!r} is not a UCI move") from None
    raise TypeError(f"{name} must be a chess.Move or a UCI string, got {type(move).__name__}")


class FogOfWarChess:
    """A FoW chess game: ``legal_moves()``, ``step(move)``, ``observation(color)``,
    ``winner()``. ``max_plies`` ends the game by material adjudication (a lead of at least
    ``adjudicate`` pawns wins, else a draw); ``None`` plays on (50-move rule still applies)."""

    def __init__(
        self,
        fen: str | None = None,
        max_plies: int | None = None,
        adjudicate: float = 3.0,
        pawn_sees_blocker: bool = False,
    ) -> None:
        self.board = parse_fen(START_FEN if fen is None else fen)
        self.max_plies = V.check_int(max_plies, "max_plies", low=1, allow_none=True)
        self.adjudicate = V.check_scalar(adjudicate, "adjudicate", low=0.0, low_open=True)
        self.pawn_sees_blocker = V.check_bool(pawn_sees_blocker, "pawn_sees_blocker")
        self.start_fen = self.board.fen()
        self.moves: list[chess.Move] = []
        self.termination: str | None = None
        self._winner: bool | None = None
        self._legal: list[chess.Move] | None = None
        self._check_start()

    def _check_start(self) -> None:
        if not pseudo_legal_moves(self.board):
            self.termination = "no_moves"

    @property
    def turn(self) -> bool:
        return self.board.turn

    @property
    def ply(self) -> int:
        return len(self.moves)

    def copy(self) -> FogOfWarChess:
        new = object.__new__(FogOfWarChess)
        new.__dict__.update(self.__dict__)
        new.board = self.board.copy()
        new.moves = list(self.moves)
        return new

    def legal_moves(self) -> list[chess.Move]:
        if self.is_over():
            return []
        if self._legal is None:
            self._legal = pseudo_legal_moves(self.board)
        return list(self._legal)

    def is_over(self) -> bool:
        return self.termination is not None

    def winner(self) -> bool | None:
        """``chess.WHITE``/``chess.BLACK`` once decided, ``None`` for a draw or a live game."""
        return self._winner

    def result(self) -> str:
        if not self.is_over():
            return "*"
        if self._winner is None:
            return "1/2-1/2"
        return "1-0" if self._winner == chess.WHITE else "0-1"

    def step(self, move: chess.Move | str) -> FogOfWarChess:
        """Play ``move`` (a ``chess.Move`` or UCI); raises :class:`IllegalMoveError` when it is
        malformed or not pseudo-legal, ``RuntimeError`` once the game is over."""
        if self.is_over():
            raise RuntimeError(f"the game is over ({self.termination}); no move can be played")
        move = _as_move(move)
        if move not in self.legal_moves():
            raise IllegalMoveError(
                f"move {move.uci()} is not a pseudo-legal FoW move in {self.board.fen()}"
            )
        mover = self.board.turn
        captured = self.board.piece_type_at(move.to_square)
        self.board.push(move)
        self.moves.append(move)
        self._legal = None
        if captured == chess.KING:
            self.termination, self._winner = "king_capture", mover
        elif self.board.halfmove_clock >= 100:
            self.termination = "fifty_moves"
        elif self.max_plies is not None and self.ply >= self.max_plies:
            self.termination = "max_plies"
            lead = material(self.board, chess.WHITE) - material(self.board, chess.BLACK)
            if abs(lead) >= self.adjudicate:
                self._winner = chess.WHITE if lead > 0 else chess.BLACK
        elif not self.legal_moves():
            self.termination = "no_moves"
        return self

    def observation(self, color: bool) -> Observation:
        color = V.check_bool(color, "color")
        key = view_key(self.board, color, self.pawn_sees_blocker)
        return Observation(color, self.board.turn, key, self.ply)

    def pgn(self, white: str = "?", black: str = "?") -> str:
        """The game as PGN (SAN where python-chess can write it, UCI otherwise)."""
        board = parse_fen(self.start_fen)
        tokens = []
        for i, move in enumerate(self.moves):
            if board.turn == chess.WHITE:
                tokens.append(f"{board.fullmove_number}.")
            elif i == 0:
                tokens.append(f"{board.fullmove_number}...")
            try:
                tokens.append(board.san(move) if board.king(board.turn) is not None else move.uci())
            except Exception:  # a pseudo-legal move python-chess cannot write in SAN
                tokens.append(move.uci())
            board.push(move)
        headers = {
            "Event": "Fog of War chess",
            "Variant": "Fog of War",
            "White": white,
            "Black": black,
            "Result": self.result(),
            "Termination": self.termination or "unterminated",
        }
        if self.start_fen != START_FEN:
            headers.update(SetUp="1", FEN=self.start_fen)
        head = "\n".join(f'[{k} "{v}"]' for k, v in headers.items())
        return f"{head}\n\n{' '.join(tokens + [self.result()])}\n"


# ---------------------------------------------------------------- AlphaZero move encoding

_QUEEN_DIRS = [(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)]
_KNIGHT_DIRS = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]
_UNDER = [chess.KNIGHT, chess.BISHOP, chess.ROOK]
N_ACTIONS = 64 * 73


def encode_move(move: chess.Move, color: bool) -> int:
    """Index of ``move`` in the 4672-action AlphaZero encoding (8x8 from-square x 73 planes),
    from the mover's side (black's moves are mirrored)."""
    move = _as_move(move)
    f, t = move.from_square, move.to_square
    if color == chess.BLACK:
        f, t = chess.square_mirror(f), chess.square_mirror(t)
    df = chess.square_file(t) - chess.square_file(f)
    dr = chess.square_rank(t) - chess.square_rank(f)
    if move.promotion in _UNDER:
        if dr != 1 or abs(df) > 1:
            raise IllegalMoveError(f"move {move.uci()} is not a promotion step")
        plane = 64 + 3 * (df + 1) + _UNDER.index(move.promotion)
    elif (df, dr) in _KNIGHT_DIRS:
        plane = 56 + _KNIGHT_DIRS.index((df, dr))
    else:
        dist = max(abs(df), abs(dr))
        if dist == 0 or (df != 0 and dr != 0 and abs(df) != abs(dr)):
            raise IllegalMoveError(f"move {move.uci()} is not a chess move shape")
        direction = (int(np.sign(df)), int(np.sign(dr)))
        plane = 7 * _QUEEN_DIRS.index(direction) + dist - 1
    return f * 73 + plane


def decode_move(index: int, color: bool, board: chess.Board | None = None) -> chess.Move:
    """Inverse of :func:`encode_move` (a pawn reaching the last rank by a queen-plane move is a
    queen promotion when ``board`` shows a pawn on the from-square)."""
    index = V.check_int(index, "index", low=0, high=N_ACTIONS - 1)
    f, plane = divmod(index, 73)
    fr, ff = chess.square_rank(f), chess.square_file(f)
    promotion = None
    if plane >= 64:
        df, piece = divmod(plane - 64, 3)
        df, dr, promotion = df - 1, 1, _UNDER[piece]
    elif plane >= 56:
        df, dr = _KNIGHT_DIRS[plane - 56]
    else:
        d, dist = divmod(plane, 7)
        df, dr = (x * (dist + 1) for x in _QUEEN_DIRS[d])
    tr, tf = fr + dr, ff + df
    if not (0 <= tr < 8 and 0 <= tf < 8):
        raise IllegalMoveError(f"index {index} points off the board")
    t = chess.square(tf, tr)
    if color == chess.BLACK:
        f, t = chess.square_mirror(f), chess.square_mirror(t)
    if (
        promotion is None
        and board is not None
        and board.piece_type_at(f) == chess.PAWN
        and chess.square_rank(t) in (0, 7)
    ):
        promotion = chess.QUEEN
    return chess.Move(f, t, promotion)


# ---------------------------------------------------------------- belief tracking


class BeliefState:
    """The set P of positions consistent with ``color``'s observation history.

    After our move, every position plays it and keeps only those whose new view equals the
    one we got; after the opponent's unseen move, every position is expanded by all the
    opponent's moves and the children whose view for us equals the real one are kept
    (de-duplicated by position without move counters). When P would exceed ``max_size`` it
    is replaced by a uniform random subset of that size (``on_overflow="sample"``; the
    overflow is logged and counted in ``n_overflows`` / ``n_dropped``, ``exact`` turns False)
    or :class:`BeliefOverflowError` is raised (``"raise"``). If P empties after the cap dropped
    positions (the true position among them), it is re-seeded from random placements of the
    unseen enemy material consistent with the current view (``n_reseeds`` counts it). While
    nothing has been dropped (``exact``), P holds the true position, so an own move legal in
    none of its positions raises :class:`IllegalMoveError` and an observation that no position
    explains raises ``ValueError`` instead of re-seeding."""

    def __init__(
        self,
        color: bool,
        max_size: int = 256,
        fen: str | None = None,
        seed: int = 0,
        on_overflow: str = "sample",
        pawn_sees_blocker: bool = False,
    ) -> None:
        self.color = V.check_bool(color, "color")
        self.max_size = V.check_int(max_size, "max_size", low=1)
        self.on_overflow = V.check_choice(on_overflow, "on_overflow", ("sample", "raise"))
        self.pawn_sees_blocker = V.check_bool(pawn_sees_blocker, "pawn_sees_blocker")
        self.rng = random.Random(V.check_int(seed, "seed", low=0))
        board = parse_fen(START_FEN if fen is None else fen)
        self.positions: dict[tuple, chess.Board] = {board_key(board): board}
        self.exact = True
        self.n_overflows = 0
        self.n_dropped = 0
        self.n_reseeds = 0
        self.n_expanded = 0
        self.enemy_material = _material_counts(board, not color)

    def __len__(self) -> int:
        return len(self.positions)

    def boards(self) -> list[chess.Board]:
        return list(self.positions.values())

    def contains(self, board: chess.Board) -> bool:
        return board_key(board) in self.positions

    def sample(self, k: int, rng: random.Random | None = None) -> list[chess.Board]:
        k = V.check_int(k, "k", low=1)
        boards = self.boards()
        rng = rng or self.rng
        return boards if len(boards) <= k else rng.sample(boards, k)

    def _matches(self, board: chess.Board, obs: Observation) -> bool:
        return view_key(board, self.color, self.pawn_sees_blocker) == obs.key

    def _check_obs(self, obs: Observation) -> Observation:
        if not isinstance(obs, Observation):
            raise TypeError(f"observation must be an Observation, got {type(obs).__name__}")
        if obs.color != self.color:
            raise ValueError("observation belongs to the other player")
        return obs

    def observe_own_move(self, move: chess.Move | str, observation: Observation) -> None:
        move = _as_move(move)
        obs = self._check_obs(observation)
        kept, playable = {}, False
        for board in self.positions.values():
            if move not in pseudo_legal_moves(board):
                continue
            playable = True
            child = board.copy(stack=False)
            if child.piece_type_at(move.to_square) == chess.KING:
                continue  # the game would be over
            child.push(move)
            if self._matches(child, obs):
                kept[board_key(child)] = child
        if not playable and self.exact:
            # an exact belief holds the true position, where our own move must be legal
            raise IllegalMoveError(
                f"move {move.uci()} is not a pseudo-legal move in any of the {len(self)} "
                "positions of the belief"
            )
        self._set(kept, obs)

    def observe_opponent_move(self, observation: Observation) -> None:
        obs = self._check_obs(observation)
        kept = {}
        for board in self.positions.values():
            for move in pseudo_legal_moves(board):
                if board.piece_type_at(move.to_square) == chess.KING:
                    continue
                child = board.copy(stack=False)
                child.push(move)
                self.n_expanded += 1
                if self._matches(child, obs):
                    kept.setdefault(board_key(child), child)
        self._set(kept, obs)

    def _set(self, kept: dict, obs: Observation) -> None:
        if len(kept) > self.max_size:
            if self.on_overflow == "raise":
                raise BeliefOverflowError(
                    f"belief size {len(kept)} exceeds max_size={self.max_size}"
                )
            keys = self.rng.sample(sorted(kept, key=repr), self.max_size)
            self.n_overflows += 1
            self.n_dropped += len(kept) - self.max_size
            self.exact = False
            log.info("belief overflow: %d positions, kept a uniform %d", len(kept), self.max_size)
            kept = {k: kept[k] for k in keys}
        if not kept and self.exact:
            # nothing was dropped, so the true position was in P: the inputs disagree
            raise ValueError(
                "observation is inconsistent with every position of the belief (an exact "
                "belief keeps the true position): wrong move, wrong observation or a missed ply"
            )
        if not kept:
            kept = self._reseed(obs)
        else:
            self.enemy_material = _material_counts(next(iter(kept.values())), not self.color)
        self.positions = kept

    def _reseed(self, obs: Observation, attempts: int = 2000) -> dict:
        """Approximate re-seeding: place the enemy material not in view on unseen squares."""
        self.n_reseeds += 1
        self.exact = False
        log.warning("belief emptied (true position dropped by the cap); re-seeding")
        base = chess.Board(None)
        codes = obs.codes.reshape(-1)
        symbols = "PNBRQKpnbrqk"
        for sq in range(64):
            if codes[sq] >= 2:
                base.set_piece_at(sq, chess.Piece.from_symbol(symbols[codes[sq] - 2]))
        base.turn = obs.turn
        rank = 0 if self.color == chess.WHITE else 7
        base.castling_rights = obs.key[9] & chess.BB_RANKS[rank]
        enemy = not self.color
        seen = _material_counts(base, enemy)
        missing = [p for p, n in self.enemy_material.items() for _ in range(max(0, n - seen[p]))]
        unseen = [sq for sq in range(64) if codes[sq] == UNSEEN]
        out = {}
        for _ in range(attempts):
            board = base.copy()
            free = list(unseen)
            self.rng.shuffle(free)
            for piece in missing:
                spots = [
                    s for s in free if piece != chess.PAWN or chess.square_rank(s) not in (0, 7)
                ]
                if not spots:
                    break
                board.set_piece_at(spots[0], chess.Piece(piece, enemy))
                free.remove(spots[0])
            if board.king(enemy) is None or board.king(self.color) is None:
                continue
            if self._matches(board, obs):
                out[board_key(board)] = board
                if len(out) >= min(self.max_size, 32):
                    break
        if not out:
            raise RuntimeError("belief could not be re-seeded from the current observation")
        return out


def _material_counts(board: chess.Board, color: bool) -> dict[int, int]:
    return {p: chess.popcount(board.pieces_mask(p, color)) for p in chess.PIECE_TYPES}


def random_game(
    n_plies: int, seed: int = 0, fen: str | None = None
) -> tuple[FogOfWarChess, list[chess.Move]]:
    """A game of ``n_plies`` uniformly random FoW moves (fewer if it ends)."""
    n_plies = V.check_int(n_plies, "n_plies", low=0)
    rng = random.Random(V.check_int(seed, "seed", low=0))
    game = FogOfWarChess(fen)
    for _ in range(n_plies):
        if game.is_over():
            break
        game.step(rng.choice(game.legal_moves()))
    return game, list(game.moves)


def moves_from(items: Iterable[chess.Move | str]) -> list[chess.Move]:
    return [_as_move(m, "legal_moves") for m in items]


def __getattr__(name: str):
    # the PettingZoo front-end lives in .env (which imports this module); reachable from here
    # too, as `from iclr26.rl.obscuro.fow_chess import fow_chess_env`
    if name in ("fow_chess_env", "FoWChessEnv"):
        from . import env

        return getattr(env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
