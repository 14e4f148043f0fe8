"""Towards quantization-aware training for ultra-low-bit reasoning LLMs (Okoshi et al.).

Weight-only 2/3-bit QAT for any Hugging Face causal LM: ``QuantLinear`` fake quantization
(asymmetric, per group, straight-through), stage 1 block-wise calibration on a mixed-domain
(reasoning + pre-training) set, stage 2 fine-tuning with the teacher-guided
reward-rectification loss, RTN, GPTQ and AWQ baselines, and export of packed integer weights.
"""

from iclr26.llm.qat_reasoning.awq import (
    AWQGroup,
    AWQReport,
    awq_clip_search,
    awq_quantize,
    awq_scale,
    awq_search_scale,
)
from iclr26.llm.qat_reasoning.calibrate import CalibrationReport, blockwise_calibrate
from iclr26.llm.qat_reasoning.evaluate import EvalSuite, lm_scores, reasoning_exact_match
from iclr26.llm.qat_reasoning.export import (
    folder_bytes,
    load_quantized,
    pack_bits,
    save_quantized,
    storage_bits,
    unpack_bits,
)
from iclr26.llm.qat_reasoning.gptq import gptq_layer, gptq_quantize
from iclr26.llm.qat_reasoning.loss import RewardRectificationLoss
from iclr26.llm.qat_reasoning.pipeline import ReasoningQAT
from iclr26.llm.qat_reasoning.quant import (
    VALID_BITS,
    QuantLinear,
    dequantize_model,
    quant_layers,
    quantize_model,
    rtn_quantize,
)
from iclr26.llm.qat_reasoning.tasks import (
    ArithmeticProblem,
    MixedDomainCalibration,
    arithmetic_problems,
    parse_answer,
)
from iclr26.llm.qat_reasoning.teacher import reasoning_teacher, teacher_examples

__all__ = [
    "VALID_BITS",
    "AWQGroup",
    "AWQReport",
    "ArithmeticProblem",
    "CalibrationReport",
    "EvalSuite",
    "MixedDomainCalibration",
    "QuantLinear",
    "ReasoningQAT",
    "RewardRectificationLoss",
    "arithmetic_problems",
    "awq_clip_search",
    "awq_quantize",
    "awq_scale",
    "awq_search_scale",
    "blockwise_calibrate",
    "dequantize_model",
    "folder_bytes",
    "gptq_layer",
    "gptq_quantize",
    "lm_scores",
    "load_quantized",
    "pack_bits",
    "parse_answer",
    "quant_layers",
    "quantize_model",
    "reasoning_exact_match",
    "reasoning_teacher",
    "rtn_quantize",
    "save_quantized",
    "storage_bits",
    "teacher_examples",
    "unpack_bits",
]
