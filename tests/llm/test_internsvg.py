"""InternSVG: token inventory, lossless SVG tokenisation, subword-mean rows (Eq. 1), rendering,
SMIL sampling, SArena metrics, the curriculum sampler, the procedural data and every claim at
smoke scale."""

import math

import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.llm.internsvg import (
    SVG_ATTR_TOKENS,
    SVG_TAG_TOKENS,
    CurriculumSchedule,
    ProceduralSVG,
    SVGTokenizer,
    add_svg_tokens,
    all_svg_tokens,
    canonicalize_svg,
    generate_completions,
    image_metrics,
    pack_numbers,
    render_svg,
    sample_animation_frames,
    sarena_metrics,
    svg_at_time,
    svg_number_tokens,
    tiny_ssl_feature_fn,
)

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 128 128">'


@pytest.fixture(scope="module")
def base_tok():
    from iclr26.models.tinylm import get_tokenizer

    return get_tokenizer(max_files=40)


@pytest.fixture(scope="module")
def tiny_lm():
    from iclr26.models.tinylm import pretrain_tiny_lm

    return pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40, threads=1)


@pytest.fixture(scope="module")
def samples():
    gen = ProceduralSVG(seed=3)
    return (
        gen.sample(20, "icon")
        + gen.sample(100, "icon", edits=False)
        + gen.sample(30, "chemistry", edits=False)
        + gen.sample(20, "illustration", edits=False)
        + gen.sample(30, "animation", edits=False)
    )


# ------------------------------------------------------------------ token inventory


def test_token_inventory_counts_and_uniqueness():
    ints, decs = svg_number_tokens()
    assert (len(SVG_TAG_TOKENS), len(SVG_ATTR_TOKENS), len(ints), len(decs)) == (55, 42, 257, 100)
    assert ints[0] == "-128" and ints[-1] == "128" and "0" in ints
    assert ".0" in decs and ".5" in decs and ".65" in decs and ".99" in decs
    assert ".10" not in decs and ".00" not in decs  # canonical numbers never end in 0
    every = all_svg_tokens()
    assert len(every) == len(set(every)) == 454
    assert all(a.startswith(" ") and a.endswith('="') for a in SVG_ATTR_TOKENS)


def test_new_ids_do_not_clash_with_base_ids(base_tok):
    tok = SVGTokenizer(base_tok)
    new_ids = [tok.token_to_id[t] for t in tok.new_tokens]
    assert len(set(new_ids)) == len(new_ids)
    assert min(new_ids) == len(base_tok) and max(new_ids) == len(tok) - 1
    # a token that already is one base token keeps its id ("0".."9" in this BPE)
    for t, i in tok.reused.items():
        assert base_tok.encode(t, add_special_tokens=False) == [i]


# ------------------------------------------------------------------ tokenisation


def test_roundtrip_on_procedural_svgs(base_tok, samples):
    tok = SVGTokenizer(base_tok)
    for s in samples:
        assert canonicalize_svg(s.svg) == s.svg  # generators emit canonical text
        assert tok.decode(tok.encode(s.svg)) == s.svg
        assert len(tok.encode(s.svg)) < len(base_tok.encode(s.svg, add_special_tokens=False))


def test_packed_path_numbers_split_into_number_tokens(base_tok):
    tok = SVGTokenizer(base_tok)
    pieces = tok.split("M128 64c0 35.35-28.65 64-64 64")
    specials = [p for p, is_svg in pieces if is_svg]
    assert specials == ["128", "64", "0", "35", ".35", "-28", ".65", "64", "-64", "64"]
    assert "".join(p for p, _ in pieces) == "M128 64c0 35.35-28.65 64-64 64"
    # out-of-range integers, non-canonical fractions and hex colours fall back to the base
    fallback = [p for p, is_svg in tok.split('x="129.123" fill="#ff0000"') if not is_svg]
    assert "129.123" in "".join(fallback) and "#ff0000" in "".join(fallback)
    full = tok.split('<path d="M1 2"/></svg>')
    assert full[0] == ("<path", True) and (' d="', True) in full and ("/>", True) in full
    assert full[-1] == ("</svg>", True)
    assert tok.split("<textPath")[0] == ("<textPath", True)
    assert tok.split("<glyph")[0] == ("<glyph", False)


