"""Tests of the Obscuro room: FoW rules (king capture, moving into check, FoW castling, en
passant, promotion, the fog view), belief soundness and its cap, the move encoding, the
PettingZoo env, cross-checks against OpenSpiel (dark_chess moves and views, Leduc rules,
exploitability), PCFR+ convergence, subgame search and PIMC on poker, the chess search on a
king capture in one, the agents, the match runner and both claims at smoke scale."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from iclr26.claims import contract_problems, run_claim
from iclr26.rl.obscuro import (
    PIMC,
    BeliefOverflowError,
    BeliefState,
    FogOfWarChess,
    FoWChessEnv,
    FoWChessGymEnv,
    FoWSubgame,
    GreedyAgent,
    IllegalMoveError,
    KuhnPoker,
    LeducPoker,
    ObscuroAgent,
    PIMCAgent,
    RandomAgent,
    SubgameSearch,
    alphabeta,
    build_tree,
    decode_move,
    encode_move,
    exploitability,
    fow_chess_env,
    make_evaluator,
    play_game,
    play_match,
    profile_exploitability,
    pseudo_legal_moves,
    purify,
    random_game,
    solve,
    visible_squares,
)
from iclr26.rl.obscuro.claims import game_size
from iclr26.rl.obscuro.fow_chess import N_ACTIONS, board_key, view_key
from iclr26.rl.obscuro.games import CHANCE
from iclr26.rl.obscuro.solver import strategy_dict, uniform_strategy

# ---------------------------------------------------------------- rules


def test_king_capture_ends_the_game_and_moving_into_check_is_legal():
    game = FogOfWarChess("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1")
    legal = {m.uci() for m in game.legal_moves()}
    assert "e1d2" in legal and "e1f1" in legal  # squares the rook attacks: legal in FoW
    assert "e1e2" in legal
    game.step("e1d1")  # onto a square the rook attacks
    game.step("e2e1")  # the rook gives "check": no such rule in FoW
    game.step("d1c1")
    assert not game.is_over()
    game = FogOfWarChess("4k3/8/8/8/8/8/4r3/4K3 b - - 0 1")
    game.step("e2e1")
    assert game.is_over() and game.winner() == chess.BLACK and game.result() == "0-1"
    assert game.termination == "king_capture" and game.legal_moves() == []
    with pytest.raises(RuntimeError, match="over"):
        game.step("e8e7")


def test_castling_through_an_attacked_square_is_fow_legal():
    fen = "4k3/8/8/8/8/8/5r2/R3K2R w KQ - 0 1"  # the rook on f2 attacks f1 and the king
    board = chess.Board(fen)
    assert chess.Move.from_uci("e1g1") not in board.legal_moves  # python-chess refuses
    game = FogOfWarChess(fen)
    legal = {m.uci() for m in game.legal_moves()}
    assert {"e1g1", "e1c1"} <= legal
    game.step("e1g1")
    assert game.board.piece_at(chess.F1).piece_type == chess.ROOK
    assert game.board.piece_at(chess.G1).piece_type == chess.KING
    # blocked: no castling when a square between is occupied
    assert "e1c1" not in {
        m.uci() for m in FogOfWarChess("4k3/8/8/8/8/8/8/RN2K2R w KQ - 0 1").legal_moves()
    }


def test_en_passant_and_promotion_are_visible_and_playable():
    game = FogOfWarChess("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1")
    game.step("d7d5")
    view = game.observation(chess.WHITE)
    assert view.visible & chess.BB_SQUARES[chess.D6]  # the en-passant square
    assert view.visible & chess.BB_SQUARES[chess.D5]  # and the pawn it would capture
    game.step("e5d6")
    assert game.board.piece_at(chess.D5) is None
    game = FogOfWarChess("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1")
    promos = {m.uci() for m in game.legal_moves() if m.promotion}
    assert promos == {"b7b8q", "b7b8r", "b7b8b", "b7b8n"}
    game.step("b7b8n")
    assert game.board.piece_at(chess.B8).piece_type == chess.KNIGHT


def test_start_view_is_exactly_ranks_one_to_four():
    game = FogOfWarChess()
    white = game.observation(chess.WHITE)
    codes = white.codes
    assert np.all(codes[:4] > 0) and np.all(codes[4:] == 0)  # ranks 1-4 seen, 5-8 not
    assert (codes[:2] >= 2).sum() == 16 and np.all(codes[2:4] == 1)  # own pieces; empty
    black = game.observation(chess.BLACK)
    assert np.all(black.codes[4:] > 0) and np.all(black.codes[:4] == 0)
    assert white.fog_string().startswith("????????/????????")
    planes = white.planes()
    assert planes.shape == (14, 8, 8) and planes[12].sum() == 32 and planes[13].all()


def test_view_depends_only_on_position_and_player_and_holds_own_pieces():
    a = FogOfWarChess()
    for m in ("g1f3", "g8f6", "b1c3", "b8c6"):
        a.step(m)
    b = FogOfWarChess()
    for m in ("b1c3", "b8c6", "g1f3", "g8f6"):
        b.step(m)
    for color in (chess.WHITE, chess.BLACK):
        assert a.observation(color).key == b.observation(color).key
    game, _ = random_game(30, seed=5)
    for color in (chess.WHITE, chess.BLACK):
        vis = visible_squares(game.board, color)
        assert vis & game.board.occupied_co[color] == game.board.occupied_co[color]


def test_bad_moves_and_fens_are_refused():
    game = FogOfWarChess()
    with pytest.raises(IllegalMoveError, match="move"):
        game.step("e2e5")
    with pytest.raises(IllegalMoveError, match="move"):
        game.step("zz99")
    with pytest.raises(TypeError, match="move"):
        game.step(42)
    with pytest.raises(ValueError, match="fen"):
        FogOfWarChess("not a fen")
    with pytest.raises(ValueError, match="fen"):
        FogOfWarChess("8/8/8/8/8/8/8/4K3 w - - 0 1")  # no black king
    assert game.ply == 0  # nothing was played


def test_ply_cap_adjudicates_by_material():
    game = FogOfWarChess("q3k3/8/8/8/8/8/8/4K3 w - - 0 1", max_plies=2)
    game.step("e1d1")
    game.step("e8d8")
    assert game.termination == "max_plies" and game.winner() == chess.BLACK


def test_fifty_move_rule_draws_and_a_capture_resets_it():
    game = FogOfWarChess("4k3/8/8/8/8/8/8/R3K3 w - - 99 60")
    game.step("a1a2")
    assert game.termination == "fifty_moves" and game.result() == "1/2-1/2"
    game = FogOfWarChess("4k3/8/8/8/8/8/p7/R3K3 w - - 99 60")
    game.step("a1a2")  # a capture: the clock restarts
    assert not game.is_over() and game.board.halfmove_clock == 0


def test_pawn_sees_blocker_flag_reveals_the_piece_in_front_of_a_pawn():
    fen = "4k3/8/8/8/4p3/4P3/8/4K3 w - - 0 1"  # black pawn e4 blocks white pawn e3
    e4 = chess.BB_SQUARES[chess.E4]
    for flag in (False, True):
        board = chess.Board(fen)
        assert bool(visible_squares(board, chess.WHITE, pawn_sees_blocker=flag) & e4) == flag
        codes = FogOfWarChess(fen, pawn_sees_blocker=flag).observation(chess.WHITE).codes
        assert codes[3, 4] == (2 + 6 if flag else 0)  # black pawn code, or unseen
    # the flag does not reveal an empty square's neighbour: only the blocking piece itself
    free = chess.Board("4k3/8/8/8/8/4P3/8/4K3 w - - 0 1")
    assert visible_squares(free, chess.WHITE, True) == visible_squares(free, chess.WHITE, False)


def test_move_encoding_round_trips():
    rng = random.Random(0)
    for seed in range(4):
        game, _ = random_game(rng.randrange(5, 40), seed=seed)
        if game.is_over():
            continue
        color = game.turn
        moves = game.legal_moves()
        idx = [encode_move(m, color) for m in moves]
        assert len(set(idx)) == len(idx)
        assert [decode_move(i, color, game.board) for i in idx] == moves
    game = FogOfWarChess("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1")
    for m in game.legal_moves():
        assert decode_move(encode_move(m, chess.WHITE), chess.WHITE, game.board) == m


# ---------------------------------------------------------------- belief


def _play_with_belief(seed: int, plies: int, max_size: int, color=chess.WHITE):
    rng = random.Random(seed)
    game = FogOfWarChess()
    belief = BeliefState(color, max_size=max_size, seed=seed)
    sound = True
    for _ in range(plies):
        if game.is_over():
            break
        mover = game.turn
        move = rng.choice(game.legal_moves())
        game.step(move)
        if game.is_over():
            break
        obs = game.observation(color)
        if mover == color:
            belief.observe_own_move(move, obs)
        else:
            belief.observe_opponent_move(obs)
        keys = {view_key(b, color) for b in belief.boards()}
        sound &= belief.contains(game.board) and keys == {obs.key}
    return belief, sound


def test_belief_is_sound_without_a_cap():
    for seed in range(20):
        belief, sound = _play_with_belief(seed, plies=4, max_size=10**6, color=seed % 2 == 0)
        assert sound and belief.exact and belief.n_overflows == 0


def test_belief_overflow_is_stated_sampled_and_counted():
    belief, _ = _play_with_belief(1, plies=6, max_size=3)
    assert len(belief) <= 3 and not belief.exact
    assert belief.n_overflows >= 1 and belief.n_dropped >= 1
    with pytest.raises(BeliefOverflowError, match="max_size"):
        rng = random.Random(1)
        game = FogOfWarChess()
        strict = BeliefState(chess.BLACK, max_size=2, on_overflow="raise")
        for _ in range(2):
            game.step(rng.choice(game.legal_moves()))
            strict.observe_opponent_move(game.observation(chess.BLACK))


def test_belief_reseeds_when_the_true_position_was_dropped():
    game = FogOfWarChess()
    belief = BeliefState(chess.BLACK, max_size=64, seed=0)
    game.step("e2e4")
    wrong = chess.Board("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    belief.positions = {board_key(wrong): wrong}  # a belief that lost the true position
    belief.exact = False  # ... as only a capped belief can
    obs = game.observation(chess.BLACK)
    belief.observe_own_move("e7e5", obs)  # wrong turn: nothing survives
    assert belief.n_reseeds == 1 and not belief.exact and len(belief) >= 1
    assert all(view_key(b, chess.BLACK) == obs.key for b in belief.boards())


def test_exact_belief_refuses_an_illegal_own_move_and_an_unexplained_view():
    game = FogOfWarChess()
    belief = BeliefState(chess.WHITE, max_size=64)
    game.step("e2e4")
    obs = game.observation(chess.WHITE)
    with pytest.raises(IllegalMoveError, match="e2e5 is not a pseudo-legal move in any"):
        belief.observe_own_move("e2e5", obs)
    with pytest.raises(ValueError, match="observation is inconsistent"):
        belief.observe_own_move("d2d4", obs)  # legal, but not the move that gave this view
    assert belief.n_reseeds == 0 and belief.exact and len(belief) == 1  # left unchanged
    belief.observe_own_move("e2e4", obs)
    game.step("e7e5")
    with pytest.raises(IllegalMoveError, match="g1f3 is not a pseudo-legal move in any"):
        belief.observe_own_move("g1f3", game.observation(chess.WHITE))  # black's ply missed
    belief.observe_opponent_move(game.observation(chess.WHITE))
    assert belief.contains(game.board) and belief.exact and belief.n_reseeds == 0


# ---------------------------------------------------------------- OpenSpiel cross-checks


def test_moves_and_views_match_openspiel_dark_chess():
    pyspiel = pytest.importorskip("pyspiel")
    rng = random.Random(0)
    plies = 0
    fields = lambda fen: " ".join(
        fen.split()[:3] if "k" in fen.split()[0] and "K" in fen.split()[0] else fen.split()[:2]
    )  # noqa: E731
    dense = lambda s: "/".join(
        "".join("." * int(c) if c.isdigit() else c for c in r) for r in s.split("/")
    )  # noqa: E731
    while plies < 200:
        game = FogOfWarChess()
        state = pyspiel.load_game("dark_chess").new_initial_state()
        while not game.is_over() and plies < 200:
            ours = {}
            for m in game.legal_moves():
                b = game.board.copy(stack=False)
                b.push(m)
                ours[fields(b.fen())] = m
            theirs = {fields(str(state.child(a))): a for a in state.legal_actions()}
            assert set(ours) == set(theirs), game.board.fen()
            for color, player in ((chess.WHITE, 1), (chess.BLACK, 0)):
                if color != game.turn and game.board.ep_square is not None:
                    continue  # OpenSpiel lets the side not to move see via the e.p. square
                ref = state.observation_string(player).split()[0]
                assert dense(game.observation(color).fog_string()) == dense(ref)
            key = rng.choice(sorted(ours))
            game.step(ours[key])
            state.apply_action(theirs[key])
            plies += 1
        assert game.is_over() == state.is_terminal() or plies >= 200


def test_leduc_and_kuhn_match_openspiel_rules():
    pyspiel = pytest.importorskip("pyspiel")
    for ours, name, n_infosets in (
        (KuhnPoker(), "kuhn_poker", 12),
        (LeducPoker(), "leduc_poker", 936),
    ):
        ref = pyspiel.load_game(name)
        stack = [(ours.initial(), ref.new_initial_state())]
        seen = 0
        while stack:
            h, s = stack.pop()
            assert ours.is_terminal(h) == s.is_terminal()
            if s.is_terminal():
                assert ours.returns(h) == pytest.approx(s.returns()[0])
                continue
            if s.is_chance_node():
                assert ours.current_player(h) == CHANCE
                assert dict(ours.chance_outcomes(h)) == pytest.approx(dict(s.chance_outcomes()))
                for a, _ in s.chance_outcomes():
                    stack.append((ours.apply(h, a), s.child(a)))
                continue
            assert ours.current_player(h) == s.current_player()
            assert ours.legal_actions(h) == s.legal_actions()
            seen += 1
            for a in s.legal_actions():
                stack.append((ours.apply(h, a), s.child(a)))
        assert build_tree(ours).n_infosets == n_infosets and seen > 0
        # the PCFR+ speed ratio against OpenSpiel's CFR compares sweeps of equal-size trees
        assert game_size(ref) == build_tree(ours).n_nodes


def test_exploitability_matches_openspiel():
    pytest.importorskip("pyspiel")
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_expl

    game = KuhnPoker()
    res = solve(game, 30, "pcfr+")
    strat = strategy_dict(res.tree, res.average)
    ref_game = pyspiel.load_game("kuhn_poker")
    tab = os_policy.TabularPolicy(ref_game)
    stack = [ref_game.new_initial_state()]
    while stack:
        s = stack.pop()
        if s.is_terminal():
            continue
        if not s.is_chance_node():
            p = s.current_player()
            h = tuple(s.history())
            row = strat[(p, game.infoset_key(h, p))]
            idx = tab.state_index(s)
            tab.action_probability_array[idx] = [row[a] for a in range(2)]
        for a in s.legal_actions():
            stack.append(s.child(a))
    assert os_expl.exploitability(ref_game, tab) == pytest.approx(res.exploitability(), abs=1e-9)
    assert res.exploitability() > 1e-4  # not converged yet: the check is not vacuous


# ---------------------------------------------------------------- solver


class RockPaperScissors:
    def initial(self):
        return ()

    def current_player(self, h):
        return len(h)

    def legal_actions(self, h):
        return [0, 1, 2]

    def chance_outcomes(self, h):
        return []

    def apply(self, h, a):
        return h + (a,)

    def is_terminal(self, h):
        return len(h) == 2

    def returns(self, h):
        return [0.0, -1.0, 1.0][(h[1] - h[0]) % 3]

    def infoset_key(self, h, player):
        return ()  # player 1 does not see player 0's throw


def test_pcfr_plus_converges_on_rps_and_kuhn():
    rps = solve(RockPaperScissors(), 2000, "pcfr+")
    assert rps.exploitability() < 0.01
    assert np.allclose(rps.average, 1 / 3, atol=0.02)
    kuhn = solve(KuhnPoker(), 1000, "pcfr+")
    tree = kuhn.tree
    from iclr26.rl.obscuro.solver import game_value

    assert kuhn.exploitability() < 0.01
    assert game_value(tree, kuhn.average) == pytest.approx(-1 / 18, abs=0.005)
    assert exploitability(tree, uniform_strategy(tree)) == pytest.approx(0.4583333, abs=1e-6)
    # the predictive, clipped, quadratically averaged variant beats vanilla CFR here
    assert kuhn.exploitability() < solve(tree, 1000, "cfr").exploitability()


def test_subgame_search_at_the_root_is_the_full_game_solve():
    # Kuhn: player 0's first infosets with order 2 hold every deal, so each subgame is the
    # whole game and PCFR+ in the forest must give exactly the full-game iterates
    game = KuhnPoker()
    search = SubgameSearch(game, iterations=40, order=2)
    roots = {}
    tree = search.tree
    for i, key in enumerate(tree.infoset_keys):
        if key[0] == 0 and key[1][1] == ():
            nodes = np.flatnonzero(tree.infoset == i)
            extra = [
                n
                for n in np.flatnonzero(tree.infoset >= 0)
                if tree.depth[n] == 2 and n not in nodes
            ]
            roots[key] = [(tree.histories[n], 1 / 6, False) for n in nodes]
            roots[key] += [(tree.histories[n], 1 / 6, True) for n in extra]
    got = search._solve_batch(0, roots)
    full = solve(tree, 40, "pcfr+").strategy()
    for key, probs in got.items():
        assert probs == pytest.approx(full[key], abs=1e-9)


def test_resolve_gadget_makes_nested_search_safer_on_kuhn():
    game = KuhnPoker()
    plain = profile_exploitability(game, SubgameSearch(game, 60, order=2).profile())
    gadget = profile_exploitability(
        game, SubgameSearch(game, 60, order=2, gadget="resolve").profile()
    )
    assert gadget < plain - 0.02


def test_pimc_is_pure_and_exploitable_on_kuhn():
    game = KuhnPoker()
    profile = PIMC(game).profile()
    for probs in profile.values():
        assert max(probs.values()) in (0.5, 1.0)  # pure (ties split)
    assert profile_exploitability(game, profile) > 0.1


# ---------------------------------------------------------------- chess search and agents


def test_search_finds_a_king_capture_in_one_like_alpha_beta():
    fen = "k7/8/8/8/8/8/8/R3K3 w - - 0 1"  # the rook on a1 attacks the king on a8
    board = chess.Board(fen)
    ev = make_evaluator("material")
    tree = FoWSubgame(chess.WHITE, [board], [1.0], ev)
    tree.run(max_expansions=4, expansions_per_solve=2, cfr_iters_per_solve=20)
    strategy = tree.root_strategy()
    best = max(strategy, key=strategy.get)
    assert best == "a1a8"
    counter = [0]
    scores = {}
    for m in pseudo_legal_moves(board):
        b = board.copy()
        if b.piece_type_at(m.to_square) == chess.KING:
            scores[m.uci()] = 1.0
            continue
        b.push(m)
        scores[m.uci()] = -alphabeta(b, 1, ev, counter=counter)
    assert max(scores, key=scores.get) == best
    assert purify({"a": 0.5, "b": 0.04, "c": 0.46}, 0.1) == pytest.approx(
        {"a": 0.5 / 0.96, "c": 0.46 / 0.96}
    )


def test_agents_play_legal_moves_and_greedy_takes_the_king():
    game = FogOfWarChess("k7/8/8/8/8/8/8/R3K3 w - - 0 1")
    greedy = GreedyAgent()
    greedy.reset(chess.WHITE, game.board.fen())
    assert greedy.act(game.observation(chess.WHITE), game.legal_moves()).uci() == "a1a8"
    for agent in (
        RandomAgent(seed=1),
        PIMCAgent(time_per_move=0.01, n_samples=2, depth=1, seed=1),
        ObscuroAgent(n_root_samples=2, max_expansions=2, seed=1),
    ):
        rec = play_game(agent, RandomAgent(seed=2), max_plies=6)
        assert rec.plies <= 6 and rec.result in ("1-0", "0-1", "1/2-1/2")
        assert '[Variant "Fog of War"]' in rec.pgn


def test_order2_adds_positions_the_opponent_cannot_separate(monkeypatch):
    import iclr26.rl.obscuro.agents as agents_module

    seen = []
    search = agents_module.ObscuroAgent.search

    def spy(self, boards):
        tree = search(self, boards)
        seen.append(sum(r.order2 for r in tree.roots))
        # order-2 roots hold our strategy in infosets of their own, never the root infoset
        root_key = hash(("root",))
        assert all(r.keys[0] != root_key for r in tree.roots if r.order2)
        return tree

    monkeypatch.setattr(agents_module.ObscuroAgent, "search", spy)
    agent = ObscuroAgent(order=2, n_root_samples=4, max_expansions=80, belief_size=64, seed=0)
    play_game(agent, RandomAgent(seed=3), max_plies=4)
    assert seen[0] == 0 and max(seen) > 0


def test_match_runner_alternates_colours_over_workers(tmp_path):
    path = tmp_path / "games.pgn"
    res = play_match("random", "random", n_games=2, max_plies=4, n_workers=2, pgn_path=path)
    assert res.n_games == 2 and 0.0 <= res.score <= 1.0
    assert res.ci95[0] <= res.score <= res.ci95[1]
    assert [g.white for g in res.games] == ["random", "random"]
    assert path.read_text().count("[Event ") == 2


def test_pettingzoo_api_raw_and_wrapped():
    from pettingzoo.test import api_test, render_test, seed_test
    from pettingzoo.utils import BaseWrapper

    api_test(FoWChessEnv(max_plies=30), num_cycles=60)
    api_test(fow_chess_env(max_plies=30), num_cycles=60)
    seed_test(lambda: fow_chess_env(max_plies=20), num_cycles=20)
    render_test(lambda render_mode=None: fow_chess_env(max_plies=6, render_mode=render_mode))
    raw = FoWChessEnv(max_plies=10)
    raw.reset()
    obs, *_ = raw.last()
    assert obs["observation"].shape == (8, 8, 14) and obs["action_mask"].sum() == 20
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(IllegalMoveError):
        raw.step(illegal)
    with pytest.raises(IllegalMoveError, match="action 'zzzz' is not a UCI move"):
        raw.step("zzzz")
    raw.step("e2e4")  # UCI strings work on the raw env
    assert raw.agent_selection == "player_1"
    # wrapped as PettingZoo's classic games: an illegal action loses, an unknown one is refused
    env = fow_chess_env(max_plies=10)
    assert isinstance(env, BaseWrapper) and isinstance(env.unwrapped, FoWChessEnv)
    with pytest.raises(Exception, match="reset"):
        env.step(0)
    env.reset()
    env.step(illegal)
    assert env.rewards == {"player_0": -1, "player_1": 0} and all(env.terminations.values())
    env.reset()
    with pytest.raises(AssertionError):
        env.step(N_ACTIONS)


def test_gymnasium_env_passes_check_env_raw_and_wrapped():
    import warnings

    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    for color in (chess.WHITE, chess.BLACK):
        check_env(FoWChessGymEnv("greedy", color=color, max_plies=12))
        wrapped = gym.wrappers.TimeLimit(
            gym.make("iclr26/FoWChess-v0", color=color, max_plies=12, render_mode="ansi"), 6
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the checker's "env is wrapped" notice
            check_env(wrapped)
    env = FoWChessGymEnv("random", color=chess.BLACK, max_plies=8)
    obs, info = env.reset(seed=5)
    assert env.game.ply == 1 and obs["action_mask"].sum() == len(info["legal_moves"]) == 20
    again, _ = FoWChessGymEnv("random", color=chess.BLACK, max_plies=8).reset(seed=5)
    assert np.array_equal(obs["observation"], again["observation"])  # the seed fixes the opponent
    done = truncated = False
    while not (done or truncated):
        legal = int(np.flatnonzero(obs["action_mask"])[0])
        obs, reward, done, truncated, info = env.step(legal)
    assert truncated or reward in (-1.0, 1.0) and env.game.termination == "king_capture"
    env.reset(seed=0)
    off_board = encode_move(chess.Move.from_uci("a8a1"), chess.WHITE) + 7  # plane beyond
    obs, reward, done, truncated, info = env.step(off_board)
    assert (reward, done, truncated) == (-1.0, True, False) and "illegal_action" in info
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


# ---------------------------------------------------------------- claims


@pytest.mark.parametrize("name", ["exploitability-vs-pimc", "fow-matches"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("obscuro", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced")
    assert record["metrics"] and record["baseline"] and record["checks"]
    assert contract_problems(record) == []


def test_play_command_writes_a_pgn_and_refuses_bad_input(tmp_path, capsys):
    from iclr26 import cli

    out = tmp_path / "game.pgn"
    code = cli.main(
        ["play", "--white", "random", "--black", "greedy", "--max-plies", "6", "--pgn", str(out)]
    )
    assert code == 0
    text = out.read_text()
    assert '[White "random"]' in text and "[Result" in text
    capsys.readouterr()
    assert cli.main(["play", "--fen", "not a fen", "--max-plies", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iclr26 play:") and err.count("\n") == 1
    assert cli.main(["play", "--time", "0"]) == 2
    assert cli.main(["play", "--pgn", str(tmp_path / "missing" / "g.pgn")]) == 2
