"""The catalogue: every paper the package implements, one explicit table.

Each row names the paper's slug (also the id its claims carry), its title, the area and
module of its room, and the seed file of abstracts it comes from. A paper whose room does
not exist yet is still listed; :func:`Paper.implemented` says which are.
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass

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
        """True once the paper's room and its claim checks exist in this installation."""
        try:
            return importlib.util.find_spec(self.claims_module) is not None
        except ModuleNotFoundError:
            return False


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
