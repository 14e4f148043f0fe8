import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from iclr26.claims import run_claim
from iclr26.rl.cvar_qlearning import (
    AugmentedCVaRQLearning,
    BudgetAugmentedWrapper,
    EpisodicTable,
    PredictiveCVaRQLearning,
    RiskNeutralQLearning,
    cvar_dynamic_programming,
    cvar_of_distribution,
    decision_tree_table,
    empirical_cvar,
    evaluate_cvar,
    monte_carlo_returns,
    neutral_policy_cvar,
    policy_cvar,
    risk_neutral_q,
    risky_grid_table,
)


def bandit_table():
    # one decision then the end state; reward -10 (0.1), 0 (0.3), 5 (0.6)
    prob = np.zeros((2, 1, 3))
    prob[0, 0] = [0.1, 0.3, 0.6]
    prob[1, 0] = [1.0, 0.0, 0.0]
    rew = np.zeros((2, 1, 3))
    rew[0, 0] = [-10, 0, 5]
    nxt = np.ones((2, 1, 3), dtype=int)
    return EpisodicTable(prob, nxt, rew, np.ones((2, 1, 3), bool), start_state=0, horizon=1)


def test_bandit_dp_matches_closed_form_and_monte_carlo():
    table = bandit_table()
    sol = cvar_dynamic_programming(table, 0.25)
    assert sol.cvar == pytest.approx((0.1 * -10 + 0.15 * 0) / 0.25)
    assert cvar_of_distribution(np.array([-10.0, 0, 5]), np.array([0.1, 0.3, 0.6]), 0.25) == (
        pytest.approx(-4.0)
    )
    returns = monte_carlo_returns(table, lambda r, s, e: np.zeros_like(s), sol.eta0, 20000, 0)
    tail = np.sort(returns)[: int(0.25 * returns.size)]
    se = tail.std() / np.sqrt(tail.size) + 0.1  # + discreteness of the atom at 0
    assert abs(empirical_cvar(returns, 0.25) - sol.cvar) <= 3 * se


def test_tree_solutions():
    table = decision_tree_table()
    assert table.return_bounds() == (-41, 16)
    sol = cvar_dynamic_programming(table, 0.1)
    assert sol.cvar == pytest.approx(1.0)
    assert neutral_policy_cvar(table, 0.1) == pytest.approx(-37.5)
    # the DP's F*, H* reproduce its shortfall: L = eta F - H everywhere
    assert np.allclose(sol.grid.values * sol.tail_prob - sol.tail_value, sol.shortfall)
    # exact evaluation of the optimal policy returns the optimal CVaR
    exact = policy_cvar(table, lambda r, s, e: sol.act(s, e), [sol.eta0], 0.1)
    assert exact[0] == pytest.approx(sol.cvar)
    # with q = 1 CVaR is the mean: the risk-neutral optimum and its first action
    full = cvar_dynamic_programming(table, 1.0)
    qn = risk_neutral_q(table)
    assert full.cvar == pytest.approx(qn[0].max())
    assert full.act(np.array([0]), np.array([full.eta0]))[0] == qn[0].argmax()


def test_grid_risk_neutral_and_cvar_optimal_differ():
    table = risky_grid_table()
    sol = cvar_dynamic_programming(table, 0.1)
    assert sol.cvar > neutral_policy_cvar(table, 0.1) + 1.0


def test_fh_update_equals_shortfall_update():
    # in the tabular case the F/H TD step combines to the L TD step exactly
    table = decision_tree_table()
    pred = PredictiveCVaRQLearning(q=0.1, lr=0.3, n_replications=2, seed=0).learn(table, 5)
    aug = AugmentedCVaRQLearning(q=0.1, lr=0.3, relabel=True, n_replications=2, seed=0)
    aug.learn(table, 5)
    rng = np.random.default_rng(0)
    pred.tail_prob_[:] = rng.random(pred.tail_prob_.shape)
    pred.tail_value_[:] = rng.normal(size=pred.tail_value_.shape)
    aug.q_neutral_[:] = pred.q_neutral_
    eta = pred.grid_.values[None, None, :, None]
    aug.shortfall_[:] = eta * pred.tail_prob_ - pred.tail_value_
    rr = np.arange(2)
    s, a, r = np.array([0, 2]), np.array([1, 0]), np.array([6.0, 0.0])
    s2, term = np.array([2, 5]), np.array([False, False])
    shift = np.rint(-r).astype(int)
    active, budget = np.ones(2, bool), np.zeros(2, int)
    pred._learn(rr, s, a, r, shift, s2, term, active, budget)
    aug._learn(rr, s, a, r, shift, s2, term, active, budget)
    implied = eta * pred.tail_prob_ - pred.tail_value_
    assert np.allclose(implied, aug.shortfall_)