def test_canonicalisation_rules_and_rendering_preserved():
    messy = (
        '<?xml version="1.0"?><!-- c --><svg xmlns="http://www.w3.org/2000/svg" '
        'xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" viewBox="0 0 128 128">'
        "<metadata>m</metadata>\n  <title>t</title>"
        '<path d="M 10.0000,20.5049 L 100.126 , -3.5 Z" inkscape:label="x" fill="#FF0000"/>\n'
        '<circle cx="64.0" cy="64.004" r="20.5551" fill="blue"/></svg>'
    )
    canon = canonicalize_svg(messy)
    assert canon == (
        HEAD + '<path d="M10 20.5L100.13-3.5Z" fill="#FF0000"/>'
        '<circle cx="64" cy="64" r="20.56" fill="blue"/></svg>'
    )
    assert canonicalize_svg(canon) == canon
    assert pack_numbers("M 1.50 , 2 L -3 -4") == "M1.5 2L-3-4"
    # rounding to two decimals keeps the picture: PSNR >= 40 dB against the original
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y, r = rng.uniform(20, 100, 3)
        raw = f'{HEAD}<circle cx="{x:.5f}" cy="{y:.5f}" r="{r / 3:.5f}" fill="#3cb44b"/></svg>'
        m = image_metrics(render_svg(raw)[None], render_svg(canonicalize_svg(raw))[None])
        assert m["psnr"][0] >= 40


def test_canonicalize_rejects_broken_svg():
    with pytest.raises(ValueError, match="svg"):
        canonicalize_svg("<svg><rect")
    with pytest.raises(ValueError, match="<svg>"):
        canonicalize_svg("<html/>")


# ------------------------------------------------------------------ Eq. 1 initialisation


def _llama(tied: bool):
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config("test", tie_word_embeddings=tied)).eval()


@pytest.mark.parametrize("tied", [True, False])
def test_subword_mean_rows_are_exact_means(base_tok, tied):
    model = _llama(tied)
    old_in = model.get_input_embeddings().weight.detach().clone()
    old_out = model.get_output_embeddings().weight.detach().clone()
    n_base = len(base_tok)
    model, tok = add_svg_tokens(base_tok, model, init="subword_mean")
    w = model.get_input_embeddings().weight
    assert w.shape == (old_in.shape[0] + len(tok.new_tokens), old_in.shape[1])
    assert torch.equal(w[: old_in.shape[0]], old_in)  # existing rows untouched
    for t in (' stroke-width="', "<linearGradient", "-128", ".65", "<circle"):
        row = tok.token_to_id[t]
        pieces = base_tok.encode(t, add_special_tokens=False)
        assert len(pieces) > 1
        assert torch.allclose(w[row], old_in[pieces].mean(0), atol=0, rtol=0)
        if not tied:
            head = model.get_output_embeddings().weight
            assert torch.allclose(head[row], old_out[pieces].mean(0), atol=0, rtol=0)
    head = model.get_output_embeddings().weight
    assert (head is w) == tied
    assert model.config.vocab_size == len(tok)
    assert len(base_tok) == n_base  # the caller's tokenizer is not modified


