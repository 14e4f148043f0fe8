"""Bad-input cases of the internsvg room (tokens, canonical SVG, rendering, SMIL, metrics,
procedural data, curriculum, training helpers)."""

import numpy as np

from iclr26.llm.internsvg import (
    CurriculumSchedule,
    ProceduralSVG,
    SVGTokenizer,
    add_svg_tokens,
    animation_duration,
    canonicalize_svg,
    evaluate_text_to_svg,
    format_number,
    generate_completions,
    image_metrics,
    mcq_predict,
    pack_numbers,
    parse_svg,
    prepare_model,
    render_svg,
    run_curriculum,
    sample_animation_frames,
    sarena_metrics,
    svg_at_time,
    text_to_svg_prompt,
    tiny_ssl_feature_fn,
)

NAN, INF = float("nan"), float("inf")
SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 128 128"><rect width="9" height="9"/></svg>'
IMG = np.zeros((1, 16, 16, 3), dtype=np.uint8)
DATA = {("icon", "text_to_svg"): [("p", "c")], ("chemistry", "text_to_svg"): [("p", "c")]}
STAGE = {"domains": ["icon"], "tasks": ["text_to_svg"], "steps": 2, "lr": 1e-4}


class _FakeBase:
    """The smallest tokenizer protocol: 10 ids, encode/decode."""

    def __len__(self):
        return 10

    def encode(self, text, add_special_tokens=False):
        return [1]

    def decode(self, ids, **kw):
        return "x"


def _img_nan():
    x = np.zeros((1, 16, 16, 3))
    x[0, 0, 0, 0] = NAN
    return x


