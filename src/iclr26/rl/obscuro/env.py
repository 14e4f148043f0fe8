"""A PettingZoo AEC environment for FoW chess, in the style of PettingZoo's classic chess.

Agents ``player_0`` (white) and ``player_1`` (black) observe a dict: ``observation``, the
player's fog view as (8, 8, 14) planes (12 piece planes, unseen, to-move; channels last as
in PettingZoo's chess), and ``action_mask`` over the 4672-move AlphaZero encoding. The step's
``info`` holds the UCI of the legal moves. Reward +1 / -1 for the king capture (or material
adjudication at the ply cap), 0 for a draw."""

from __future__ import annotations

import chess
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from iclr26 import validation as V

from .fow_chess import N_ACTIONS, FogOfWarChess, IllegalMoveError, decode_move, encode_move


class FoWChessEnv(AECEnv):
    metadata = {"render_modes": ["ansi"], "name": "fow_chess_v0", "is_parallelizable": False}

    def __init__(
        self, fen: str | None = None, max_plies: int | None = 300, render_mode: str | None = None
    ) -> None:
        super().__init__()
        self.fen = fen
        FogOfWarChess(fen)  # validate the FEN now
        self.max_plies = V.check_int(max_plies, "max_plies", low=1, allow_none=True)
        if render_mode is not None:
            V.check_choice(render_mode, "render_mode", ("ansi",))
        self.render_mode = render_mode
        self.possible_agents = ["player_0", "player_1"]
        self._color = {"player_0": chess.WHITE, "player_1": chess.BLACK}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 1, (8, 8, 14), dtype=bool),
                "action_mask": spaces.Box(0, 1, (N_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in self.possible_agents}

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def _mask(self, agent: str) -> np.ndarray:
        mask = np.zeros(N_ACTIONS, dtype=np.int8)
        if agent == self.agent_selection and not self.game.is_over():
            for m in self.game.legal_moves():
                mask[encode_move(m, self._color[agent])] = 1
        return mask

    def observe(self, agent: str) -> dict:
        planes = self.game.observation(self._color[agent]).planes()
        return {
            "observation": np.moveaxis(planes, 0, -1).astype(bool),
            "action_mask": self._mask(agent),
        }

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.game = FogOfWarChess(self.fen, max_plies=self.max_plies)
        self.agents = self.possible_agents[:]
        self.agent_selection = "player_0" if self.game.turn == chess.WHITE else "player_1"
        self.rewards = {a: 0 for a in self.agents}
        self._cumulative_rewards = {a: 0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._set_info()

    def _set_info(self) -> None:
        for a in self.agents:
            legal = self.game.legal_moves() if a == self.agent_selection else []
            self.infos[a] = {"legal_moves": [m.uci() for m in legal]}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if isinstance(action, str):
            move = chess.Move.from_uci(action) if len(action) in (4, 5) else None
            if move is None:
                raise IllegalMoveError(f"action {action!r} is not a UCI move")
        else:
            index = V.check_int(action, "action", low=0, high=N_ACTIONS - 1)
            move = decode_move(index, self._color[agent], self.game.board)
        self.game.step(move)
        self._clear_rewards()
        if self.game.is_over():
            winner = self.game.winner()
            for a in self.agents:
                if winner is not None:
                    self.rewards[a] = 1 if self._color[a] == winner else -1
                self.terminations[a] = self.game.termination != "max_plies"
                self.truncations[a] = self.game.termination == "max_plies"
        self.agent_selection = "player_0" if self.game.turn == chess.WHITE else "player_1"
        self._accumulate_rewards()
        self._set_info()

    def render(self):
        if self.render_mode == "ansi":
            return str(self.game.board)
        return None

    def close(self) -> None:
        pass


def fow_chess_env(**kwargs) -> FoWChessEnv:
    """A :class:`FoWChessEnv` (keyword arguments passed through)."""
    return FoWChessEnv(**kwargs)
