"""The catalogue: every paper the package implements, one explicit table.

Each row names the paper's slug (also the id its claims carry), its title, the area and
module of its room, and the seed file of abstracts it comes from. A paper whose room does
not exist yet is still listed; :func:`Paper.implemented` says which are.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

_ROOT = Path(__file__).resolve().parent

AREAS = (
    "classic",
    "timeseries",
    "optim",
    "dynamics",
    "rl",
    "nn",
    "neuro",
    "llm",
    "knowledge",
    "vision",
    "generative",
    "three_d",
)


@dataclass(frozen=True)
class Paper:
    slug: str
    title: str
    area: str
    seed_file: str

    @property
    def module(self) -> str:
        return f"iclr26.{self.area}.{self.slug}"

    @property
    def claims_module(self) -> str:
        return f"{self.module}.claims"

    @property
    def implemented(self) -> bool:
        """True once the paper's room and its claim checks exist in this installation (checked
        on disk, without importing the room)."""
        return (_ROOT / self.area / self.slug / "claims.py").is_file()

    @property
    def url(self) -> str:
        """The paper (arXiv or OpenReview)."""
        return LINKS.get(self.slug, ("", ""))[0]

    @property
    def code_url(self) -> str:
        """The official code ("" when none was found)."""
        return LINKS.get(self.slug, ("", ""))[1]

    @property
    def bibtex(self) -> str:
        """A BibTeX entry for the paper; the author list is on the paper's page."""
        title = self.title.replace("{", "").replace("}", "")
        lines = [
            f"@inproceedings{{{self.slug}2026,",
            f"  title     = {{{{{title}}}}},",
            "  booktitle = {International Conference on Learning Representations (ICLR)},",
            "  year      = {2026},",
        ]
        if self.url:
            lines.append(f"  url       = {{{self.url}}},")
        if self.code_url:
            lines.append(f"  note      = {{Official code: {self.code_url}}},")
        lines.append("}")
        return "\n".join(lines)