@pytest.mark.parametrize("tied", [True, False])
def test_svg_tokens_survive_bf16_and_a_save_pretrained_round_trip(base_tok, tied, tmp_path):
    """Eq. 1 rows in a bf16 model, saved with save_pretrained and loaded back: same weights
    (the grown vocabulary, the tie or the untied head), same dtype, and a tokenizer rebuilt
    from the base gives the same ids."""
    from transformers import AutoModelForCausalLM

    model = _llama(tied).to(torch.bfloat16)
    old_in = model.get_input_embeddings().weight.detach().clone()
    model, tok = add_svg_tokens(base_tok, model, init="subword_mean")
    w = model.get_input_embeddings().weight
    row, pieces = tok.token_to_id["<circle"], tok.pieces_of("<circle")
    assert w.dtype == torch.bfloat16 and torch.equal(w[row], old_in[pieces].mean(0))
    model.save_pretrained(tmp_path / "svg-lm")
    back = AutoModelForCausalLM.from_pretrained(tmp_path / "svg-lm")
    assert back.dtype == torch.bfloat16 and back.config.vocab_size == len(tok)
    assert (back.get_output_embeddings().weight is back.get_input_embeddings().weight) == tied
    saved, loaded = model.state_dict(), back.state_dict()
    assert set(saved) == set(loaded)
    for name in saved:
        assert torch.equal(saved[name], loaded[name]), name
    rebuilt = SVGTokenizer(base_tok, id_offset=model.svg_token_init["old_rows"])
    text = HEAD + '<circle cx="64" cy="64.5" r="20" fill="#e6194b"/></svg>'
    assert rebuilt.encode(text) == tok.encode(text)


def test_random_init_matches_row_std(base_tok):
    model = _llama(True)
    sigma = float(model.get_input_embeddings().weight.detach().std())
    model, tok = add_svg_tokens(base_tok, model, init="random", seed=1)
    new = model.get_input_embeddings().weight[model.svg_token_init["old_rows"] :].detach()
    assert abs(float(new.std()) / sigma - 1) < 0.05
    assert abs(float(new.mean())) < 0.1 * sigma


def test_model_runs_and_trains_on_new_ids(base_tok, tiny_lm):
    import copy

    model, tok = add_svg_tokens(tiny_lm[1], copy.deepcopy(tiny_lm[0]))
    ids = torch.tensor([tok.encode(HEAD + '<circle cx="64" cy="64" r="20"/></svg>')])
    assert int(ids.max()) >= len(tiny_lm[1])
    out = model(input_ids=ids, labels=ids)
    assert out.logits.shape[-1] == len(tok) and torch.isfinite(out.loss)


# ------------------------------------------------------------------ rendering, SMIL


def test_render_red_rect_and_failures_are_black():
    img, ok = render_svg(
        f'{HEAD}<rect x="0" y="0" width="128" height="128" fill="#ff0000"/></svg>',
        return_ok=True,
    )
    assert ok and img.shape == (128, 128, 3) and img.dtype == np.uint8
    assert (img == np.array([255, 0, 0], dtype=np.uint8)).all()
    blank = render_svg(HEAD + "</svg>")
    assert (blank == 255).all()  # white canvas
    for broken in ("<svg><rect", "", "not xml at all", "<html/>", HEAD + "<rect x='1'"):
        img, ok = render_svg(broken, size=32, return_ok=True)
        assert not ok and img.shape == (32, 32, 3) and not img.any()


class PanicException(BaseException):
    """Stands for pyo3's PanicException (a Rust panic inside resvg), a BaseException."""


@pytest.mark.parametrize("error", [TypeError("bad svg"), PanicException("resvg panicked")])
def test_a_renderer_crash_is_a_counted_render_failure(monkeypatch, error):
    import resvg_py

    real = resvg_py.svg_to_bytes

    def crash_on_marked(**kwargs):
        if 'id="boom"' in kwargs["svg_string"]:
            raise error
        return real(**kwargs)

    monkeypatch.setattr(resvg_py, "svg_to_bytes", crash_on_marked)
    boom = HEAD + '<rect id="boom" width="9" height="9"/></svg>'
    img, ok = render_svg(boom, size=16, return_ok=True)
    assert not ok and not img.any()
    ref = HEAD + '<rect width="9" height="9"/></svg>'
    scores = sarena_metrics("text_to_svg", preds=[boom, ref], refs=[ref, ref])
    assert scores["n_failed"] == 1 and scores["success_rate"] == 0.5