CASES = [
    # tokens
    ("SVGTokenizer", "type", lambda: SVGTokenizer(object()), TypeError, "base"),
    (
        "SVGTokenizer",
        "range",
        lambda: SVGTokenizer(_FakeBase(), id_offset=5),
        ValueError,
        "id_offset",
    ),
    (
        "SVGTokenizer",
        "range",
        lambda: SVGTokenizer(_FakeBase(), id_offset=NAN),
        TypeError,
        "id_offset",
    ),
    (
        "add_svg_tokens",
        "range",
        lambda: add_svg_tokens(None, None, init="zeros"),
        ValueError,
        "init",
    ),
    ("add_svg_tokens", "range", lambda: add_svg_tokens(None, None, seed=-1), ValueError, "seed"),
    ("add_svg_tokens", "type", lambda: add_svg_tokens(object(), None), TypeError, "tokenizer"),
    ("add_svg_tokens", "type", lambda: add_svg_tokens(_FakeBase(), object()), TypeError, "model"),
    # canonical text
    ("canonicalize_svg", "type", lambda: canonicalize_svg(None), TypeError, "svg"),
    ("canonicalize_svg", "empty", lambda: canonicalize_svg("  "), ValueError, "svg"),
    ("canonicalize_svg", "other", lambda: canonicalize_svg("<svg><rect"), ValueError, "svg"),
    (
        "canonicalize_svg",
        "range",
        lambda: canonicalize_svg(SVG, decimals=-1),
        ValueError,
        "decimals",
    ),
    ("parse_svg", "type", lambda: parse_svg(5), TypeError, "svg"),
    ("parse_svg", "other", lambda: parse_svg("<html/>"), ValueError, "svg"),
    ("format_number", "nan", lambda: format_number(NAN), ValueError, "value"),
    ("format_number", "inf", lambda: format_number(INF), ValueError, "value"),
    ("format_number", "type", lambda: format_number("1.5"), TypeError, "value"),
    ("pack_numbers", "type", lambda: pack_numbers(3), TypeError, "value"),
    ("pack_numbers", "range", lambda: pack_numbers("M1 2", decimals=9), ValueError, "decimals"),
    # rendering and SMIL
    ("render_svg", "type", lambda: render_svg(123), TypeError, "svg"),
    ("render_svg", "range", lambda: render_svg(SVG, size=0), ValueError, "size"),
    ("render_svg", "nan", lambda: render_svg(SVG, size=NAN), TypeError, "size"),
    ("render_svg", "type", lambda: render_svg(SVG, return_ok=1), TypeError, "return_ok"),
    ("svg_at_time", "nan", lambda: svg_at_time(SVG, NAN), ValueError, "t"),
    ("svg_at_time", "range", lambda: svg_at_time(SVG, -1.0), ValueError, "t"),
    ("svg_at_time", "other", lambda: svg_at_time("<svg", 0.0), ValueError, "svg"),
    (
        "sample_animation_frames",
        "nan",
        lambda: sample_animation_frames(SVG, [NAN]),
        ValueError,
        "times",
    ),
    (
        "sample_animation_frames",
        "inf",
        lambda: sample_animation_frames(SVG, [INF]),
        ValueError,
        "times",
    ),
    (
        "sample_animation_frames",
        "empty",
        lambda: sample_animation_frames(SVG, []),
        ValueError,
        "times",
    ),
    (
        "sample_animation_frames",
        "shape",
        lambda: sample_animation_frames(SVG, [[0.0]]),
        ValueError,
        "times",
    ),
    (
        "sample_animation_frames",
        "range",
        lambda: sample_animation_frames(SVG, [-1.0]),
        ValueError,
        "times",
    ),
    (
        "sample_animation_frames",
        "type",
        lambda: sample_animation_frames(None, [0.0]),
        TypeError,
        "svg",
    ),
    ("animation_duration", "type", lambda: animation_duration(5), TypeError, "svg"),
    (
        "animation_duration",
        "nan",
        lambda: animation_duration(SVG, default=NAN),
        ValueError,
        "default",
    ),
    # metrics
    ("image_metrics", "nan", lambda: image_metrics(_img_nan(), IMG), ValueError, "pred_images"),
    ("image_metrics", "shape", lambda: image_metrics(IMG[0], IMG[0]), ValueError, "pred_images"),
    (
        "image_metrics",
        "shape",
        lambda: image_metrics(IMG, np.zeros((2, 16, 16, 3), np.uint8)),
        ValueError,
        "pred_images",
    ),
    (
        "image_metrics",
        "shape",
        lambda: image_metrics(IMG[:, :5, :5], IMG[:, :5, :5]),
        ValueError,
        "pred_images",
    ),
    ("image_metrics", "range", lambda: image_metrics(IMG + 300.0, IMG), ValueError, "pred_images"),
    (
        "image_metrics",
        "dtype",
        lambda: image_metrics(IMG.astype(str), IMG),
        TypeError,
        "pred_images",
    ),
    ("image_metrics", "empty", lambda: image_metrics(IMG[:0], IMG[:0]), ValueError, "pred_images"),
    ("sarena_metrics", "range", lambda: sarena_metrics("fid", [SVG], [SVG]), ValueError, "task"),
    ("sarena_metrics", "empty", lambda: sarena_metrics("text_to_svg", [], []), ValueError, "preds"),
    (
        "sarena_metrics",
        "shape",
        lambda: sarena_metrics("text_to_svg", [SVG], [SVG, SVG]),
        ValueError,
        "preds",
    ),
    (
        "sarena_metrics",
        "type",
        lambda: sarena_metrics("text_to_svg", [None], [SVG]),
        TypeError,
        "preds",
    ),
    (
        "sarena_metrics",
        "nan",
        lambda: sarena_metrics("text_to_svg", [SVG], [SVG], size=NAN),
        TypeError,
        "size",
    ),
    (
        "sarena_metrics",
        "other",
        lambda: sarena_metrics("text_to_svg", [SVG], ["<svg"]),
        ValueError,
        "refs",
    ),
    (
        "sarena_metrics",
        "other",
        lambda: sarena_metrics("understanding", ["A"], ["Z"]),
        ValueError,
        "refs",
    ),
    (
        "sarena_metrics",
        "range",
        lambda: sarena_metrics("text_to_sani", [SVG], [SVG], n_frames=0),
        ValueError,
        "n_frames",
    ),
    # procedural data
    ("ProceduralSVG", "range", lambda: ProceduralSVG(seed=-1), ValueError, "seed"),
    ("ProceduralSVG", "nan", lambda: ProceduralSVG(stroke_prob=NAN), ValueError, "stroke_prob"),
    (
        "ProceduralSVG",
        "range",
        lambda: ProceduralSVG(icon_shapes=(3, 1)),
        ValueError,
        "icon_shapes",
    ),
    ("ProceduralSVG", "range", lambda: ProceduralSVG().sample(0), ValueError, "n"),
    ("ProceduralSVG", "range", lambda: ProceduralSVG().sample(1, "logo"), ValueError, "domain"),
    (
        "ProceduralSVG",
        "empty",
        lambda: ProceduralSVG.examples([], "text_to_svg"),
        ValueError,
        "samples",
    ),
    (
        "ProceduralSVG",
        "range",
        lambda: ProceduralSVG.examples([None], "caption"),
        ValueError,
        "task",
    ),
    ("text_to_svg_prompt", "empty", lambda: text_to_svg_prompt(" "), ValueError, "description"),
    # curriculum
    (
        "CurriculumSchedule",
        "empty",
        lambda: CurriculumSchedule({}, [STAGE]),
        ValueError,
        "datasets",
    ),
    ("CurriculumSchedule", "empty", lambda: CurriculumSchedule(DATA, []), ValueError, "stages"),
    (
        "CurriculumSchedule",
        "range",
        lambda: CurriculumSchedule(DATA, [{**STAGE, "steps": 0}]),
        ValueError,
        "steps",
    ),
    (
        "CurriculumSchedule",
        "nan",
        lambda: CurriculumSchedule(DATA, [{**STAGE, "lr": NAN}]),
        ValueError,
        "lr",
    ),
    (
        "CurriculumSchedule",
        "range",
        lambda: CurriculumSchedule(DATA, [STAGE], resample="up"),
        ValueError,
        "resample",
    ),
    (
        "CurriculumSchedule",
        "other",
        lambda: CurriculumSchedule(DATA, [{**STAGE, "mix": {"chem": 1}}]),
        ValueError,
        "mix",
    ),
    (
        "CurriculumSchedule",
        "other",
        lambda: CurriculumSchedule(DATA, [{**STAGE, "domains": ["icon", "x"]}]),
        ValueError,
        "domains",
    ),
    (
        "CurriculumSchedule",
        "range",
        lambda: CurriculumSchedule(DATA, [STAGE], batch=0),
        ValueError,
        "batch",
    ),
    (
        "run_curriculum",
        "type",
        lambda: run_curriculum(None, None, "schedule"),
        TypeError,
        "schedule",
    ),
    # training helpers
    ("prepare_model", "range", lambda: prepare_model(None, None, "bpe"), ValueError, "condition"),
    (
        "generate_completions",
        "empty",
        lambda: generate_completions(None, None, [], 4),
        ValueError,
        "prompts",
    ),
    (
        "generate_completions",
        "range",
        lambda: generate_completions(None, None, ["a"], 0),
        ValueError,
        "max_new_tokens",
    ),
    (
        "generate_completions",
        "range",
        lambda: generate_completions(None, None, ["a"], 4, batch=0),
        ValueError,
        "batch",
    ),
    (
        "evaluate_text_to_svg",
        "shape",
        lambda: evaluate_text_to_svg(None, None, ["a"], [], 4),
        ValueError,
        "prompts",
    ),
    ("mcq_predict", "empty", lambda: mcq_predict(None, None, []), ValueError, "prompts"),
    (
        "mcq_predict",
        "range",
        lambda: mcq_predict(None, None, ["q"], letters="A"),
        ValueError,
        "letters",
    ),
    (
        "tiny_ssl_feature_fn",
        "range",
        lambda: tiny_ssl_feature_fn(object(), pool="max"),
        ValueError,
        "pool",
    ),
    (
        "tiny_ssl_feature_fn",
        "range",
        lambda: tiny_ssl_feature_fn(object(), img_size=0),
        ValueError,
        "img_size",
    ),
    ("tiny_ssl_feature_fn", "type", lambda: tiny_ssl_feature_fn(object()), TypeError, "model"),
    (
        "sarena_metrics",
        "type",
        lambda: sarena_metrics("text_to_svg", [SVG], [SVG], feature_fn=3),
        TypeError,
        "feature_fn",
    ),
]

EXEMPT = {
    "EditTriplet": "a record dataclass produced by ProceduralSVG; it takes no user data to check",
    "MCQItem": "a record dataclass produced by ProceduralSVG; it takes no user data to check",
    "SVGSample": "a record dataclass produced by ProceduralSVG; it takes no user data to check",
    "Stage": "a frozen record built and validated by CurriculumSchedule from the stage dicts",
    "all_svg_tokens": "takes no arguments; returns the fixed token inventory",
    "svg_number_tokens": "takes no arguments; returns the fixed number-token inventory",
}
