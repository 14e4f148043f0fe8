"""The Markov games of the claim checks, generated in code.

``DominantCoordinationGame``: an exogenous two-state chain z and a private position x_i on a
line of L cells per agent, moved only by a_i (left, stay, right; the move fails with a small
probability). r_i = f_i(z, x_i, a_i) + g_i(z): nothing agent i gets depends on the others, so its
single-agent optimal policy is a best response to anything -- a dominant-strategy
equilibrium -- while policies observe the full state, so the others' behaviour still shifts
which states (and so which cloned decisions) agent i meets.
``TriggerGame``: a repeated prisoner's dilemma with an absorbing Punish state that grim
trigger never visits in equilibrium, so demonstrations say nothing about it.
``TagGame``: pursuit-evasion on a torus with one (zero-sum) or two pursuers.
"""

from __future__ import annotations

import itertools

import numpy as np

from iclr26 import validation as V

from .game import TabularMarkovGame

MAX_TABLE_ENTRIES = 20_000_000


def _check_table_size(names: str, states: int, joint: int, outcomes: int) -> None:
    """Refuse games whose outcome table would not fit in memory comfortably."""
    size = states * joint * outcomes
    if size > MAX_TABLE_ENTRIES:
        raise ValueError(
            f"{names} give {states} states x {joint} joint actions x {outcomes} outcomes "
            f"= {size} table entries; at most {MAX_TABLE_ENTRIES} are allowed"
        )


class DominantCoordinationGame(TabularMarkovGame):
    """n agents on lines of L cells with a shared exogenous state z in {0, 1}."""

    def __init__(
        self,
        n_agents: int = 3,
        L: int = 4,
        gamma: float = 0.9,
        seed: int = 0,
        z_switch: float = 0.2,
        slip: float = 0.1,
        shared_weight: float = 0.5,
    ):
        n_agents = V.check_int(n_agents, "n_agents", low=1)
        L = V.check_int(L, "L", low=2)
        _check_table_size("n_agents and L", 2 * L**n_agents, 3**n_agents, 2 ** (1 + n_agents))
        gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
        seed = V.check_int(seed, "seed", low=0, allow_none=True)
        z_switch = V.check_probability(z_switch, "z_switch")
        slip = V.check_probability(slip, "slip")
        others_weight = V.check_scalar(shared_weight, "shared_weight")
        rng = np.random.default_rng(seed)
        n, A = int(n_agents), 3
        self.L, self.n_cells = int(L), int(L)
        # states: (z, x_1, ..., x_n) in mixed radix
        grid = np.array(list(itertools.product(range(2), *[range(L)] * n)))  # [S, 1 + n]
        S = grid.shape[0]
        joint = np.array(list(itertools.product(range(A), repeat=n)))  # [J, n]
        J = joint.shape[0]
        self.own_reward = rng.random((n, 2, L, A))  # f_i(z, x_i, a_i)
        self.state_table = grid
        z, x = grid[:, 0], grid[:, 1:]
        # g_i(z): a shared exogenous payoff. A term in x_-i would break dominance, because
        # opponents who condition on x_i could then be steered through agent i's moves.
        self.shared_reward = others_weight * rng.random((n, 2))
        g = self.shared_reward[:, z].T  # [S, n]
        f = self.own_reward[
            np.arange(n)[None, None, :], z[:, None, None], x[:, None, :], joint[None, :, :]
        ]  # [S, J, n]
        reward = np.moveaxis(f + g[:, None, :], -1, 0)
        # outcomes: z' (2) x each agent moves or slips (2^n)
        outcomes = np.array(list(itertools.product(range(2), *[range(2)] * n)))  # [O, 1 + n]
        target = np.clip(x[:, None, :] + joint[None, :, :] - 1, 0, L - 1)  # [S, J, n]
        z_prob = np.where(outcomes[:, 0][None, :] == z[:, None], 1 - z_switch, z_switch)
        moved = outcomes[:, 1:]  # 0 = move succeeds, 1 = slip (stay)
        x_next = np.where(moved[None, None] == 0, target[:, :, None, :], x[:, None, None, :])
        move_prob = np.where(moved == 0, 1 - slip, slip).prod(-1)  # [O]
        prob = np.broadcast_to(z_prob[:, None, :] * move_prob[None, None, :], (S, J, len(outcomes)))
        z_next = np.broadcast_to(outcomes[:, 0][None, None, :], prob.shape)
        digits = np.concatenate([z_next[..., None], x_next], axis=-1)
        next_state = np.ravel_multi_index(tuple(np.moveaxis(digits, -1, 0)), (2, *[L] * n))
        rho = np.zeros(S)
        rho[np.ravel_multi_index((0, *[0] * n), (2, *[L] * n))] = 0.5
        rho[np.ravel_multi_index((1, *[0] * n), (2, *[L] * n))] = 0.5
        super().__init__(
            [A] * n, prob, next_state, reward, gamma, rho, name=f"dominant-coordination-n{n}"
        )
        self.z_switch, self.slip = z_switch, slip

    def expert_policy(self) -> tuple[np.ndarray, ...]:
        """Each agent's optimal policy of its own (z, x_i) MDP, lifted to the full state."""
        L, A = self.L, 3
        z_p = np.array([[1 - self.z_switch, self.z_switch], [self.z_switch, 1 - self.z_switch]])
        policies = []
        for i in range(self.n_agents):
            v = np.zeros((2, L))
            x = np.arange(L)
            for _ in range(10_000):
                target = np.clip(x[:, None] + np.arange(A)[None, :] - 1, 0, L - 1)  # [L, A]
                ev = z_p @ v  # E over z' of v[z', .] -> [2, L]
                cont = (1 - self.slip) * ev[:, target] + self.slip * ev[:, x][:, :, None]
                q = self.own_reward[i] + self.gamma * cont  # [2, L, A]
                v_new = q.max(-1)
                if np.max(np.abs(v_new - v)) < 1e-12:
                    break
                v = v_new
            best = q.argmax(-1)  # [2, L]
            s_z, s_x = self.state_table[:, 0], self.state_table[:, 1 + i]
            policies.append(np.eye(A)[best[s_z, s_x]])
        return tuple(policies)