def test_smil_animate_at_half_time():
    svg = (
        f'{HEAD}<circle cx="10" cy="64" r="8" fill="#000000"><animate attributeName="cx" '
        'from="10" to="110" dur="2s"/></circle></svg>'
    )
    at = svg_at_time(svg, 1.0)
    assert 'cx="60"' in at and "animate" not in at
    assert 'cx="10"' in svg_at_time(svg, 2.5)  # not frozen: back to the base value
    frozen = svg.replace('dur="2s"', 'dur="2s" fill="freeze"')
    assert 'cx="110"' in svg_at_time(frozen, 5.0)
    frames, ok = sample_animation_frames(svg, [0.0, 1.0], size=128)
    assert ok.all()
    for frame, cx in zip(frames, (10, 60)):
        dark = np.argwhere(frame.sum(-1) < 100)
        assert abs(dark[:, 1].mean() - cx) < 1.0 and abs(dark[:, 0].mean() - 64) < 1.0
    spin = (
        f'{HEAD}<rect x="54" y="20" width="20" height="20" fill="#000000"><animateTransform '
        'attributeName="transform" type="rotate" from="0 64 64" to="360 64 64" dur="4s" '
        'repeatCount="indefinite"/></rect></svg>'
    )
    assert 'transform="rotate(90 64 64)"' in svg_at_time(spin, 5.0)  # 5 s = 1 s into a repeat
    colour = (
        f'{HEAD}<circle cx="64" cy="64" r="8" fill="#000000"><animate attributeName="fill" '
        'from="#000000" to="#ff0000" dur="1s"/></circle></svg>'
    )
    assert 'fill="#800000"' in svg_at_time(colour, 0.5)
    black, ok = sample_animation_frames("<svg", [0.0], size=16)
    assert not ok.any() and not black.any()


# ------------------------------------------------------------------ metrics


def test_image_metrics_hand_values():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (2, 32, 32, 3)).astype(np.uint8)
    same = image_metrics(a, a)
    assert (
        np.all(same["psnr"] == 100.0) and np.allclose(same["ssim"], 1.0) and not same["mse"].any()
    )
    b = a.copy()
    b[0, 0, 0, 0] ^= 255
    got = image_metrics(b, a)
    mse = float(((b[0].astype(float) - a[0]) ** 2).mean())
    assert math.isclose(got["mse"][0], mse)
    assert math.isclose(got["psnr"][0], 10 * math.log10(255**2 / mse))


def test_sarena_black_image_penalty_and_understanding():
    good = f'{HEAD}<circle cx="64" cy="64" r="30" fill="#e6194b"/></svg>'
    perfect = sarena_metrics("text_to_svg", [good, good], [good, good], size=64)
    assert perfect["success_rate"] == 1.0 and perfect["psnr"] == 100.0
    broken = sarena_metrics("text_to_svg", [good, "<svg><circle"], [good, good], size=64)
    assert broken["success_rate"] == 0.5 and broken["n_failed"] == 1
    assert broken["psnr"] < perfect["psnr"] and broken["ssim"] < perfect["ssim"]
    ref_img = render_svg(good, 64)
    black_score = image_metrics(np.zeros_like(ref_img)[None], ref_img[None])["psnr"][0]
    assert math.isclose(broken["psnr"], (100.0 + black_score) / 2)
    assert broken["psnr_success"] == 100.0
    acc = sarena_metrics(
        "understanding", ["A", "b", 2, "?"], ["A", "C", "C", "D"], categories=list("xxyy")
    )
    assert acc["accuracy"] == 0.5 and acc["accuracy_x"] == 0.5 and acc["accuracy_y"] == 0.5
    anim = (
        f'{HEAD}<circle cx="10" cy="64" r="8" fill="#000000"><animate attributeName="cx" '
        'from="10" to="110" dur="2s" repeatCount="indefinite"/></circle></svg>'
    )
    static = anim.split("<animate")[0] + "</circle></svg>"
    video = sarena_metrics("text_to_sani", [anim, static], [anim, anim], size=32, n_frames=4)
    assert video["success_rate"] == 1.0
    assert video["psnr"] < 100.0 and video["n"] == 2