def test_envs_registered_and_pass_checker():
    for env_id in ("iclr26/CVaRDecisionTree-v0", "iclr26/RiskyGridWorld-v0"):
        env = gym.make(env_id)
        check_env(env.unwrapped)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        env.close()
    env = BudgetAugmentedWrapper(gym.make("iclr26/RiskyGridWorld-v0"), eta0=-10.0)
    (obs, eta), _ = env.reset(seed=0)
    (_, eta2), reward, *_ = env.step(1)
    assert eta2[0] == pytest.approx(eta[0] - reward)


def test_smoke_learning_and_api():
    env = gym.make("iclr26/CVaRDecisionTree-v0")
    agent = PredictiveCVaRQLearning(q=0.1, seed=0).learn(env, 200)
    obs, _ = env.reset(seed=1)
    budget = agent.initial_budget(obs)
    assert agent.grid_.lo <= budget <= agent.grid_.hi
    action, _ = agent.predict(obs, budget)
    assert action in (0, 1)
    assert np.isfinite(agent.cvar_estimate(obs))
    assert agent.updates_per_second_ > 0
    exact = policy_cvar(agent.table_, agent.act_batch, agent.initial_budgets(), 0.1)[0]
    mc = evaluate_cvar(agent, env, q=0.1, n_episodes=20000, seed=0)
    assert abs(mc - exact) < 1.5
    neutral = RiskNeutralQLearning(seed=0).learn(env, 50)
    assert neutral.q_neutral_.shape == (1, 8, 2)


def test_bad_input():
    with pytest.raises(ValueError, match="q must be"):
        PredictiveCVaRQLearning(q=0.0)
    with pytest.raises(ValueError, match="q must be"):
        cvar_dynamic_programming(decision_tree_table(), 1.5)
    with pytest.raises(ValueError):
        PredictiveCVaRQLearning(relabel=[True, False], n_replications=3)
    with pytest.raises(TypeError):
        PredictiveCVaRQLearning().learn(gym.make("CartPole-v1"), 5)
    with pytest.raises(ValueError, match="shape"):
        EpisodicTable(
            np.ones((2, 1, 1)),
            np.zeros((2, 1, 2), int),
            np.zeros((2, 1, 1)),
            np.ones((2, 1, 1), bool),
            0,
            1,
        )
    with pytest.raises(ValueError):
        risky_grid_table(wind_prob=1.5)