class TriggerGame(TabularMarkovGame):
    """Two players, states Coop (0) and Punish (1, absorbing), actions C (0) and D (1), the
    same prisoner's-dilemma stage game in both; any defection in Coop moves to Punish."""

    def __init__(
        self, T: float = 5.0, R: float = 2.5, P: float = 0.0, S: float = -1.0, gamma: float = 0.9
    ):
        T, R = V.check_scalar(T, "T"), V.check_scalar(R, "R")
        P, S = V.check_scalar(P, "P"), V.check_scalar(S, "S")
        gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
        if not (T > R > P > S):
            raise ValueError(f"T, R, P, S must satisfy T > R > P > S, got {(T, R, P, S)}")
        if R / (1 - gamma) < T + gamma * P / (1 - gamma):
            raise ValueError("grim trigger is not a Nash equilibrium for these payoffs")
        stage = np.array([[[R, S], [T, P]], [[R, T], [S, P]]])  # [player, a_0, a_1]
        reward = np.stack([np.broadcast_to(stage[i].ravel(), (2, 4)) for i in range(2)])
        next_state = np.array([[0, 1, 1, 1], [1, 1, 1, 1]])[..., None]
        prob = np.ones((2, 4, 1))
        super().__init__(
            [2, 2], prob, next_state, reward, gamma, np.array([1.0, 0.0]), name="trigger"
        )
        self.payoffs = {"T": T, "R": R, "P": P, "S": S}

    def expert_policy(self) -> tuple[np.ndarray, ...]:
        """Grim trigger: cooperate in Coop, defect in Punish."""
        grim = np.array([[1.0, 0.0], [0.0, 1.0]])
        return grim, grim.copy()


def matrix_game(payoff_0: np.ndarray, payoff_1: np.ndarray, gamma: float = 0.5):
    """A normal-form game as a one-state Markov game (repeated with discount gamma)."""
    payoff_0 = V.check_array(payoff_0, "payoff_0", ndim=2, dtype=np.float64)
    payoff_1 = V.check_array(payoff_1, "payoff_1", shape=payoff_0.shape, dtype=np.float64)
    a0, a1 = payoff_0.shape
    reward = np.stack([payoff_0.reshape(1, -1), payoff_1.reshape(1, -1)])
    return TabularMarkovGame(
        [a0, a1],
        np.ones((1, a0 * a1, 1)),
        np.zeros((1, a0 * a1, 1), int),
        reward,
        gamma,
        name="matrix",
    )


TAG_MOVES = np.array([[0, 0], [-1, 0], [0, 1], [1, 0], [0, -1]])  # stay, N, E, S, W


