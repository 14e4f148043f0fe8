"""The game-agnostic interface of the search core, and two poker games where exploitability can
be computed exactly: Kuhn poker and Leduc hold'em (rules and action ids as in OpenSpiel's
``kuhn_poker`` and ``leduc_poker``, so the two can be walked side by side)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

CHANCE = -1


@runtime_checkable
class ImperfectInfoGame(Protocol):
    """A two-player zero-sum extensive-form game over hashable histories ``h``.

    ``current_player(h)`` is 0, 1 or :data:`CHANCE`; ``chance_outcomes(h)`` lists
    ``(action, probability)`` at chance nodes; ``returns(h)`` is player 0's utility at a
    terminal (player 1 gets its negative); ``infoset_key(h, player)`` identifies what
    ``player`` knows at ``h`` (its whole observation history)."""

    def initial(self) -> Any: ...
    def current_player(self, h: Any) -> int: ...
    def legal_actions(self, h: Any) -> list: ...
    def chance_outcomes(self, h: Any) -> list[tuple[Any, float]]: ...
    def apply(self, h: Any, a: Any) -> Any: ...
    def is_terminal(self, h: Any) -> bool: ...
    def returns(self, h: Any) -> float: ...
    def infoset_key(self, h: Any, player: int) -> Any: ...


class KuhnPoker:
    """Kuhn poker: cards J<Q<K (0, 1, 2), ante 1, one bet of 1; actions 0 = pass, 1 = bet.
    The game value for player 0 is -1/18."""

    name = "kuhn_poker"

    def initial(self) -> tuple:
        return ()

    def current_player(self, h: tuple) -> int:
        if len(h) < 2:
            return CHANCE
        return (len(h) - 2) % 2

    def chance_outcomes(self, h: tuple) -> list[tuple[int, float]]:
        left = [c for c in range(3) if c not in h]
        return [(c, 1.0 / len(left)) for c in left]

    def legal_actions(self, h: tuple) -> list[int]:
        return [0, 1]

    def apply(self, h: tuple, a: int) -> tuple:
        return h + (a,)

    def is_terminal(self, h: tuple) -> bool:
        b = h[2:]
        return b in ((0, 0), (1, 1), (1, 0), (0, 1, 0), (0, 1, 1))

    def returns(self, h: tuple) -> float:
        b = h[2:]
        win = 1.0 if h[0] > h[1] else -1.0
        if b == (0, 0):
            return win
        if b == (1, 0):
            return 1.0
        if b == (0, 1, 0):
            return -1.0
        return 2.0 * win  # (1, 1) or (0, 1, 1): showdown for 2

    def infoset_key(self, h: tuple, player: int) -> tuple:
        return (h[player] if len(h) > player else None, h[2:])


FOLD, CALL, RAISE = 0, 1, 2


class LeducPoker:
    """Leduc hold'em (OpenSpiel's ``leduc_poker``): six cards (ranks J, Q, K, two suits; card
    id // 2 is the rank), ante 1, raises of 2 then 4, at most two raises per round, one public
    card after the first round. Actions 0 fold (only facing a bet), 1 call/check, 2 raise."""

    name = "leduc_poker"
    raise_sizes = (2, 4)
    max_raises = 2

    def initial(self) -> tuple:
        return ()

    @staticmethod
    def _rounds(h: tuple) -> tuple[tuple, tuple | None, int | None]:
        """(round-1 actions, round-2 actions or None, public card or None)."""
        bets = h[2:]
        r1 = []
        i = 0
        while i < len(bets):
            r1.append(bets[i])
            i += 1
            if LeducPoker._round_done(r1):
                break
        if i < len(bets) and LeducPoker._round_done(r1) and r1[-1] != FOLD:
            return tuple(r1), tuple(bets[i + 1 :]), bets[i]
        return tuple(r1), None, None

    @staticmethod
    def _round_done(actions: list | tuple) -> bool:
        if not actions:
            return False
        if actions[-1] == FOLD:
            return True
        return len(actions) >= 2 and actions[-1] == CALL

    def current_player(self, h: tuple) -> int:
        if len(h) < 2:
            return CHANCE
        r1, r2, public = self._rounds(h)
        if r2 is None:
            if self._round_done(r1):
                return CHANCE  # public card
            return len(r1) % 2
        return len(r2) % 2

    def chance_outcomes(self, h: tuple) -> list[tuple[int, float]]:
        used = set(h[:2])  # the private cards; the public card is dealt from the rest
        left = [c for c in range(6) if c not in used]
        return [(c, 1.0 / len(left)) for c in left]

    def legal_actions(self, h: tuple) -> list[int]:
        r1, r2, _ = self._rounds(h)
        acts = r1 if r2 is None else r2
        raises = sum(1 for a in acts if a == RAISE)
        facing = raises > 0 and acts[-1] == RAISE
        out = [FOLD] if facing else []
        out.append(CALL)
        if raises < self.max_raises:
            out.append(RAISE)
        return out

    def apply(self, h: tuple, a: int) -> tuple:
        return h + (a,)

    def is_terminal(self, h: tuple) -> bool:
        if len(h) < 2:
            return False
        r1, r2, _ = self._rounds(h)
        if r2 is None:
            return bool(r1) and r1[-1] == FOLD
        return self._round_done(r2)

    def _contributions(self, h: tuple) -> list[float]:
        r1, r2, _ = self._rounds(h)
        put = [1.0, 1.0]
        for rnd, acts in enumerate((r1, r2 or ())):
            for i, a in enumerate(acts):
                p = i % 2
                if a == CALL:
                    put[p] = max(put)
                elif a == RAISE:
                    put[p] = max(put) + self.raise_sizes[rnd]
        return put

    def returns(self, h: tuple) -> float:
        r1, r2, public = self._rounds(h)
        put = self._contributions(h)
        acts = r1 if r2 is None else r2
        if acts[-1] == FOLD:
            folder = (len(acts) - 1) % 2
            return -put[0] if folder == 0 else put[1]
        ranks = [c // 2 for c in h[:2]]
        pub = public // 2
        strength = [(r == pub, r) for r in ranks]
        if strength[0] == strength[1]:
            return 0.0
        return put[1] if strength[0] > strength[1] else -put[0]

    def infoset_key(self, h: tuple, player: int) -> tuple:
        private = h[player] if len(h) > player else None
        return (private, h[2:])
