"""The vocabulary DIAL+ reads its detected directions with: concept words a person would use
to name a spurious feature (backgrounds, places, textures, colours, objects), embedded with
the model's text tower as ``"a photo of {word}"``. Any other list can be passed instead."""

VOCAB: tuple[str, ...] = (
    # backgrounds and places
    "water",
    "land",
    "background",
    "sea",
    "ocean",
    "lake",
    "river",
    "beach",
    "sand",
    "grass",
    "forest",
    "field",
    "desert",
    "sky",
    "road",
    "city",
    "indoors",
    "outdoors",
    "snow",
    "mud",
    # textures and patterns
    "waves",
    "grain",
    "stripes",
    "dots",
    "noise",
    "texture",
    "smooth",
    "rough",
    "pattern",
    # colours
    "blue",
    "green",
    "brown",
    "red",
    "yellow",
    "white",
    "black",
    "grey",
    "orange",
    "purple",
    # shapes and objects
    "circle",
    "square",
    "triangle",
    "star",
    "cross",
    "ring",
    "arrow",
    "hexagon",
    "pentagon",
    "shape",
    "object",
    "bird",
    "boat",
    "tree",
    "rock",
    "person",
    "face",
    "hair",
    "glasses",
    # attributes
    "bright",
    "dark",
    "large",
    "small",
    "light",
    "shadow",
    "blurry",
    "sharp",
)


def vocab_prompts(words=VOCAB) -> list[str]:
    """``"a photo of {word}"`` for every word."""
    from iclr26.vision.dial.text import check_texts

    return [f"a photo of {w}" for w in check_texts(words, "words")]