PAPERS: tuple[Paper, ...] = (
    Paper(
        "arsl_imvc",
        "Aligning Collaborative View Recovery and Tensorial Subspace Learning via Latent Representation for Incomplete Multi-View Clustering",
        "classic",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "cda",
        "A Generalized Geometric Theoretical Framework of Centroid Discriminant Analysis for Linear Classification of Multi-dimensional Data",
        "classic",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "dt_active_learning",
        "Active Learning for Decision Trees with Provable Guarantees",
        "classic",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "ldp_experts",
        "Prediction with Expert Advice under Local Differential Privacy",
        "classic",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "deep_matrix_factorization",
        "Coupled dynamics and low-rank bias of deep matrix factorization",
        "dynamics",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "escape_directions",
        "Escape directions of deep ReLU networks from the saddle at the origin",
        "dynamics",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "polca",
        "Hidden Breakthroughs in Language Model Training (POLCA)",
        "dynamics",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "quantized_relu_training",
        "Complexity of training fully quantized ReLU networks",
        "dynamics",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "cgb",
        "Consistency Geodesic Bridge (CGB) for image restoration",
        "generative",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "coguide",
        "CoGuide: contrastive diffusion guidance for spatial inverse problems",
        "generative",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "flexprotein",
        "FlexProtein (published as FlexRibbon): joint sequence–structure protein pretraining",
        "generative",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "tensorar",
        "TensorAR: next-tensor prediction with discrete tensor noising",
        "generative",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "vidd",
        "VIDD: iterative distillation for reward-guided fine-tuning of diffusion models",
        "generative",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "chronoplay",
        "ChronoPlay: A Framework for Modeling Dual Dynamics and Authenticity in Game RAG Benchmarks",
        "knowledge",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "revela",
        "Revela: Dense Retriever Learning via Language Modeling",
        "knowledge",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "znerd_hgnet",
        "HGNet: Scalable Foundation Model for Automated Knowledge Graph Generation from Scientific Literature (Z-NERD + HGNet + SPHERE)",
        "knowledge",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "gneissweb",
        "GneissWeb: Preparing High Quality Data for LLMs at Scale",
        "llm",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "internsvg",
        "InternSVG: Towards Unified SVG Tasks with Multimodal Large Language Models (SAgoge, SArena)",
        "llm",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "lrs_compression",
        "Large Language Model Compression with Global Rank and Sparsity Optimization (CAP)",
        "llm",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "mixkv",
        "Mixing Importance with Diversity: Joint Optimization for KV Cache Compression in LVLMs (MixKV)",
        "llm",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "qat_reasoning",
        "Towards Quantization-Aware Training for Ultra-Low-Bit Reasoning LLMs",
        "llm",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "seka",
        "Spectral Attention Steering for Prompt Highlighting (SEKA / AdaSEKA)",
        "llm",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "siren",
        "Token-Efficient Long-Term Interest Sketching and Internalized Reasoning for LLM-based Recommendation (SIREN)",
        "llm",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "task_arithmetic_fairness",
        "On Fairness of Task Arithmetic: The Role of Task Vectors",
        "llm",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "behaviour_rnn",
        "Setting up for failure: automatic discovery of the neural mechanisms of cognitive errors",
        "neuro",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "fsnn",
        "Fractional-order Spiking Neural Network (f-SNN)",
        "neuro",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "difflift",
        "Differentiable Lifting for Topological Neural Networks (∂lift / DiffLift)",
        "nn",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "gmnet",
        "GmNet: Revisiting Gating Mechanisms From A Frequency View",
        "nn",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "ilnn",
        "Intrinsic Lorentz Neural Network",
        "nn",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "learned_nonlinearities",
        "Can Transformers Really Do It All? On the Compatibility of Inductive Biases Across Tasks",
        "nn",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "lmkan",
        "Lookup multivariate Kolmogorov-Arnold Networks (lmKAN)",
        "nn",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "nrgpt",
        "NRGPT: An Energy-based Alternative for GPT",
        "nn",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "poly_attention",
        "Poly-attention: a general scheme for higher-order self-attention",
        "nn",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "absignsgd",
        "ABSignSGD: block-coordinate sign descent for memory-efficient fine-tuning",
        "optim",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "fzoo",
        "FZOO: Fast Zeroth-Order Optimizer towards Adam-Scale Speed",
        "optim",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "gt_nsgdm",
        "GT-NSGDm: decentralized normalized SGD with momentum under heavy-tailed noise",
        "optim",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "cvar_qlearning",
        "Predictive CVaR Q-learning",
        "rl",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "flexrl",
        "FlexRL — Scaling Large Vision-Language Model RL Training via Efficient Load Balancing",
        "rl",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "ma_il_nash",
        "Matching Multiple Experts: On the Exploitability of Multi-Agent Imitation Learning",
        "rl",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "obscuro",
        "General search techniques without common knowledge for imperfect-information games, and application to superhuman Fog of War chess (Obscuro)",
        "rl",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "pd2z_qlearning",
        "Sharp asymptotic theory for Q-learning with LD2Z learning rate and its generalization",
        "rl",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "revisual_r1",
        "ReVisual-R1 — Advancing Multimodal Reasoning: From Optimized Cold Start to Staged Reinforcement Learning",
        "rl",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "fore_mamba3d",
        "Fore-Mamba3D: foreground-enhanced Mamba encoding for 3D object detection",
        "three_d",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "gs_watermark",
        "CompMarkGS: compression-tolerant watermarking of anchor-based 3DGS",
        "three_d",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "horseshoe_splatting",
        "Horseshoe Splatting: Bayesian 3DGS with a horseshoe prior on covariance scales",
        "three_d",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "sir_snc",
        "SIR-SNC: neural mesh compression with a Sparse Implicit Representation",
        "three_d",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "world_model_3wm",
        "3WM: unified 3D scene understanding through physical world modeling",
        "three_d",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "koopman_ot",
        "A Spectral-Grassmann Wasserstein metric for operator representations of dynamical systems",
        "timeseries",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "paano",
        "PaAno: Patch-Based Representation Learning for Time-Series Anomaly Detection",
        "timeseries",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "anyup",
        "AnyUp: Universal Feature Upsampling",
        "vision",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "dial",
        "DIAL / DIAL+: Label-free Mitigation of Spurious Correlations in VLMs using Sparse Autoencoders",
        "vision",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "iecl",
        "Maximizing Incremental Information Entropy for Contrastive Learning (IE-CL)",
        "vision",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "ivpt",
        "Exploring Interpretability for Visual Prompt Tuning with Cross-layer Concepts (IVPT)",
        "vision",
        "001_002e11a1a3517c93.txt",
    ),
    Paper(
        "pcg",
        "Counterfactual Explanations on Robust Perceptual Geodesics (PCG)",
        "vision",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "smope",
        "One-Prompt Strikes Back: Sparse Mixture of Experts for Prompt-based Continual Learning (SMoPE)",
        "vision",
        "004_7beccc23ec4b2ebf.txt",
    ),
    Paper(
        "srl",
        "From Vicious to Virtuous Cycles: Synergistic Representation Learning for Unsupervised Video Object-Centric Learning (SRL)",
        "vision",
        "000_62fa08824fc7e499.txt",
    ),
    Paper(
        "tarf",
        "Decoupling the Class Label and the Target Concept in Machine Unlearning (TARF)",
        "vision",
        "000_62fa08824fc7e499.txt",
    ),
)

