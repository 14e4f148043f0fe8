"""Gymnasium environments for CVaR control with exact transition tables.

Importing this module registers ``iclr26/CVaRDecisionTree-v0`` and
``iclr26/RiskyGridWorld-v0``. Both are finite episodic MDPs with integer rewards whose
table (``env.unwrapped.table``) the exact solvers and the vectorised learners read.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from iclr26 import validation as V

from .tables import EpisodicTable

TREE_NODES = 7  # heap-indexed decision nodes 0..6; state 7 is the absorbing end
# (node, action) -> [(probability, reward)]; nodes 3..6 are leaves
TREE_REWARDS: dict[tuple[int, int], list[tuple[float, int]]] = {
    (0, 0): [(1.0, 0)],  # enter the cautious subtree
    (0, 1): [(0.5, 6), (0.5, -1)],  # an early gamble
    (1, 0): [(1.0, 0)],
    (1, 1): [(1.0, 0)],
    (2, 0): [(1.0, 0)],
    (2, 1): [(1.0, 0)],
    (3, 0): [(1.0, 0)],  # the always-safe leaf
    (3, 1): [(0.9, 10), (0.1, -40)],
    (4, 0): [(0.5, 2), (0.5, -2)],
    (4, 1): [(0.8, 5), (0.2, -10)],
    (5, 0): [(1.0, 2)],
    (5, 1): [(0.9, 10), (0.1, -40)],
    (6, 0): [(1.0, 1)],
    (6, 1): [(0.9, 4), (0.1, -2)],
}


def decision_tree_table() -> EpisodicTable:
    """Depth-3 binary decision tree: risk-neutral and CVaR-optimal policies differ, and the
    CVaR-optimal choice after the early gamble depends on its outcome (the budget)."""
    S, A = TREE_NODES + 1, 2
    K = max(len(v) for v in TREE_REWARDS.values())
    prob = np.zeros((S, A, K))
    nxt = np.full((S, A, K), TREE_NODES)
    rew = np.zeros((S, A, K))
    term = np.ones((S, A, K), dtype=bool)
    for (node, a), outcomes in TREE_REWARDS.items():
        for k, (p, r) in enumerate(outcomes):
            prob[node, a, k], rew[node, a, k] = p, r
            if node < 3:
                nxt[node, a, k], term[node, a, k] = 2 * node + 1 + a, False
        if node < 3:
            nxt[node, a, len(outcomes) :] = 2 * node + 1 + a
    prob[TREE_NODES, :, 0] = 1.0  # the end state loops (never reached before termination)
    return EpisodicTable(prob, nxt, rew, term, start_state=0, horizon=3, name="decision-tree")


GRID_MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])  # up, right, down, left


def risky_grid_table(
    wind_prob: float = 0.02,
    rows: int = 5,
    cols: int = 7,
    lava_penalty: int = 20,
    horizon: int = 40,
) -> EpisodicTable:
    """Grid world: start bottom-left, goal bottom-right, lava on the bottom row between
    them. After each move, with probability ``wind_prob`` the agent is pushed one cell down.
    Reward -1 per step, -lava_penalty on entering lava (terminal), 0 on reaching the goal.
    With the defaults the risk-neutral optimal path hugs the lava while the CVaR_0.1-optimal
    one detours (with wind 0.1 and penalty 30 both policies detour and coincide)."""
    wind_prob = V.check_scalar(wind_prob, "wind_prob", low=0.0, high=1.0, high_open=True)
    rows = V.check_int(rows, "rows", low=2)
    cols = V.check_int(cols, "cols", low=3)
    lava_penalty = V.check_scalar(lava_penalty, "lava_penalty")
    horizon = V.check_int(horizon, "horizon", low=1)
    S, A = rows * cols, 4
    start, goal = (rows - 1) * cols, rows * cols - 1
    lava = {(rows - 1) * cols + c for c in range(1, cols - 1)}
    prob = np.zeros((S, A, 2))
    nxt = np.zeros((S, A, 2), dtype=np.int64)
    rew = np.zeros((S, A, 2))
    term = np.zeros((S, A, 2), dtype=bool)
    for s in range(S):
        r0, c0 = divmod(s, cols)
        for a in range(A):
            if s in lava or s == goal:  # terminal cells loop (never stepped from)
                prob[s, a] = (1.0, 0.0)
                nxt[s, a], term[s, a] = s, True
                continue
            r1 = min(max(r0 + GRID_MOVES[a, 0], 0), rows - 1)
            c1 = min(max(c0 + GRID_MOVES[a, 1], 0), cols - 1)
            moved = r1 * cols + c1
            pushed = moved if moved in lava or moved == goal else min(r1 + 1, rows - 1) * cols + c1
            for k, (p, cell) in enumerate(((1.0 - wind_prob, moved), (wind_prob, pushed))):
                prob[s, a, k], nxt[s, a, k] = p, cell
                term[s, a, k] = cell in lava or cell == goal
                rew[s, a, k] = -lava_penalty if cell in lava else (0 if cell == goal else -1)
    return EpisodicTable(
        prob, nxt, rew, term, start_state=start, horizon=horizon, name="risky-grid"
    )


class TabularEpisodicEnv(gym.Env):
    """A Gymnasium env that samples from an :class:`EpisodicTable` (Discrete obs/actions).

    Truncation at the table's horizon is done here so the unwrapped env is complete; the
    registered ids also carry ``max_episode_steps``.
    """

    metadata = {"render_modes": []}

    def __init__(self, table: EpisodicTable):
        if not isinstance(table, EpisodicTable):
            raise TypeError(f"table must be an EpisodicTable, got {type(table).__name__}")
        self.table = table
        self.observation_space = spaces.Discrete(table.n_states)
        self.action_space = spaces.Discrete(table.n_actions)
        self._cum = np.cumsum(table.prob, axis=-1)
        self._state = table.start_state
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._state, self._t = self.table.start_state, 0
        return int(self._state), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be in {self.action_space}, got {action!r}")
        s, a = self._state, int(action)
        k = int(np.searchsorted(self._cum[s, a], self.np_random.random(), side="right"))
        k = min(k, self._cum.shape[-1] - 1)
        self._state = int(self.table.next_state[s, a, k])
        self._t += 1
        terminated = bool(self.table.terminal[s, a, k])
        truncated = not terminated and self._t >= self.table.horizon
        return self._state, float(self.table.reward[s, a, k]), terminated, truncated, {}


class CVaRDecisionTreeEnv(TabularEpisodicEnv):
    def __init__(self):
        super().__init__(decision_tree_table())


class RiskyGridWorldEnv(TabularEpisodicEnv):
    def __init__(
        self,
        wind_prob: float = 0.02,
        rows: int = 5,
        cols: int = 7,
        lava_penalty: int = 20,
        horizon: int = 40,
    ):
        super().__init__(risky_grid_table(wind_prob, rows, cols, lava_penalty, horizon))


# wrappers that leave an env's dynamics as its table describes them (the ones gym.make adds);
# TimeLimit may shorten the horizon, which the tabular code honours
PASSIVE_WRAPPERS = (
    gym.wrappers.PassiveEnvChecker,
    gym.wrappers.OrderEnforcing,
    gym.wrappers.TimeLimit,
)


def table_behind(env: gym.Env) -> tuple[EpisodicTable, int | None]:
    """The outcome table of an env of this module and the shortest ``TimeLimit`` around it.

    Wrappers other than :data:`PASSIVE_WRAPPERS` may change observations, actions, rewards
    or termination in ways a table cannot express, so they are refused (``TypeError``
    naming them) instead of being silently bypassed."""
    if not isinstance(env, gym.Env):
        raise TypeError(f"env must be a gymnasium.Env, got {type(env).__name__}")
    limit, foreign, layer = None, [], env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, gym.wrappers.TimeLimit):
            steps = getattr(layer, "_max_episode_steps", None)
            if steps is not None:
                limit = int(steps) if limit is None else min(limit, int(steps))
        elif not isinstance(layer, PASSIVE_WRAPPERS):
            foreign.append(type(layer).__name__)
        layer = layer.env
    table = getattr(layer, "table", None)
    if not isinstance(table, EpisodicTable):
        raise TypeError(
            "env must expose its outcome table as env.unwrapped.table (an EpisodicTable), "
            f"e.g. the iclr26/ envs of this module; {type(layer).__name__} has none"
        )
    if foreign:
        raise TypeError(
            f"env is wrapped by {', '.join(foreign)}: the tabular code samples from "
            "env.unwrapped.table and would silently bypass these wrappers; pass the env "
            "without them (only PassiveEnvChecker, OrderEnforcing and TimeLimit are honoured)"
        )
    return table, limit


class BudgetAugmentedWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Exposes (state, remaining budget eta) as the observation; eta <- eta - reward.

    The budget starts at ``eta0`` on every reset, or at ``options["eta0"]`` when a reset
    passes one. Around an env of this module (any wrappers in between) the budget's
    observation box is finite: [eta0 - G_max, eta0 - G_min] with the table's return range,
    which every partial sum of rewards within the horizon respects; around other envs it is
    unbounded.
    """

    def __init__(self, env: gym.Env, eta0: float):
        if not isinstance(env, gym.Env):
            raise TypeError(f"env must be a gymnasium.Env, got {type(env).__name__}")
        eta0 = V.check_scalar(eta0, "eta0")
        gym.utils.RecordConstructorArgs.__init__(self, eta0=eta0)
        gym.Wrapper.__init__(self, env)
        self.eta0 = eta0
        self.eta = self.eta0
        try:
            table, _ = table_behind(env)
            self._range = table.return_range()
        except TypeError:  # not a table env, or wrappers that may change the rewards
            self._range = None
        self.observation_space = spaces.Tuple(
            (env.observation_space, self._budget_space(self.eta0))
        )
        self._space_eta0 = self.eta0

    def _budget_space(self, eta0: float) -> spaces.Box:
        if self._range is None:
            return spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
        g_lo, g_hi = self._range
        return spaces.Box(eta0 - g_hi, eta0 - g_lo, shape=(1,), dtype=np.float64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        eta0 = self.eta0
        if options is not None and "eta0" in options:
            eta0 = V.check_scalar(options["eta0"], "options['eta0']")
            options = {k: v for k, v in options.items() if k != "eta0"} or None
        if eta0 != self._space_eta0:  # the budget box follows the episode's initial budget
            self.observation_space = spaces.Tuple(
                (self.env.observation_space, self._budget_space(eta0))
            )
            self._space_eta0 = eta0
        obs, info = self.env.reset(seed=seed, options=options)
        self.eta = eta0
        return (obs, np.array([self.eta])), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.eta -= reward
        return (obs, np.array([self.eta])), reward, terminated, truncated, info


def _register() -> None:
    for env_id, entry, steps in (
        ("iclr26/CVaRDecisionTree-v0", "iclr26.rl.cvar_qlearning.envs:CVaRDecisionTreeEnv", 3),
        ("iclr26/RiskyGridWorld-v0", "iclr26.rl.cvar_qlearning.envs:RiskyGridWorldEnv", 40),
    ):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, max_episode_steps=steps)


_register()
