"""Bad-input cases of the DIAL room (tiny arrays; each call fails at the public boundary)."""

import os
import tempfile

import numpy as np
import torch

from iclr26.vision.dial import (
    DIAL,
    GroupOracleProbe,
    HashingTextEncoder,
    HFCLIPBackend,
    MarginFilter,
    MiniLMEncoder,
    OpenCLIPBackend,
    OrthProj,
    PCARemoval,
    RoboShotLite,
    TinyCLIP,
    TinyCLIPBackend,
    TopKSAE,
    ZeroShot,
    affected_set,
    auxk_loss,
    class_prompts,
    clip_loss,
    default_insights,
    enrichment,
    group_accuracy,
    load_celeba,
    load_waterbirds,
    make_captions,
    margins,
    max_abs_cos,
    remove_subspace,
    select_k_alpha,
    spurious_prompts,
    stratified_subset,
    subspace_basis,
    train_sae,
    train_tinyclip,
    vocab_prompts,
    zero_shot_probs,
)
from iclr26.vision.dial.dial import DIALPlus

NAN, INF = float("nan"), float("inf")
RNG = np.random.default_rng(0)
E = RNG.standard_normal((12, 4))
E_NAN = E.copy()
E_NAN[0, 0] = NAN
E_INF = E.copy()
E_INF[1, 1] = INF
T = RNG.standard_normal((2, 4))
S = RNG.standard_normal((2, 4))
P = np.full((12, 2), 0.5)
MASK = np.arange(12) < 4
U = subspace_basis(S)
SAE = TopKSAE(4, 8, 2)
IMG = np.random.default_rng(1).random((2, 3, 8, 8)).astype(np.float32)
HASH = HashingTextEncoder(8)
CLIP = TinyCLIP(HASH, embed_dim=4, width=4, image_dim=4)


class _OCModule(torch.nn.Module):  # the open_clip interface, no weights
    def __init__(self):
        super().__init__()
        self.visual = torch.nn.Linear(3 * 8 * 8, 4)
        self.visual.image_size = 8

    def encode_image(self, x):
        return self.visual(x.flatten(1))

    def encode_text(self, tokens):
        return tokens.float()


_OC_MODULE = _OCModule()
NO_FOLDER = os.path.join(tempfile.gettempdir(), "iclr26-dial-no-such-dataset-folder")
EMPTY_FOLDER = os.path.dirname(os.path.abspath(__file__))  # no dataset metadata files here