BY_SLUG: dict[str, Paper] = {p.slug: p for p in PAPERS}

# Where each paper and its official code are (code: "" when none was found).
LINKS: dict[str, tuple[str, str]] = {
    "absignsgd": (
        "https://openreview.net/forum?id=NQsdnYkCar",
        "https://github.com/yijiezcn/ABSignSGD",
    ),
    "anyup": (
        "https://arxiv.org/abs/2510.12764",
        "https://github.com/wimmerth/anyup",
    ),
    "arsl_imvc": (
        "https://openreview.net/forum?id=a5aRjldX9l",
        "https://github.com/caoyu110/ARSL-IMVC",
    ),
    "behaviour_rnn": (
        "https://arxiv.org/abs/2512.04808",
        "https://github.com/puria-radmard/behaviour_ddpm",
    ),
    "cda": (
        "https://openreview.net/forum?id=bp9DOHb1mk",
        "https://github.com/ywu57232/Centroid_discriminant_Analysis",
    ),
    "cgb": (
        "https://arxiv.org/abs/2604.10983",
        "https://github.com/jinnh/E-Bridge",
    ),
    "chronoplay": (
        "https://arxiv.org/abs/2510.18455",
        "https://github.com/hly1998/ChronoPlay",
    ),
    "coguide": (
        "https://arxiv.org/abs/2509.26489",
        "",
    ),
    "cvar_qlearning": (
        "https://openreview.net/forum?id=B4SCegRJOA",
        "",
    ),
    "deep_matrix_factorization": (
        "https://arxiv.org/abs/2603.04703",
        "",
    ),
    "dial": (
        "https://openreview.net/forum?id=NHOLsaHuFv",
        "",
    ),
    "difflift": (
        "https://openreview.net/forum?id=eC89CbINIw",
        "https://github.com/JorgeLuizFranco/difflifting",
    ),
    "dt_active_learning": (
        "https://arxiv.org/abs/2601.20775",
        "",
    ),
    "escape_directions": (
        "https://arxiv.org/abs/2505.21722",
        "",
    ),
    "flexprotein": (
        "https://openreview.net/forum?id=B8BXHrshMi",
        "https://github.com/bjzgcai/FlexRibbon",
    ),
    "flexrl": (
        "https://openreview.net/forum?id=aa14rlfR6k",
        "",
    ),
    "fore_mamba3d": (
        "https://arxiv.org/abs/2602.19536",
        "https://github.com/pami-zwning/ForeMamba3D",
    ),
    "fsnn": (
        "https://arxiv.org/abs/2507.16937",
        "https://github.com/PhysAGI/spikeDE",
    ),
    "fzoo": (
        "https://arxiv.org/abs/2506.09034",
        "https://github.com/DKmiyan/FZOO",
    ),
    "gmnet": (
        "https://arxiv.org/abs/2503.22841",
        "https://github.com/YFWang1999/GmNet",
    ),
    "gneissweb": (
        "https://arxiv.org/abs/2502.14907",
        "https://github.com/data-prep-kit/data-prep-kit",
    ),
    "gs_watermark": (
        "https://arxiv.org/abs/2503.12836",
        "https://github.com/kuai-lab/iclr26_CompMarkGS",
    ),
    "gt_nsgdm": (
        "https://arxiv.org/abs/2505.03736",
        "",
    ),
    "horseshoe_splatting": (
        "https://openreview.net/forum?id=NHuyk9KsG6",
        "https://github.com/HKU-MedAI/Horseshoe-Splatting",
    ),
    "iecl": (
        "https://arxiv.org/abs/2603.12594",
        "",
    ),
    "ilnn": (
        "https://arxiv.org/abs/2602.23981",
        "",
    ),
    "internsvg": (
        "https://arxiv.org/abs/2510.11341",
        "https://github.com/hmwang2002/InternSVG",
    ),
    "ivpt": (
        "https://arxiv.org/abs/2503.06084",
        "https://github.com/ThomasWangY/IVPT",
    ),
    "koopman_ot": (
        "https://arxiv.org/abs/2509.24920",
        "https://github.com/PythonOT/POT",
    ),
    "ldp_experts": (
        "https://arxiv.org/abs/2512.06971",
        "https://github.com/ben-jacobsen/dp-online-learning",
    ),
    "learned_nonlinearities": (
        "https://openreview.net/forum?id=B08MW8oDqN",
        "https://github.com/idiap/lm-afs",
    ),
    "lmkan": (
        "https://arxiv.org/abs/2509.07103",
        "https://github.com/schwallergroup/lmkan",
    ),
    "lrs_compression": (
        "https://arxiv.org/abs/2505.03801",
        "",
    ),
    "ma_il_nash": (
        "https://arxiv.org/abs/2602.21020",
        "",
    ),
    "mixkv": (
        "https://arxiv.org/abs/2510.20707",
        "https://github.com/xuyang-liu16/MixKV",
    ),
    "nrgpt": (
        "https://arxiv.org/abs/2512.16762",
        "",
    ),
    "obscuro": (
        "https://arxiv.org/abs/2506.01242",
        "",
    ),
    "paano": (
        "https://arxiv.org/abs/2602.01359",
        "https://github.com/jinnnju/PaAno",
    ),
    "pcg": (
        "https://arxiv.org/abs/2601.18678",
        "",
    ),
    "pd2z_qlearning": (
        "https://arxiv.org/abs/2604.04218",
        "",
    ),
    "polca": (
        "https://arxiv.org/abs/2506.15872",
        "https://github.com/skangasl/POLCA",
    ),
    "poly_attention": (
        "https://arxiv.org/abs/2602.02422",
        "",
    ),
    "qat_reasoning": (
        "https://openreview.net/forum?id=Azsd2qyK6C",
        "https://github.com/yasu0001/ReasoningQAT",
    ),
    "quantized_relu_training": (
        "https://openreview.net/forum?id=BAQNrsr987",
        "",
    ),
    "revela": (
        "https://arxiv.org/abs/2506.16552",
        "https://github.com/TRUMANCFY/Revela",
    ),
    "revisual_r1": (
        "https://arxiv.org/abs/2506.04207",
        "https://github.com/CSfufu/Revisual-R1",
    ),
    "seka": (
        "https://arxiv.org/abs/2603.01281",
        "https://github.com/waylonli/SEKA",
    ),
    "sir_snc": (
        "https://openreview.net/forum?id=AzsN1qdLwv",
        "https://github.com/yydlmzyz1/SIR-SNC",
    ),
    "siren": (
        "https://openreview.net/forum?id=NVrXCKaEjM",
        "https://github.com/TommyDzh/SIREN",
    ),
    "smope": (
        "https://arxiv.org/abs/2509.24483",
        "https://github.com/Minhchuyentoancbn/SMoPE",
    ),
    "srl": (
        "https://arxiv.org/abs/2602.03390",
        "https://github.com/hynnsk/SRL",
    ),
    "tarf": (
        "https://arxiv.org/abs/2406.08288",
        "https://github.com/tmlr-group/TARF",
    ),
    "task_arithmetic_fairness": (
        "https://arxiv.org/abs/2505.24262",
        "https://github.com/LauraGomezjurado/fairness_task_vector_deploy",
    ),
    "tensorar": (
        "https://arxiv.org/abs/2505.16324",
        "",
    ),
    "vidd": (
        "https://arxiv.org/abs/2507.00445",
        "https://github.com/divelab/VIDD",
    ),
    "world_model_3wm": (
        "https://openreview.net/forum?id=NQq9JLMfNN",
        "",
    ),
    "znerd_hgnet": (
        "https://arxiv.org/abs/2603.23136",
        "https://github.com/basiralab/HGNet",
    ),
}


def get(slug: str) -> Paper:
    """The paper with this slug; a KeyError that names close matches otherwise."""
    try:
        return BY_SLUG[slug]
    except KeyError:
        close = difflib.get_close_matches(slug, list(BY_SLUG), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"unknown paper {slug!r}{hint}") from None


def select(names: list[str] | tuple[str, ...]) -> list[Paper]:
    """Papers named by slug or by area, in catalogue order; all papers for an empty list."""
    if not names:
        return list(PAPERS)
    chosen: list[Paper] = []
    for name in names:
        if name in AREAS:
            chosen.extend(p for p in PAPERS if p.area == name)
        else:
            chosen.append(get(name))
    seen: set[str] = set()
    return [p for p in chosen if not (p.slug in seen or seen.add(p.slug))]
