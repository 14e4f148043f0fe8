"""The paper's topic taxonomy (App. B, Table 3: 6 main categories, 21 sub-categories), the
question types the synthesis step samples from (the official release's three task kinds), and
the attribute vocabulary that the offline components share with the toy game world."""

from __future__ import annotations

TAXONOMY: dict[str, tuple[str, ...]] = {
    "Purchase Related": (
        "Purchase Consultation",
        "Version Comparison",
        "Platform Selection",
        "Preorder Rewards",
    ),
    "Technical Support": (
        "System Requirements",
        "Performance Issues",
        "Crash & Errors",
        "Network Connection",
    ),
    "Game Content": (
        "Gameplay Mechanics",
        "Content & Features",
        "Progress Guide",
        "Version Updates",
    ),
    "Social Interaction": ("Team Cooperation", "Friend System", "Community Events"),
    "After-sales Service": ("Refund Policy", "Customer Support", "Account Issues"),
    "Review & Discussion": (
        "Review Questions",
        "Comparison Discussion",
        "Expectation & Concern",
    ),
}

#: the 21 sub-topics in table order; a topic distribution is a vector over this order
TOPICS: tuple[str, ...] = tuple(t for subs in TAXONOMY.values() for t in subs)
TOPIC_INDEX: dict[str, int] = {t: i for i, t in enumerate(TOPICS)}
MAIN_CATEGORY: dict[str, str] = {t: main for main, subs in TAXONOMY.items() for t in subs}

#: question types (the release's task kinds: extraction, multi-hop reasoning, comparison)
QUESTION_TYPES: tuple[str, ...] = ("extractive", "multi-hop", "comparative")

#: entity types of the toy world and their placeholder tags
ENTITY_TYPES: tuple[str, ...] = ("WEAPON", "ITEM", "BOSS", "LOCATION", "SKILL", "PLATFORM")

#: attribute -> (the phrase written in snippets, entity types that carry it, value entity type
#: or None for a plain value, cue words that ask for it in a question)
ATTRIBUTES: dict[str, tuple[str, tuple[str, ...], str | None, tuple[str, ...]]] = {
    "damage": ("damage", ("WEAPON",), None, ("damage", "hits", "dps")),
    "price": ("price in gold", ("WEAPON", "ITEM", "PLATFORM"), None, ("price", "cost", "gold")),
    "level": ("level requirement", ("WEAPON", "LOCATION", "SKILL"), None, ("level",)),
    "cooldown": ("cooldown in seconds", ("SKILL",), None, ("cooldown",)),
    "drop": ("drop source", ("ITEM",), "BOSS", ("drop", "drops", "farm")),
    "location": ("location", ("BOSS",), "LOCATION", ("where", "area", "located")),
    "health": ("health", ("BOSS",), None, ("health", "hp", "tanky")),
    "gpu": ("minimum GPU", ("PLATFORM",), None, ("gpu", "graphics")),
}
ATTRIBUTE_BY_PHRASE: dict[str, str] = {v[0]: k for k, v in ATTRIBUTES.items()}