def test_feature_similarity_hook():
    red = f'{HEAD}<rect width="128" height="128" fill="#ff0000"/></svg>'
    blue = red.replace("#ff0000", "#0000ff")

    def mean_colour(images):  # a hand-checkable feature: the mean RGB of each image
        return images.reshape(len(images), -1, 3).mean(1)

    got = sarena_metrics("text_to_svg", [red, blue], [red, red], size=32, feature_fn=mean_colour)
    assert math.isclose(got["feature_similarity"], 0.5)  # cos = 1 (same) and 0 (orthogonal)
    from iclr26.models.vision import TinyViT

    torch.manual_seed(0)
    vit = TinyViT(img_size=64, patch=8, dim=32, depth=1, heads=2, num_classes=0)
    fn = tiny_ssl_feature_fn(vit)
    feats = fn(np.stack([render_svg(red, 32), render_svg(blue, 32)]))
    assert feats.shape == (2, 32) and np.isfinite(feats).all()
    same = sarena_metrics("editing", [red], [red], size=32, feature_fn=fn)
    assert math.isclose(same["feature_similarity"], 1.0, rel_tol=1e-6)


# ------------------------------------------------------------------ curriculum


def _datasets():
    return {
        ("icon", "text_to_svg"): [("p", "icon")] * 300,
        ("icon", "editing"): [("p", "icon-edit")] * 100,
        ("chemistry", "text_to_svg"): [("p", "chem")] * 200,
        ("illustration", "text_to_svg"): [("p", "ill")] * 50,
        ("animation", "text_to_svg"): [("p", "anim")] * 30,
    }


def test_curriculum_stage_domains_and_proportions():
    stages = [
        {"domains": ["icon", "chemistry"], "tasks": ["text_to_svg", "editing"], "steps": 125,
         "lr": 2e-4},
        {"domains": ["icon", "chemistry", "illustration", "animation"],
         "tasks": ["text_to_svg", "editing"], "steps": 125, "lr": 1e-4,
         "mix": {"icon": 0.4, "chemistry": 0.2, "illustration": 0.3, "animation": 0.1}},
    ]  # fmt: skip
    sched = CurriculumSchedule(_datasets(), stages, batch=8, seed=0)
    drawn = list(sched)
    assert len(drawn) == len(sched) == 2000
    first = [d for d in drawn if d["stage"] == 0]
    assert {d["domain"] for d in first} == {"icon", "chemistry"}
    second = [d["domain"] for d in drawn if d["stage"] == 1]
    for domain, want in stages[1]["mix"].items():
        assert abs(second.count(domain) / len(second) - want) < 0.05
    # stage 1 by dataset size: icon 400 of 600 examples
    assert abs(sum(d["domain"] == "icon" for d in first) / len(first) - 2 / 3) < 0.05
    # match_proportions without a mix: a repeated domain is capped at the new domains' mean
    auto = CurriculumSchedule(
        _datasets(), [stages[0], {**stages[1], "mix": None}], resample="match_proportions"
    )
    w = auto.domain_weights(1)
    assert math.isclose(w["icon"], 40 / 160) and math.isclose(w["chemistry"], 40 / 160)
    assert math.isclose(w["illustration"], 50 / 160) and math.isclose(w["animation"], 30 / 160)
    natural = CurriculumSchedule(
        _datasets(), [stages[0], {**stages[1], "mix": None}], resample="none"
    )
    assert math.isclose(natural.domain_weights(1)["icon"], 400 / 680)
    assert [d["completion"] for d in sched.stage_examples(1)] == [
        d["completion"] for d in CurriculumSchedule(_datasets(), stages, seed=0).stage_examples(1)
    ]