class TagGame(TabularMarkovGame):
    """Pursuit on a ``grid`` x ``grid`` torus: ``n_pursuers`` (1 or 2) pursuers and an evader.

    On a torus the game is invariant to translation, so the state is the evader's offset
    from each pursuer (grid^(2 n_pursuers) states). Agents are the pursuers then the evader;
    all move simultaneously (stay or one of four steps) and each move fails with probability
    ``slip``. A pursuer gets +1 whenever it ends a step on the evader's cell; the evader gets
    -1 whenever at least one pursuer does; play continues (discounted). With one pursuer the
    game is zero-sum; with two it is general-sum."""

    def __init__(self, grid: int = 4, gamma: float = 0.9, slip: float = 0.1, n_pursuers: int = 1):
        grid = V.check_int(grid, "grid", low=2)
        gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
        slip = V.check_probability(slip, "slip")
        n_pursuers = V.check_choice(n_pursuers, "n_pursuers", (1, 2))
        k = int(n_pursuers)
        _check_table_size("grid and n_pursuers", grid ** (2 * k), 5 ** (k + 1), 2 ** (k + 1))
        G, A, k = int(grid), 5, int(n_pursuers)
        S = G ** (2 * k)
        # state digits: (row_1, col_1, ..., row_k, col_k) of the evader-minus-pursuer offsets
        offset = np.array(list(itertools.product(range(G), repeat=2 * k))).reshape(S, k, 2)
        joint = np.array(list(itertools.product(range(A), repeat=k + 1)))  # [J, k + 1]
        flags = np.array(list(itertools.product(range(2), repeat=k + 1)))  # [O, k + 1] slips
        step = TAG_MOVES[joint][:, None] * (1 - flags[None, :, :, None])  # [J, O, k + 1, 2]
        delta = step[:, :, k : k + 1] - step[:, :, :k]  # evader step minus pursuer step
        new = (offset[:, None, None] + delta[None]) % G  # [S, J, O, k, 2]
        digits = new.reshape(*new.shape[:3], 2 * k)
        next_state = np.ravel_multi_index(tuple(np.moveaxis(digits, -1, 0)), (G,) * (2 * k))
        flag_prob = np.where(flags == 0, 1 - slip, slip).prod(-1)  # [O]
        prob = np.broadcast_to(flag_prob, next_state.shape).copy()
        caught = (np.abs(new).sum(-1) == 0).astype(float)  # [S, J, O, k]
        pursuer = (prob[..., None] * caught).sum(2)  # [S, J, k]
        evader = -(prob * caught.max(-1)).sum(-1)  # [S, J]
        reward = np.concatenate([np.moveaxis(pursuer, -1, 0), evader[None]])
        apart = (np.abs(offset).sum(-1) > 0).all(-1)
        rho = apart / apart.sum()  # start with nobody caught
        name = f"tag-{G}x{G}" + ("" if k == 1 else f"-{k}pursuers")
        super().__init__([A] * (k + 1), prob, next_state, reward, gamma, rho, name=name)
        self.n_pursuers = k

    def expert_policy(
        self, temperature: float | None = None, tol: float = 1e-10, max_iter: int = 200
    ) -> tuple[np.ndarray, ...]:
        """The expert profile. ``temperature=None`` (one pursuer only): minimax (Nash)
        stationary policies by Hoffman-Karp iteration -- each round solves every state's 5x5
        zero-sum matrix game by linear programming for the pursuer, then evaluates the
        pursuer's policy exactly against the evader's best response. A positive
        ``temperature``: the quantal-response (logit) equilibrium of the entropy-regularised
        game, the expert used for two pursuers (where no minimax solution applies)."""
        if temperature is not None:
            from .quantal import quantal_response_equilibrium

            temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)

            return quantal_response_equilibrium(self, temperature)
        if self.n_pursuers != 1:
            raise ValueError("temperature is needed: the minimax expert needs one pursuer")
        tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
        max_iter = V.check_int(max_iter, "max_iter", low=1)
        from scipy.optimize import linprog

        S, A = self.n_states, 5

        def solve(matrix: np.ndarray) -> np.ndarray:
            # maximise t s.t. x^T M >= t, sum x = 1, x >= 0 (row player = maximiser)
            c = np.zeros(A + 1)
            c[-1] = -1.0
            a_ub = np.hstack([-matrix.T, np.ones((A, 1))])
            res = linprog(
                c,
                A_ub=a_ub,
                b_ub=np.zeros(A),
                A_eq=[[1.0] * A + [0.0]],
                b_eq=[1.0],
                bounds=[(0, None)] * A + [(None, None)],
                method="highs",
            )
            x = np.maximum(res.x[:A], 0.0)
            return x / x.sum()

        def stage(values):
            cont = (self.prob * values[self.next_state]).sum(-1)  # [S, J]
            return (self.reward[0] + self.gamma * cont).reshape(S, A, A)

        v = np.zeros(S)
        uniform = np.full((S, A), 1.0 / A)
        for _ in range(max_iter):
            pursuer = np.array([solve(m) for m in stage(v)])
            _, _, v_evader = self.best_response(1, (pursuer, uniform))
            v_new = -v_evader  # the pursuer's value when the evader best-responds
            if np.max(np.abs(v_new - v)) < tol:
                v = v_new
                break
            v = v_new
        mats = stage(v)
        pursuer = np.array([solve(m) for m in mats])
        evader = np.array([solve(-m.T) for m in mats])
        return pursuer, evader