CASES = [
    ("DIAL", "nan", lambda: DIAL(sae_steps=1).fit(E_NAN, T, S), ValueError, "X"),
    ("DIAL", "inf", lambda: DIAL(sae_steps=1).fit(E_INF, T, S), ValueError, "X"),
    ("DIAL", "shape", lambda: DIAL(sae_steps=1).fit(E, T[:, :3], S), ValueError,
     "class_text_emb"),
    ("DIAL", "empty", lambda: DIAL(sae_steps=1).fit(E[:0], T, S), ValueError, "X"),
    ("DIAL", "other", lambda: DIAL(sae_steps=1).fit(E, T), ValueError, "spurious_text_emb"),
    ("DIAL", "range", lambda: DIAL(sae=SAE, k_grid=range(1, 12)).fit(E, T, S), ValueError,
     "k_grid"),  # the SAE has 8 latents: more directions than it has
    ("DIAL", "range", lambda: DIAL(sae=SAE, n_directions=9, alpha=1.0).fit(E, T, S),
     ValueError, "n_directions"),
    ("DIAL", "range", lambda: DIAL(sae_width=1, k_grid=(5,)).fit(E, T, S), ValueError,
     "k_grid"),
    ("DIAL", "range", lambda: DIAL(alpha_grid=(0.5, 1.5)).fit(E, T, S), ValueError,
     "alpha_grid"),
    ("DIAL", "range", lambda: DIAL(temperature=NAN).fit(E, T, S), ValueError, "temperature"),
    ("DIAL", "other", lambda: DIAL(apply_to="some").fit(E, T, S), ValueError, "apply_to"),
    ("DIAL", "range", lambda: DIAL(sae_k=100).fit(E, T, S), ValueError, "sae_k"),
    ("DIAL", "other", lambda: DIAL().predict(E), RuntimeError, "DIAL"),
    ("DIALPlus", "nan", lambda: DIALPlus(sae_steps=1).fit(E_NAN, T), ValueError, "X"),
    ("DIALPlus", "range", lambda: DIALPlus(kappa_quantile=2.0).fit(E, T), ValueError,
     "kappa_quantile"),
    ("DIALPlus", "shape", lambda: DIALPlus(vocab_text_emb=S, vocab=("a", "b", "c")).fit(E, T),
     ValueError, "vocab_text_emb"),
    ("DIALPlus", "other", lambda: DIALPlus().fit(E, T, S), ValueError, "spurious_text_emb"),
    ("TopKSAE", "range", lambda: TopKSAE(4, 8, k=9), ValueError, "k"),
    ("TopKSAE", "range", lambda: TopKSAE(0), ValueError, "d"),
    ("TopKSAE", "shape", lambda: SAE.encode(torch.zeros(3, 5)), ValueError, "e"),
    ("TopKSAE", "nan", lambda: SAE.encode(torch.full((3, 4), NAN)), ValueError, "e"),
    ("train_sae", "nan", lambda: train_sae(E_NAN, steps=1), ValueError, "embeddings"),
    ("train_sae", "range", lambda: train_sae(E, steps=0), ValueError, "steps"),
    ("train_sae", "range", lambda: train_sae(E, lr=NAN, steps=1), ValueError, "lr"),
    ("train_sae", "shape", lambda: train_sae(E[:, :3], sae=SAE, steps=1), ValueError,
     "embeddings"),
    ("auxk_loss", "shape", lambda: auxk_loss(SAE, torch.zeros(2, 5), torch.zeros(2, 5),
     torch.ones(8, dtype=torch.bool), 2), ValueError, "e"),
    ("MarginFilter", "other", lambda: MarginFilter(method="kmeans"), ValueError, "method"),
    ("MarginFilter", "range", lambda: MarginFilter(quantile=1.0), ValueError, "quantile"),
    ("MarginFilter", "other", lambda: MarginFilter().predict(P), RuntimeError, "MarginFilter"),
    ("affected_set", "range", lambda: affected_set(P + 1), ValueError, "probs"),
    ("affected_set", "nan", lambda: affected_set(P * NAN), ValueError, "probs"),
    ("margins", "shape", lambda: margins(P[:, :1]), ValueError, "probs"),
    ("zero_shot_probs", "range", lambda: zero_shot_probs(E, T, temperature=0), ValueError,
     "temperature"),
    ("zero_shot_probs", "shape", lambda: zero_shot_probs(E, T[:1]), ValueError,
     "class_text_emb"),
    ("zero_shot_probs", "other", lambda: zero_shot_probs(np.zeros((2, 4)), T), ValueError,
     "img_emb"),
    ("remove_subspace", "shape", lambda: remove_subspace(E, U[:3]), ValueError, "basis"),
    ("remove_subspace", "range", lambda: remove_subspace(E, U, alpha=1.5), ValueError, "alpha"),
    ("remove_subspace", "shape", lambda: remove_subspace(E, U, mask=MASK[:5]), ValueError,
     "mask"),
    ("subspace_basis", "range", lambda: subspace_basis(S, k=3), ValueError, "k"),
    ("subspace_basis", "nan", lambda: subspace_basis(S * NAN), ValueError, "directions"),
    ("select_k_alpha", "other", lambda: select_k_alpha(E, T, np.zeros(12, bool), S),
     ValueError, "affected"),
    ("select_k_alpha", "empty", lambda: select_k_alpha(E, T, MASK, S, k_grid=()), ValueError,
     "k_grid"),
    ("select_k_alpha", "range", lambda: select_k_alpha(E, T, MASK, S, min_agreement=2),
     ValueError, "min_agreement"),
    ("enrichment", "shape", lambda: enrichment(E, MASK[:3], np.zeros(12, int)), ValueError,
     "affected"),
    ("enrichment", "other", lambda: enrichment(E, np.zeros(12, bool), np.zeros(12, int)),
     ValueError, "affected"),
    ("max_abs_cos", "nan", lambda: max_abs_cos(E_NAN, S), ValueError, "atoms"),
    ("ZeroShot", "nan", lambda: ZeroShot().fit(E_NAN, T), ValueError, "X"),
    ("ZeroShot", "range", lambda: ZeroShot(temperature=-1).fit(E, T), ValueError,
     "temperature"),
    ("OrthProj", "shape", lambda: OrthProj().fit(E, T, S[:, :2]), ValueError,
     "spurious_text_emb"),
    ("RoboShotLite", "shape", lambda: RoboShotLite().fit(E, T, S), ValueError,
     "insight_pairs_emb"),
    ("RoboShotLite", "other", lambda: RoboShotLite().fit(E, T, np.stack([S, S], 1)),
     ValueError, "insight_pairs_emb"),
    ("PCARemoval", "range", lambda: PCARemoval(k_grid=(1, 9)).fit(E, T), ValueError, "k_grid"),
    ("PCARemoval", "inf", lambda: PCARemoval().fit(E_INF, T), ValueError, "X"),
    ("GroupOracleProbe", "shape", lambda: GroupOracleProbe().fit(E, np.zeros(5), np.zeros(12)),
     ValueError, "y"),
    ("GroupOracleProbe", "other", lambda: GroupOracleProbe().fit(E, np.zeros(12), np.zeros(12)),
     ValueError, "y"),
    ("GroupOracleProbe", "range", lambda: GroupOracleProbe(C=0).fit(E, MASK, MASK), ValueError,
     "C"),
    ("group_accuracy", "shape", lambda: group_accuracy([0, 1], [0], [0, 1]), ValueError, "y"),
    ("group_accuracy", "dtype", lambda: group_accuracy([0.5, 1], [0, 1], [0, 1]), TypeError,
     "pred"),
    ("TinyCLIP", "range", lambda: TinyCLIP(HASH, embed_dim=0), ValueError, "embed_dim"),
    ("TinyCLIP", "type", lambda: TinyCLIP(text_encoder="minilm"), TypeError, "text_encoder"),
    ("TinyCLIP", "shape", lambda: CLIP.encode_image(torch.rand(2, 1, 8, 8)), ValueError,
     "images"),
    ("TinyCLIP", "nan", lambda: CLIP.encode_image(torch.full((2, 3, 8, 8), NAN)), ValueError,
     "images"),
    ("TinyCLIP", "empty", lambda: CLIP.encode_text([]), ValueError, "texts"),
    ("TinyCLIPBackend", "type", lambda: TinyCLIPBackend(object()), TypeError, "model"),
    ("TinyCLIPBackend", "range", lambda: TinyCLIPBackend(CLIP).image_embeddings(IMG + 2),
     ValueError, "images"),
    ("HFCLIPBackend", "type", lambda: HFCLIPBackend(object(), processor=object()), TypeError,
     "model"),
    ("OpenCLIPBackend", "other", lambda: OpenCLIPBackend(""), (ImportError, TypeError),
     "open_clip|model"),
    ("OpenCLIPBackend", "type", lambda: OpenCLIPBackend(object()), TypeError, "model"),
    ("OpenCLIPBackend", "type", lambda: OpenCLIPBackend(torch.nn.Linear(2, 2), tokenizer=str),
     TypeError, "model"),
    ("OpenCLIPBackend", "type", lambda: OpenCLIPBackend(_OC_MODULE), TypeError, "tokenizer"),
    ("OpenCLIPBackend", "range", lambda: OpenCLIPBackend(_OC_MODULE, tokenizer=str,
     batch_size=0), ValueError, "batch_size"),
    ("train_tinyclip", "other", lambda: train_tinyclip(IMG, ["a photo of a circle"] * 2,
     text_encoder=HASH, class_names=("circle", "square")), ValueError, "captions"),
    ("train_tinyclip", "shape", lambda: train_tinyclip(IMG, ["a circle"] * 3, text_encoder=HASH),
     ValueError, "images|captions"),
    ("train_tinyclip", "range", lambda: train_tinyclip(IMG, ["a circle"] * 2, text_encoder=HASH,
     epochs=0), ValueError, "epochs"),
    ("train_tinyclip", "range", lambda: train_tinyclip(IMG + 1, ["a circle"] * 2,
     text_encoder=HASH), ValueError, "images"),
    ("make_captions", "range", lambda: make_captions([0, 20], [0, 1]), ValueError, "labels"),
    ("make_captions", "shape", lambda: make_captions([0, 1], [0]), ValueError, "backgrounds"),
    ("make_captions", "range", lambda: make_captions([0, 1], [0, 1], drop_background=NAN),
     ValueError, "drop_background"),
    ("class_prompts", "type", lambda: class_prompts("circle"), TypeError, "class_names"),
    ("class_prompts", "empty", lambda: class_prompts([]), ValueError, "class_names"),
    ("spurious_prompts", "type", lambda: spurious_prompts([1, 2]), TypeError, "values"),
    ("vocab_prompts", "other", lambda: vocab_prompts(["water", " "]), ValueError, "words"),
    ("clip_loss", "shape", lambda: clip_loss(torch.zeros(2, 3), torch.arange(2)), ValueError,
     "logits"),
    ("default_insights", "other", lambda: default_insights(("water",)), ValueError, "values"),
    ("HashingTextEncoder", "range", lambda: HashingTextEncoder(0), ValueError, "dim"),
    ("HashingTextEncoder", "type", lambda: HASH("a circle"), TypeError, "texts"),
    ("MiniLMEncoder", "range", lambda: MiniLMEncoder(batch_size=0), ValueError, "batch_size"),
    ("MiniLMEncoder", "type", lambda: MiniLMEncoder(cache="yes"), TypeError, "cache"),
    ("load_waterbirds", "type", lambda: load_waterbirds(3), TypeError, "root"),
    ("load_waterbirds", "other", lambda: load_waterbirds(NO_FOLDER), FileNotFoundError,
     "root: no such folder"),
    ("load_waterbirds", "other", lambda: load_waterbirds(EMPTY_FOLDER), FileNotFoundError,
     "root: .*metadata.csv"),
    ("load_waterbirds", "other", lambda: load_waterbirds(NO_FOLDER, split="dev"), ValueError,
     "split must be one of 'train', 'val', 'test'"),
    ("load_waterbirds", "range", lambda: load_waterbirds(NO_FOLDER, size=0), ValueError, "size"),
    ("load_waterbirds", "type", lambda: load_waterbirds(NO_FOLDER, size=NAN), TypeError, "size"),
    ("load_waterbirds", "empty", lambda: load_waterbirds(NO_FOLDER, max_n=0), ValueError,
     "max_n"),
    ("load_waterbirds", "other", lambda: load_waterbirds(NO_FOLDER, on_error="ignore"),
     ValueError, "on_error"),
    ("load_celeba", "other", lambda: load_celeba(NO_FOLDER), FileNotFoundError, "root"),
    ("load_celeba", "other", lambda: load_celeba(EMPTY_FOLDER), FileNotFoundError,
     "root: .*list_attr_celeba"),
    ("load_celeba", "type", lambda: load_celeba(NO_FOLDER, target=9), TypeError, "target"),
    ("load_celeba", "other", lambda: load_celeba(NO_FOLDER, spurious="Blond_Hair"), ValueError,
     "spurious"),
    ("load_celeba", "other", lambda: load_celeba(NO_FOLDER, split="valid"), ValueError,
     "split"),
    ("load_celeba", "range", lambda: load_celeba(NO_FOLDER, max_n=-1), ValueError, "max_n"),
    ("stratified_subset", "range", lambda: stratified_subset([0, 1, 1], 1), ValueError, "max_n"),
    ("stratified_subset", "nan", lambda: stratified_subset([0.0, NAN], 1), ValueError, "groups"),
    ("stratified_subset", "empty", lambda: stratified_subset([], 1), ValueError, "groups"),
    ("stratified_subset", "dtype", lambda: stratified_subset([0.5, 1.0], 1), TypeError,
     "groups"),
]  # fmt: skip
EXEMPT = {}
