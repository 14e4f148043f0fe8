"""A PettingZoo AEC environment for FoW chess, in the style of PettingZoo's classic chess.

Agents ``player_0`` (white) and ``player_1`` (black) observe a dict: ``observation``, the
player's fog view as (8, 8, 14) planes (12 piece planes, unseen, to-move; channels last as
in PettingZoo's chess), and ``action_mask`` over the 4672-move AlphaZero encoding. The step's
``info`` holds the UCI of the legal moves. Reward +1 / -1 for the king capture (or material
adjudication at the ply cap), 0 for a draw.

:class:`FoWChessEnv` is the raw environment: it also takes a UCI string as the action and
raises :class:`IllegalMoveError` for a move that is not legal. :func:`fow_chess_env` wraps it
the way PettingZoo wraps its classic games (an illegal action ends the game with reward -1
for the player who chose it, out-of-range actions are refused, the call order is enforced)."""

from __future__ import annotations

import chess
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from iclr26 import validation as V

from .fow_chess import (
    N_ACTIONS,
    FogOfWarChess,
    IllegalMoveError,
    _as_move,
    decode_move,
    encode_move,
)


class FoWChessEnv(AECEnv):
    metadata = {
        "render_modes": ["human", "ansi"],
        "name": "fow_chess_v0",
        "is_parallelizable": False,
    }

    def __init__(
        self, fen: str | None = None, max_plies: int | None = 300, render_mode: str | None = None
    ) -> None:
        super().__init__()
        self.fen = fen
        FogOfWarChess(fen)  # validate the FEN now
        self.max_plies = V.check_int(max_plies, "max_plies", low=1, allow_none=True)
        if render_mode is not None:
            V.check_choice(render_mode, "render_mode", tuple(self.metadata["render_modes"]))
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
            move = _as_move(action, "action")
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
        """The true board (``"ansi"`` returns it, ``"human"`` prints it)."""
        if self.render_mode == "ansi":
            return str(self.game.board)
        if self.render_mode == "human":
            print(self.game.board, end="\n\n")
        return None

    def close(self) -> None:
        pass


def fow_chess_env(illegal_reward: float = -1.0, **kwargs) -> AECEnv:
    """A :class:`FoWChessEnv` (keyword arguments passed through) inside PettingZoo's standard
    wrappers for classic games: an illegal action ends the game with ``illegal_reward`` for the
    player who chose it, an action outside the action space is refused, and ``reset`` must come
    first. Integer actions only; the raw env also takes UCI strings."""
    illegal_reward = V.check_scalar(illegal_reward, "illegal_reward")
    env = wrappers.TerminateIllegalWrapper(FoWChessEnv(**kwargs), illegal_reward=illegal_reward)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


class FoWChessGymEnv(gym.Env):
    """Single-agent Gymnasium view of FoW chess: the learner plays ``color`` against a fixed
    ``opponent`` agent (an :class:`~iclr26.rl.obscuro.agents.Agent`, a name such as
    ``"random"`` or ``(name, kwargs)``). Observation and action are those of
    :class:`FoWChessEnv`; an illegal action ends the episode with ``illegal_reward``, the ply
    cap truncates it (reward by material adjudication). ``reset(seed=...)`` reseeds the
    opponent, so episodes are reproducible."""

    metadata = {"render_modes": ["human", "ansi"], "render_fps": 1}

    def __init__(
        self,
        opponent="random",
        color: bool = chess.WHITE,
        fen: str | None = None,
        max_plies: int | None = 300,
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
    ) -> None:
        from .agents import make_agent

        self.opponent = make_agent(opponent)
        self.color = V.check_bool(color, "color")
        self.fen = fen
        FogOfWarChess(fen)  # validate the FEN now
        self.max_plies = V.check_int(max_plies, "max_plies", low=1, allow_none=True)
        self.illegal_reward = V.check_scalar(illegal_reward, "illegal_reward")
        if render_mode is not None:
            V.check_choice(render_mode, "render_mode", tuple(self.metadata["render_modes"]))
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 1, (8, 8, 14), dtype=bool),
                "action_mask": spaces.Box(0, 1, (N_ACTIONS,), dtype=np.int8),
            }
        )
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.game: FogOfWarChess | None = None

    def _obs(self) -> dict:
        planes = self.game.observation(self.color).planes()
        mask = np.zeros(N_ACTIONS, dtype=np.int8)
        if self.game.turn == self.color:
            for m in self.game.legal_moves():
                mask[encode_move(m, self.color)] = 1
        return {"observation": np.moveaxis(planes, 0, -1).astype(bool), "action_mask": mask}

    def _info(self) -> dict:
        legal = self.game.legal_moves() if self.game.turn == self.color else []
        return {"legal_moves": [m.uci() for m in legal], "termination": self.game.termination}

    def _reward(self) -> float:
        winner = self.game.winner()
        return 0.0 if winner is None else (1.0 if winner == self.color else -1.0)

    def _opponent_move(self) -> None:
        move = self.opponent.act(self.game.observation(not self.color), self.game.legal_moves())
        self.game.step(move)
        if not self.game.is_over():
            self.opponent.observe(self.game.observation(not self.color), move)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.opponent.seed = V.check_int(seed, "seed", low=0)
        self.game = FogOfWarChess(self.fen, max_plies=self.max_plies)
        self.opponent.reset(not self.color, self.fen)
        if self.game.turn != self.color and not self.game.is_over():
            self._opponent_move()
        return self._obs(), self._info()

    def step(self, action):
        if self.game is None:
            raise RuntimeError("reset() must be called before step()")
        if self.game.is_over():
            raise RuntimeError("the episode is over; call reset()")
        index = V.check_int(action, "action", low=0, high=N_ACTIONS - 1)
        try:
            move = decode_move(index, self.color, self.game.board)
        except IllegalMoveError:  # an index of the action space that points off the board
            move = None
        if move is None or move not in self.game.legal_moves():
            self.game.termination, self.game._winner = "illegal_move", not self.color
            info = {**self._info(), "illegal_action": index}
            return self._obs(), float(self.illegal_reward), True, False, info
        self.game.step(move)
        if not self.game.is_over():
            self.opponent.observe(self.game.observation(not self.color), None)
            self._opponent_move()
        done = self.game.is_over()
        truncated = self.game.termination == "max_plies"
        reward = self._reward() if done else 0.0
        return self._obs(), reward, done and not truncated, truncated, self._info()

    def render(self):
        """The true board (``"ansi"`` returns it, ``"human"`` prints it)."""
        if self.render_mode == "ansi":
            return str(self.game.board)
        if self.render_mode == "human":
            print(self.game.board, end="\n\n")
        return None


GYM_ID = "iclr26/FoWChess-v0"
if GYM_ID not in gym.registry:  # `gymnasium.make("iclr26/FoWChess-v0", opponent="greedy")`
    gym.register(GYM_ID, entry_point=FoWChessGymEnv)