def test_run_curriculum_trains_each_stage(tiny_lm):
    import copy

    from iclr26.llm.internsvg import run_curriculum

    model, tok = add_svg_tokens(tiny_lm[1], copy.deepcopy(tiny_lm[0]))
    gen = ProceduralSVG(seed=0)
    data = {
        ("icon", "text_to_svg"): ProceduralSVG.examples(gen.sample(4, "icon"), "text_to_svg"),
        ("chemistry", "text_to_svg"): ProceduralSVG.examples(
            gen.sample(2, "chemistry"), "text_to_svg"
        ),
    }
    stages = [
        {"domains": ["icon"], "tasks": ["text_to_svg"], "steps": 2, "lr": 2e-4},
        {"domains": ["icon", "chemistry"], "tasks": ["text_to_svg"], "steps": 1, "lr": 1e-4},
    ]
    model, losses = run_curriculum(model, tok, CurriculumSchedule(data, stages, batch=2))
    assert [len(c) for c in losses] == [2, 1] and all(np.isfinite(c).all() for c in losses)


# ------------------------------------------------------------------ data


def test_procedural_data_structure(samples):
    icons = [s for s in samples if s.domain == "icon"]
    lengths = [len(s.svg) for s in icons]
    assert 100 <= min(lengths) and max(lengths) <= 700
    ill = [len(s.svg) for s in samples if s.domain == "illustration"]
    assert min(ill) >= 1000 and max(ill) <= 6000
    for s in icons:
        assert len(s.mcq) == 3 and len(s.edits) in (0, 8)
        count_q = s.mcq[0]
        name = count_q.question.split("How many ")[1].split(" shapes")[0]
        assert int(count_q.options[count_q.answer]) == [x["name"] for x in s.shapes].count(name)
        colour_q = s.mcq[1]
        largest = max(s.shapes, key=lambda x: x["area"])
        assert colour_q.options[colour_q.answer] == largest["colour"]
        for shape in s.shapes:
            assert shape["colour"] in s.description
    assert all(len(s.edits) == 8 for s in icons[:20])
    edits = icons[0].edits
    assert [e.op for e in edits] == [
        "color", "stroke", "translate", "scale", "rotate", "flip", "opacity", "crop"
    ]  # fmt: skip
    src = render_svg(edits[0].source)
    changed = [not np.array_equal(render_svg(e.target), src) for e in edits[1:]]
    assert sum(changed) >= 6
    anim = [s for s in samples if s.domain == "animation"]
    assert all("<animate" in s.svg for s in anim)
    tasks = ProceduralSVG.examples(icons[:2], "understanding")
    assert len(tasks) == 6 and tasks[0][1].strip() in "ABCD"
    again = ProceduralSVG(seed=3).sample(3, "icon")
    assert [s.svg for s in again] == [s.svg for s in icons[:3]]


def test_batched_generation_equals_shared_greedy(tiny_lm):
    import copy

    from iclr26.models.tinylm import greedy_generate

    model, tok = add_svg_tokens(tiny_lm[1], copy.deepcopy(tiny_lm[0]))
    prompts = ["Write the SVG code of: a red circle\nSVG:", "def f(x):", "<svg"]
    texts, lengths, _ = generate_completions(model, tok, prompts, max_new_tokens=6, batch=3)
    for p, text, n in zip(prompts, texts, lengths):
        ids = tok.encode(p)
        out = greedy_generate(model, torch.tensor(ids), 6, eos_token_id=tok.eos_token_id)[0]
        new = out[len(ids) :].tolist()
        new = new[: new.index(tok.eos_token_id)] if tok.eos_token_id in new else new
        assert text == tok.decode(new, skip_special_tokens=True) and n == len(new)


# ------------------------------------------------------------------ claims


@pytest.mark.parametrize(
    "name",
    [
        "svg-tokens-shorten",
        "subword-init-faster",
        "token-ablation-table7",
        "two-stage-curriculum",
        "unified-training",
    ],
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("internsvg", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert not contract_problems(record)
    assert record["metrics"] and record["baseline"]
    _assert_figures(record, tmp_path)


def _assert_figures(record, out_dir):
    """Every claim saves at least one figure, and each PNG opens."""
    import matplotlib.image as mpimg

    assert record["figures"], f"{record['claim']} saved no figure"
    for rel in record["figures"]:
        image = mpimg.imread(out_dir / rel)
        assert image.ndim == 3 and min(image.shape[:2]) > 50
