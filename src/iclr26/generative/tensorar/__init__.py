"""TensorAR: next-tensor prediction with discrete tensor noising (Cheng et al., ICLR 2026).

An AR image model predicts, at every step, a window of the next k tokens instead of one token;
consecutive windows overlap by k-1 tokens, so every position is drafted k times and refined
until it is committed as the first slot. A zero-initialised input encoder (window -> one hidden
state) and output decoder (hidden state -> k slot logits), residual around the base model's
embedding and LM head, plug it into an existing AR model without touching the transformer; a
uniform categorical noise on the input windows, growing with the slot index, stops the model
from copying the overlapping ground truth. Generation keeps one body pass per position.
"""

from iclr26.generative.tensorar.evaluate import DigitEvaluator, frechet_distance
from iclr26.generative.tensorar.llamagen import LlamaGenConfig, LlamaGenGPT
from iclr26.generative.tensorar.model import TinyARImageModel
from iclr26.generative.tensorar.pretrained import (
    CheckpointMismatchError,
    HFCausalLMBase,
    LlamaGenBase,
)
from iclr26.generative.tensorar.tensor import (
    DiscreteTensorNoiser,
    TensorInputEncoder,
    TensorOutputDecoder,
    build_windows,
)
from iclr26.generative.tensorar.tokenizer import VQTokenizer, load_digits_split
from iclr26.generative.tensorar.wrapper import TensorARWrapper

__all__ = [
    "CheckpointMismatchError",
    "DigitEvaluator",
    "DiscreteTensorNoiser",
    "HFCausalLMBase",
    "LlamaGenBase",
    "LlamaGenConfig",
    "LlamaGenGPT",
    "TensorARWrapper",
    "TensorInputEncoder",
    "TensorOutputDecoder",
    "TinyARImageModel",
    "VQTokenizer",
    "build_windows",
    "frechet_distance",
    "load_digits_split",
]
