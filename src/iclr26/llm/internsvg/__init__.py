"""InternSVG: SVG-specific tokens with subword-mean embedding initialisation, a two-stage
curriculum from short to long SVGs, and SArena-style evaluation (render, then compare pixels),
with a procedural SVG data set standing in for SAgoge (Wang et al., ICLR 2026)."""

from iclr26.llm.internsvg.canonical import (
    SVGParseError,
    canonicalize_svg,
    format_number,
    pack_numbers,
    parse_svg,
)
from iclr26.llm.internsvg.curriculum import CurriculumSchedule, Stage, run_curriculum
from iclr26.llm.internsvg.data import (
    DOMAINS,
    EDIT_OPS,
    TASKS,
    EditTriplet,
    MCQItem,
    ProceduralSVG,
    SVGSample,
    text_to_svg_prompt,
)
from iclr26.llm.internsvg.metrics import (
    SARENA_TASKS,
    image_metrics,
    sarena_metrics,
    tiny_ssl_feature_fn,
)
from iclr26.llm.internsvg.render import (
    animation_duration,
    render_svg,
    sample_animation_frames,
    svg_at_time,
)
from iclr26.llm.internsvg.tokens import (
    SVG_ATTR_TOKENS,
    SVG_TAG_TOKENS,
    SVGTokenizer,
    add_svg_tokens,
    all_svg_tokens,
    svg_number_tokens,
)
from iclr26.llm.internsvg.training import (
    CONDITIONS,
    evaluate_text_to_svg,
    generate_completions,
    mcq_predict,
    prepare_model,
)

__all__ = [
    "CONDITIONS",
    "DOMAINS",
    "EDIT_OPS",
    "SARENA_TASKS",
    "SVG_ATTR_TOKENS",
    "SVG_TAG_TOKENS",
    "TASKS",
    "CurriculumSchedule",
    "EditTriplet",
    "MCQItem",
    "ProceduralSVG",
    "SVGParseError",
    "SVGSample",
    "SVGTokenizer",
    "Stage",
    "add_svg_tokens",
    "all_svg_tokens",
    "animation_duration",
    "canonicalize_svg",
    "evaluate_text_to_svg",
    "format_number",
    "generate_completions",
    "image_metrics",
    "mcq_predict",
    "pack_numbers",
    "parse_svg",
    "prepare_model",
    "render_svg",
    "run_curriculum",
    "sample_animation_frames",
    "sarena_metrics",
    "svg_at_time",
    "svg_number_tokens",
    "text_to_svg_prompt",
    "tiny_ssl_feature_fn",
]