@pytest.mark.parametrize(
    "name", ["cvar-after-fixed-budget", "stable-learning", "blindness-to-success"]
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("cvar_qlearning", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"] and (tmp_path / record["figures"][0]).exists()


def off_lattice_chain():
    """s0 -(a0: reward 0.33 or 1.71; a1: reward 1.0)-> s1 -(0.52 or 2.27)-> end. Returns:
    a0 {0.85, 2.6, 2.23, 3.98} w.p. {.2, .2, .3, .3}; a1 {1.52, 3.27} w.p. {.5, .5}."""
    prob = np.zeros((3, 2, 2))
    nxt = np.zeros((3, 2, 2), dtype=int)
    rew = np.zeros((3, 2, 2))
    term = np.zeros((3, 2, 2), dtype=bool)
    prob[0, 0], nxt[0, 0], rew[0, 0] = [0.4, 0.6], 1, [0.33, 1.71]
    prob[0, 1], nxt[0, 1], rew[0, 1] = [1.0, 0.0], 1, [1.0, 1.0]
    prob[1], nxt[1], rew[1], term[1] = [0.5, 0.5], 2, [0.52, 2.27], True
    prob[2], nxt[2], term[2] = [1.0, 0.0], 2, True
    return EpisodicTable(prob, nxt, rew, term, start_state=0, horizon=5, name="chain")


def test_interpolation_weights():
    from iclr26.rl.cvar_qlearning import BudgetGrid
    from iclr26.rl.cvar_qlearning.predictive_tail import interpolation, lerp

    j0, w, below, above = interpolation(np.array([2.25, 4.0, 0.0, -0.5, 4.5]), 5)
    assert list(j0[:3]) == [2, 3, 0] and np.allclose(w[:3], [0.25, 1.0, 0.0])
    assert list(below) == [False, False, False, True, False]
    assert list(above) == [False, False, False, False, True]
    assert np.allclose(
        lerp(np.array([[0.0, 1.0]]), np.array([[4.0, 3.0]]), np.array([0.25])), [[1.0, 1.5]]
    )
    grid = BudgetGrid(0, 5, 0.1)
    assert grid.on_lattice(np.array([0.3, -1.2])) and not grid.on_lattice(np.array([0.25]))
    assert np.allclose(grid.position(0.25), 2.5)


def test_off_lattice_rewards_interpolate():
    from iclr26.rl.cvar_qlearning import BudgetGrid

    table, q = off_lattice_chain(), 0.25
    exact = max(
        cvar_of_distribution([0.85, 2.6, 2.23, 3.98], [0.2, 0.2, 0.3, 0.3], q),  # 1.126
        cvar_of_distribution([1.52, 3.27], [0.5, 0.5], q),  # 1.52: the safe action
    )
    for step in (0.1, 0.04):
        sol = cvar_dynamic_programming(table, q, BudgetGrid(0, 5, step))
        assert sol.interpolate
        assert exact - step - 1e-9 <= sol.cvar <= exact + 1e-9  # eta0 restricted to the grid
        assert sol.act(np.array([0]), np.array([sol.eta0]))[0] == 1
    agent = PredictiveCVaRQLearning(
        q=q, eta_grid=BudgetGrid(0, 5, 0.05), lr=0.05, n_replications=2, seed=0
    ).learn(table, 1500)
    assert agent.interpolate_
    for i in range(2):
        assert abs(agent.cvar_estimate(replication=i) - exact) <= 0.06
    assert evaluate_cvar(agent, table, q, n_episodes=4000) == pytest.approx(exact, abs=1e-9)
    base = AugmentedCVaRQLearning(q=q, eta_grid=BudgetGrid(0, 5, 0.05), relabel=True).learn(
        table, 200
    )
    assert base.interpolate_ and np.isfinite(base.cvar_estimate())
    with pytest.raises(ValueError, match="integer rewards"):
        policy_cvar(table, agent.act_batch, agent.initial_budgets(), q)
    # integer rewards keep the exact lattice path
    assert not PredictiveCVaRQLearning().learn(decision_tree_table(), 2).interpolate_


def random_acyclic_table(seed: int) -> EpisodicTable:
    """A random layered episodic MDP with integer rewards (every path terminates)."""
    rng = np.random.default_rng(seed)
    S, A, O = 5, 2, 3
    prob = rng.dirichlet(np.ones(O), size=(S, A))
    rew = rng.integers(-6, 7, size=(S, A, O)).astype(float)
    nxt = np.zeros((S, A, O), dtype=int)
    term = np.zeros((S, A, O), dtype=bool)
    for s in range(S):
        if s == S - 1:
            nxt[s], term[s] = s, True
        else:
            nxt[s] = rng.integers(s + 1, S, size=(A, O))
            term[s] = rng.random((A, O)) < 0.3
    return EpisodicTable(prob, nxt, rew, term, start_state=0, horizon=S, name=f"random-{seed}")


def test_dp_value_always_within_the_return_range_and_narrow_grids_are_refused():
    from iclr26.rl.cvar_qlearning import BudgetGrid

    rng = np.random.default_rng(0)
    tables = [decision_tree_table(), bandit_table()] + [random_acyclic_table(k) for k in range(6)]
    for table in tables:
        g_lo, g_hi = table.return_range()
        for q in (0.05, 0.3, 1.0):
            for _ in range(3):  # the default grid and wider ones, all on the integer lattice
                pad_lo, pad_hi = rng.integers(0, 8, size=2)
                grid = BudgetGrid(np.floor(g_lo) - pad_lo, np.ceil(g_hi) + pad_hi, 1.0)
                sol = cvar_dynamic_programming(table, q, grid)
                assert g_lo - 1e-9 <= sol.cvar <= g_hi + 1e-9
            # exact evaluation of the DP's own policy agrees with its value
            sol = cvar_dynamic_programming(table, q)
            exact = policy_cvar(table, lambda r, s, e, sol=sol: sol.act(s, e), [sol.eta0], q)[0]
            assert exact == pytest.approx(sol.cvar, abs=1e-8)
        # a grid that misses part of the returns gave impossible values (e.g. 220 on the
        # tree, whose returns lie in [-41, 16]); it is refused, naming the argument
        for lo, hi in ((g_lo + 1, g_hi), (g_lo, g_hi - 1), (g_hi + 5, g_hi + 10)):
            if hi < lo:
                continue
            with pytest.raises(ValueError, match="grid must cover the returns"):
                cvar_dynamic_programming(table, 0.1, BudgetGrid(lo, hi))
            with pytest.raises(ValueError, match="eta_grid must cover"):
                PredictiveCVaRQLearning(eta_grid=BudgetGrid(lo, hi)).learn(table, 2)


def test_learn_honours_time_limit_and_refuses_other_wrappers():
    # gym.make's own wrappers are fine; a TimeLimit shorter than the table's horizon is
    # honoured (the learner's table is truncated there, as env.step would truncate)
    env = gym.make("iclr26/RiskyGridWorld-v0")
    assert PredictiveCVaRQLearning(seed=0).learn(env, 3).table_.horizon == 40
    short = gym.make("iclr26/RiskyGridWorld-v0", max_episode_steps=6)
    agent = PredictiveCVaRQLearning(seed=0).learn(short, 20)
    assert agent.table_.horizon == 6
    assert agent.env_steps_ <= 20 * 6
    # the truncated horizon changes the exact return range the agent works with
    assert agent.table_.return_range()[0] > risky_grid_table().return_range()[0]
    # wrappers that change rewards, observations or termination are refused, not bypassed
    for wrapped in (
        gym.wrappers.TransformReward(gym.make("iclr26/RiskyGridWorld-v0"), lambda r: 2 * r),
        gym.wrappers.RecordEpisodeStatistics(gym.make("iclr26/CVaRDecisionTree-v0")),
        BudgetAugmentedWrapper(gym.make("iclr26/CVaRDecisionTree-v0"), eta0=0.0),
    ):
        with pytest.raises(TypeError, match="env is wrapped by"):
            PredictiveCVaRQLearning().learn(wrapped, 2)
        fitted = PredictiveCVaRQLearning().learn(wrapped.unwrapped, 2)
        with pytest.raises(TypeError, match="env is wrapped by"):
            evaluate_cvar(fitted, wrapped, q=0.1, n_episodes=10)


def test_every_env_passes_the_gymnasium_checker():
    import warnings

    from iclr26.rl.cvar_qlearning import (
        CVaRDecisionTreeEnv,
        RiskyGridWorldEnv,
        TabularEpisodicEnv,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "wrapped env" / "no spec" notices
        for env in (
            CVaRDecisionTreeEnv(),
            RiskyGridWorldEnv(wind_prob=0.1, rows=3, cols=4),
            TabularEpisodicEnv(random_acyclic_table(0)),
            gym.make("iclr26/CVaRDecisionTree-v0"),
            gym.make("iclr26/RiskyGridWorld-v0"),
            BudgetAugmentedWrapper(gym.make("iclr26/RiskyGridWorld-v0"), eta0=-10.0),
            BudgetAugmentedWrapper(gym.make("iclr26/CVaRDecisionTree-v0"), eta0=1.0),
        ):
            check_env(env)
        # around a built-in toy-text env (no table: the budget box is unbounded)
        check_env(
            BudgetAugmentedWrapper(gym.make("FrozenLake-v1"), eta0=0.5), skip_render_check=True
        )


def test_budget_wrapper_tracks_the_budget_inside_its_box():
    env = BudgetAugmentedWrapper(gym.make("iclr26/RiskyGridWorld-v0"), eta0=-10.0)
    box = env.observation_space[1]
    assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    (obs, eta), _ = env.reset(seed=3)
    total = 0.0
    for _ in range(60):
        (obs, eta), reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total += reward
        assert eta[0] == pytest.approx(-10.0 - total)
        assert env.observation_space.contains((obs, eta))
        if terminated or truncated:
            break
    (_, eta), _ = env.reset(seed=0, options={"eta0": 2.0})
    g_lo, g_hi = risky_grid_table().return_range()
    assert eta[0] == 2.0
    assert env.observation_space[1].low[0] == 2.0 - g_hi
    assert env.observation_space[1].high[0] == 2.0 - g_lo
    plain, _ = env.reset(seed=0)  # back to eta0 = -10 and its box
    assert plain[1][0] == -10.0 and env.observation_space.contains(plain)
