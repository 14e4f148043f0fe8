"""``ToyGameWorld``: an offline live-service game whose knowledge and whose players both move.

Entities (weapons, items, bosses, locations, skills, platforms) carry attributes; a wiki page
per entity is written at launch; patches on chosen days change one attribute of a random share
of entities and publish one patch note per change; players ask about ~600 questions a month
whose topic mix is piecewise constant with planted change points, phrased with the shipped
question patterns over the paper's 21 sub-topics and ~20 personas. The ground truth of every
attribute is queryable at any day, which is what the stale-rate metric checks tuples against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.ner import GazetteerNER
from iclr26.knowledge.chronoplay.records import CommunityQuestion, Persona, Snippet
from iclr26.knowledge.chronoplay.taxonomy import ATTRIBUTES, ENTITY_TYPES, TOPICS

DAYS_PER_MONTH = 30.0

_SYLLABLES = (
    "ar",
    "bel",
    "cor",
    "dra",
    "el",
    "fen",
    "gor",
    "hal",
    "ith",
    "jor",
    "kel",
    "lum",
    "mor",
    "nar",
    "os",
    "pyr",
    "quel",
    "ros",
    "syl",
    "tor",
    "ul",
    "vor",
    "wyn",
    "xan",
    "yr",
    "zel",
)
_NOUNS = {
    "WEAPON": ("Blade", "Axe", "Bow", "Spear", "Hammer"),
    "ITEM": ("Amulet", "Ring", "Charm", "Tonic", "Relic"),
    "BOSS": ("Warden", "Tyrant", "Matriarch", "Colossus"),
    "LOCATION": ("Marsh", "Keep", "Ridge", "Hollow", "Citadel"),
    "SKILL": ("Strike", "Ward", "Surge", "Volley"),
    "PLATFORM": ("Station", "Deck", "Console"),
}
_GPUS = (
    "GTX 960",
    "GTX 1050",
    "GTX 1060",
    "GTX 1660",
    "RTX 2060",
    "RTX 2070",
    "RTX 3060",
    "RTX 3070",
    "RTX 4060",
    "RX 580",
    "RX 6600",
    "RX 7600",
)
_SHARE = {"WEAPON": 70, "ITEM": 70, "BOSS": 40, "LOCATION": 40, "SKILL": 60, "PLATFORM": 20}

#: shipped community question patterns: (sub-topic, text with typed placeholders)
QUESTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("Purchase Consultation", "How much does [WEAPON] cost in the shop?"),
    ("Purchase Consultation", "Is [ITEM] worth the gold, what is the price right now?"),
    ("Purchase Consultation", "What is the price of the [PLATFORM] edition?"),
    ("Purchase Consultation", "How much gold do I need to buy [WEAPON]?"),
    ("Version Comparison", "Which has more damage, [WEAPON] or [WEAPON]?"),
    ("Version Comparison", "Which costs more gold, the [PLATFORM] or the [PLATFORM] edition?"),
    ("Version Comparison", "Does [ITEM] or [ITEM] have the higher price?"),
    ("Platform Selection", "What graphics card is the minimum for [PLATFORM]?"),
    ("Platform Selection", "Which GPU do I need at least to run it on [PLATFORM]?"),
    ("Platform Selection", "What is the price of the game on [PLATFORM]?"),
    ("Preorder Rewards", "Which boss drops the preorder bonus [ITEM]?"),
    ("Preorder Rewards", "Where is the boss that drops the preorder [ITEM] located?"),
    ("Preorder Rewards", "What is the price of the preorder [ITEM] if I missed it?"),
    ("System Requirements", "What is the minimum GPU for [PLATFORM]?"),
    ("System Requirements", "Does [PLATFORM] need a strong graphics card, which one at least?"),
    ("System Requirements", "What GPU spec is the minimum to play on [PLATFORM]?"),
    ("Performance Issues", "The game stutters on [PLATFORM], what GPU is the minimum?"),
    ("Performance Issues", "Fights against [BOSS] lag badly, how much health does it have?"),
    ("Performance Issues", "Casting [SKILL] freezes my screen, what is its cooldown?"),
    ("Crash & Errors", "The game crashes when I use [SKILL], what cooldown should it have?"),
    ("Crash & Errors", "I crash entering [LOCATION], what level is it?"),
    ("Crash & Errors", "Crash after equipping [WEAPON], what level requirement does it have?"),
    ("Network Connection", "Disconnects while farming [ITEM], which boss is it from?"),
    ("Network Connection", "High ping in [LOCATION], what level should I be there?"),
    ("Network Connection", "Server lag during the [BOSS] fight, where is it located?"),
    ("Gameplay Mechanics", "How much damage does [WEAPON] deal?"),
    ("Gameplay Mechanics", "What is the cooldown of [SKILL] in seconds?"),
    ("Gameplay Mechanics", "How much health does [BOSS] have?"),
    ("Gameplay Mechanics", "What level do I need to unlock [SKILL]?"),
    ("Content & Features", "Where can I find [BOSS] in the world?"),
    ("Content & Features", "Which boss drops [ITEM] in the current version?"),
    ("Content & Features", "What level requirement does [LOCATION] have?"),
    ("Progress Guide", "What level is the area where [BOSS] is located?"),
    ("Progress Guide", "Where is the boss that drops [ITEM] located?"),
    ("Progress Guide", "How much health does the boss that drops [ITEM] have?"),
    ("Progress Guide", "What level should I be before I go to [LOCATION]?"),
    ("Version Updates", "What is the damage of [WEAPON] after the latest patch?"),
    ("Version Updates", "Did the last patch change the cooldown of [SKILL]? What is it now?"),
    ("Version Updates", "After the update, what is the price of [ITEM]?"),
    ("Version Updates", "Which boss drops [ITEM] since the new patch?"),
    ("Team Cooperation", "For a team run, where is [BOSS] located?"),
    ("Team Cooperation", "How much health does [BOSS] have for a four player squad?"),
    ("Team Cooperation", "My team wants [ITEM], where is the boss that drops it?"),
    ("Friend System", "My friend asks what level [LOCATION] needs, do you know?"),
    ("Friend System", "Can I gift [WEAPON] to a friend, and what is its price?"),
    ("Friend System", "A friend invited me to fight [BOSS], how much health does it have?"),
    ("Community Events", "Does the event boss that drops [ITEM] have a lot of health?"),
    ("Community Events", "During the event, where is [BOSS] located?"),
    ("Community Events", "In the event shop, what does [ITEM] cost in gold?"),
    ("Refund Policy", "I bought [WEAPON] by mistake, what was its price for a refund?"),
    ("Refund Policy", "Can I refund the [PLATFORM] edition, what did it cost?"),
    ("Refund Policy", "For a refund request, what is the price of [ITEM]?"),
    ("Customer Support", "Support said [SKILL] is bugged, what should its cooldown be?"),
    ("Customer Support", "My [WEAPON] shows odd damage, what is the real value?"),
    ("Customer Support", "Who do I contact if [ITEM] never drops, which boss is it from?"),
    ("Account Issues", "My account lost [WEAPON], what level requirement did it have?"),
    ("Account Issues", "After an account reset, what level do I need for [SKILL]?"),
    ("Account Issues", "Linking my account on [PLATFORM], which GPU is the minimum?"),
    ("Review Questions", "Is [WEAPON] or [WEAPON] better for damage?"),
    ("Review Questions", "Does [BOSS] or [BOSS] have more health?"),
    ("Review Questions", "Honest review, how much damage does [WEAPON] really do?"),
    ("Comparison Discussion", "Which skill has the longer cooldown, [SKILL] or [SKILL]?"),
    ("Comparison Discussion", "Which needs the higher level, [LOCATION] or [LOCATION]?"),
    ("Comparison Discussion", "Which deals more damage, [WEAPON] or [WEAPON]?"),
    ("Expectation & Concern", "Will the next patch nerf [WEAPON]? What is its damage now?"),
    ("Expectation & Concern", "Worried about [BOSS], how much health does it have now?"),
    ("Expectation & Concern", "Is [SKILL] getting a longer cooldown, what is it currently?"),
)

#: shipped personas (text, the phrase a question of theirs may open with)
PERSONAS: tuple[Persona, ...] = tuple(
    Persona(text, lead)
    for text, lead in (
        ("A returning player catching up after a long break from the game", "Back after a break,"),
        ("A new player in the first week who is still learning the basics", "New here,"),
        ("A competitive player who min-maxes weapon damage for duels", "For ranked duels,"),
        ("A collector who farms every rare item and relic drop", "As a collector,"),
        ("A budget player on an old graphics card worried about performance", "On a budget PC,"),
        ("A speedrunner who plans the fastest route through every area", "For my speedrun,"),
        ("A guild leader organising weekly team raids against bosses", "For our guild raid,"),
        ("A solo player who avoids groups and plays offline", "Playing solo,"),
        ("A console player who never plays on PC", "On console,"),
        ("A parent who buys the game and items for a child", "For my kid,"),
        ("A lore fan who reads every patch note and wiki page", "Lore question,"),
        ("A streamer who tests new patches live for viewers", "On stream today,"),
        ("A casual weekend player with little time", "Quick question,"),
        ("A trader who buys and sells items for gold", "As a trader,"),
        ("A healer main who cares about skill cooldowns", "As a healer main,"),
        ("A tank player who studies boss health and damage", "As a tank,"),
        ("A player from a region with a poor network connection", "With my bad ping,"),
        ("A completionist who wants every achievement and area", "For completion,"),
        ("A skeptical reviewer comparing this game with others", "Honestly,"),
        ("A preorder customer checking the bonus rewards", "As a preorder buyer,"),
    )
)


@dataclass(frozen=True)
class Entity:
    name: str
    type: str


def _fmt(value) -> str:
    return value if isinstance(value, str) else str(int(value))


class ToyGameWorld:
    """A simulated live-service game (see the module docstring).

    ``months`` of timeline, ``n_entities`` entities, ``n_patches`` patches each changing one
    attribute of ``patch_fraction`` of the entities, ``n_shifts`` planted interest change
    points that multiply the weight of ``shift_topics`` random sub-topics by ``shift_boost``,
    ``questions_per_month`` community questions. Everything is a function of ``seed``."""

    def __init__(
        self,
        seed: int = 0,
        months: float = 18,
        n_patches: int = 6,
        n_entities: int = 300,
        patch_fraction: float = 0.08,
        n_shifts: int = 3,
        questions_per_month: float = 600,
        shift_topics: int = 3,
        shift_boost: float = 3.0,
        topic_concentration: float = 5.0,
        persona_rate: float = 0.4,
    ):
        self.seed = V.check_int(seed, "seed", low=0)
        self.months = V.check_scalar(months, "months", low=1.0)
        self.n_patches = V.check_int(n_patches, "n_patches", low=0)
        self.n_entities = V.check_int(n_entities, "n_entities", low=12, high=600)
        self.patch_fraction = V.check_probability(patch_fraction, "patch_fraction")
        self.n_shifts = V.check_int(n_shifts, "n_shifts", low=0)
        self.questions_per_month = V.check_scalar(
            questions_per_month, "questions_per_month", low=0.0, low_open=True
        )
        self.shift_topics = V.check_int(shift_topics, "shift_topics", low=1, high=len(TOPICS))
        self.shift_boost = V.check_scalar(shift_boost, "shift_boost", low=1.0)
        self.topic_concentration = V.check_scalar(
            topic_concentration, "topic_concentration", low=0.0, low_open=True
        )
        self.persona_rate = V.check_probability(persona_rate, "persona_rate")
        self.end = self.months * DAYS_PER_MONTH
        rng = np.random.default_rng([self.seed, 11])
        self._make_entities(rng)
        self._make_patches(rng)
        self._make_interest(rng)
        self.ner = GazetteerNER(self.type_of)

    # ------------------------------------------------------------------ entities and facts
    def _make_entities(self, rng: np.random.Generator) -> None:
        total = sum(_SHARE.values())
        counts = {t: max(2, round(self.n_entities * s / total)) for t, s in _SHARE.items()}
        stems = [a.capitalize() + b for a in _SYLLABLES for b in _SYLLABLES if a != b]
        order = rng.permutation(len(stems))
        self.entities: list[Entity] = []
        self.by_type: dict[str, list[str]] = {t: [] for t in ENTITY_TYPES}
        k = 0
        for etype in ENTITY_TYPES:
            nouns = _NOUNS[etype]
            for j in range(counts[etype]):
                stem = stems[order[k]]
                k += 1
                noun = nouns[j % len(nouns)]
                name = f"{noun} {stem}" if etype == "BOSS" else f"{stem} {noun}"
                self.entities.append(Entity(name, etype))
                self.by_type[etype].append(name)
        self.type_of = {e.name: e.type for e in self.entities}
        # history[(name, attr)] = [(day, value), ...] in time order
        self.history: dict[tuple[str, str], list[tuple[float, object]]] = {}
        for e in self.entities:
            for attr in self.attributes_of(e.type):
                self.history[(e.name, attr)] = [(0.0, self._draw(attr, rng))]

    @staticmethod
    def attributes_of(etype: str) -> list[str]:
        return [a for a, spec in ATTRIBUTES.items() if etype in spec[1]]

    def _draw(self, attr: str, rng: np.random.Generator, old=None):
        for _ in range(50):
            if attr == "damage":
                v = int(rng.integers(20, 400))
            elif attr == "price":
                v = int(rng.integers(5, 400)) * 10
            elif attr == "level":
                v = int(rng.integers(1, 80))
            elif attr == "cooldown":
                v = int(rng.integers(2, 180))
            elif attr == "health":
                v = int(rng.integers(10, 900)) * 100
            elif attr == "gpu":
                v = str(rng.choice(_GPUS))
            elif attr == "drop":
                v = str(rng.choice(self.by_type["BOSS"]))
            elif attr == "location":
                v = str(rng.choice(self.by_type["LOCATION"]))
            else:  # pragma: no cover - the table above is complete
                raise KeyError(attr)
            if v != old:
                return v
        return v

    @property
    def entity_names(self) -> list[str]:
        return [e.name for e in self.entities]

    def value(self, entity: str, attr: str, day: float):
        """Ground truth of ``attr`` of ``entity`` on ``day`` (after that day's patch)."""
        hist = self.history[(entity, attr)]
        current = hist[0][1]
        for d, v in hist:
            if d <= day:
                current = v
        return current

    def _sentence(self, entity: str, attr: str, value) -> str:
        return f"{entity} {ATTRIBUTES[attr][0]} is {_fmt(value)}."

    def _snippet(self, content: str, day: float, sid: str, source: str) -> Snippet:
        return Snippet(content, float(day), frozenset(self.ner(content)), sid, source)

    def authority_snippets(self) -> list[Snippet]:
        """The launch wiki: one page per entity, every attribute as one sentence."""
        out = []
        for i, e in enumerate(self.entities):
            article = "an" if e.type[0] in "AEIOU" else "a"
            parts = [f"{e.name} is {article} {e.type.lower()}."]
            parts += [
                self._sentence(e.name, a, self.value(e.name, a, 0.0))
                for a in self.attributes_of(e.type)
            ]
            out.append(self._snippet(" ".join(parts), 0.0, f"wiki-{i}", "wiki"))
        return out

    # ------------------------------------------------------------------ patches
    def _make_patches(self, rng: np.random.Generator) -> None:
        self.patch_days: list[float] = []
        self._patch_notes: list[list[tuple[str, str, object, object]]] = []
        if self.n_patches == 0:
            return
        span = np.linspace(0.1 * self.end, 0.95 * self.end, self.n_patches)
        jitter = rng.uniform(-0.02, 0.02, self.n_patches) * self.end
        days = np.sort(np.round(span + jitter))
        n_change = max(1, round(self.patch_fraction * len(self.entities)))
        for day in days:
            changed = rng.choice(len(self.entities), size=n_change, replace=False)
            notes = []
            for idx in changed:
                e = self.entities[int(idx)]
                attr = str(rng.choice(self.attributes_of(e.type)))
                old = self.value(e.name, attr, float(day))
                new = self._draw(attr, rng, old=old)
                self.history[(e.name, attr)].append((float(day), new))
                notes.append((e.name, attr, old, new))
            self.patch_days.append(float(day))
            self._patch_notes.append(notes)

    def announcements(self) -> list[tuple[float, list[Snippet]]]:
        """``[(day, patch-note snippets), ...]``: one note per changed attribute."""
        out = []
        for p, (day, notes) in enumerate(zip(self.patch_days, self._patch_notes)):
            snippets = []
            for j, (name, attr, old, new) in enumerate(notes):
                text = (
                    f"Patch 1.{p + 1} notes: {name} {ATTRIBUTES[attr][0]} is now {_fmt(new)} "
                    f"(was {_fmt(old)})."
                )
                snippets.append(self._snippet(text, day, f"patch-{p + 1}-{j}", "patch"))
            out.append((day, snippets))
        return out

    # ------------------------------------------------------------------ players
    def _make_interest(self, rng: np.random.Generator) -> None:
        self.base_mix = rng.dirichlet(np.full(len(TOPICS), self.topic_concentration))
        self.change_points: list[float] = []
        self.mixes: list[np.ndarray] = [self.base_mix]
        if self.n_shifts == 0:
            return
        pos = np.arange(1, self.n_shifts + 1) / (self.n_shifts + 1) * self.end
        pos += rng.uniform(-0.03, 0.03, self.n_shifts) * self.end
        self.change_points = [float(np.round(p)) for p in pos]
        for _ in range(self.n_shifts):
            boosted = rng.choice(len(TOPICS), size=self.shift_topics, replace=False)
            mix = self.base_mix.copy()
            mix[boosted] *= self.shift_boost
            self.mixes.append(mix / mix.sum())

    def topic_mix(self, day: float, drift: bool = True) -> np.ndarray:
        """The planted topic distribution on ``day``."""
        if not drift:
            return self.base_mix
        k = int(np.searchsorted(np.asarray(self.change_points), day, side="right"))
        return self.mixes[k]

    def community_questions(
        self, drift: bool = True, stream_seed: int | None = None
    ) -> list[CommunityQuestion]:
        """The timestamped community stream; ``drift=False`` keeps the launch mix all along
        (the no-drift stream the detector threshold is calibrated on), ``stream_seed`` draws
        an independent stream from the same world."""
        drift = V.check_bool(drift, "drift")
        rng = np.random.default_rng([self.seed, 23 if stream_seed is None else 1000 + stream_seed])
        n = int(rng.poisson(self.questions_per_month * self.months))
        days = np.sort(rng.uniform(0.0, self.end, n))
        seg = (
            np.searchsorted(np.asarray(self.change_points), days, side="right")
            if drift
            else (np.zeros(n, dtype=int))
        )
        topics = np.empty(n, dtype=int)
        for k, mix in enumerate(self.mixes if drift else [self.base_mix]):
            sel = np.flatnonzero(seg == k)
            topics[sel] = rng.choice(len(TOPICS), size=sel.size, p=mix)
        by_topic: dict[int, list[str]] = {}
        for topic, text in QUESTION_PATTERNS:
            by_topic.setdefault(TOPICS.index(topic), []).append(text)
        pattern_pick = rng.random(n)
        persona_pick = rng.integers(0, len(PERSONAS), n)
        use_persona = rng.random(n) < self.persona_rate
        out = []
        for i in range(n):
            options = by_topic[topics[i]]
            text = options[int(pattern_pick[i] * len(options))]
            text = self.fill(text, rng)
            persona = None
            if use_persona[i]:
                p = PERSONAS[persona_pick[i]]
                persona = p.text
                text = f"{p.lead} {text[0].lower()}{text[1:]}"
            out.append(CommunityQuestion(text, float(days[i]), TOPICS[topics[i]], persona))
        return out

    def fill(self, template: str, rng: np.random.Generator) -> str:
        """Replace each ``[TYPE]`` placeholder by a distinct random entity of that type."""
        for etype in ENTITY_TYPES:
            tag = f"[{etype}]"
            n = template.count(tag)
            if n:
                pool = self.by_type[etype]
                picks = (
                    rng.choice(len(pool), size=n, replace=False)
                    if n > 1
                    else [int(rng.integers(len(pool)))]
                )
                for i in picks:
                    template = template.replace(tag, pool[int(i)], 1)
        return template

    # ------------------------------------------------------------------ checking tuples
    def true_answer(self, meta: dict, day: float) -> str | None:
        """The answer a tuple's asked facts have on ``day`` (``None`` if the tuple carries no
        checkable facts)."""
        kind = meta.get("kind")
        ents = meta.get("entities") or []
        rel = meta.get("relation") or []
        if not ents or not rel:
            return None
        if kind == "extractive":
            return _fmt(self.value(ents[0], rel[0], day))
        if kind == "multi-hop":
            mid = self.value(ents[0], rel[0], day)
            return _fmt(self.value(str(mid), rel[1], day))
        if kind == "comparative":
            a, b = (self.value(e, rel[0], day) for e in ents[:2])
            if a == b:
                return "equal"
            return ents[0] if a > b else ents[1]
        return None

    def is_stale(self, qa, day: float) -> bool:
        """True when the tuple's gold answer is not the simulator's ground truth on ``day``."""
        truth = self.true_answer(qa.meta, day)
        return truth is not None and truth != qa.answer
