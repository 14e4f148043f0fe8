"""ChronoPlay: generating and maintaining a game RAG benchmark under dual dynamics (game
knowledge and player interest), with community-grounded question synthesis. See README.md."""

from iclr26.knowledge.chronoplay.drift import (
    PhasePartition,
    calibrate_threshold,
    jsd,
    match_change_points,
    partition_phases,
    weighted_jsd,
)
from iclr26.knowledge.chronoplay.evaluate import (
    evaluate_answers,
    evaluate_retrieval,
    ranking_metrics,
    stale_rate,
    topic_misalignment,
)
from iclr26.knowledge.chronoplay.generation import (
    ExtractiveTemplateGenerator,
    GenerationError,
    LLMGenerator,
    OpenAICompatibleClient,
    RuleJudge,
    infer_relation,
)
from iclr26.knowledge.chronoplay.mining import (
    TopicClassifier,
    mine_personas,
    mine_templates,
    semantic_dedup,
    topic_distribution,
)
from iclr26.knowledge.chronoplay.ner import GazetteerNER
from iclr26.knowledge.chronoplay.records import (
    BenchmarkSlice,
    CommunityQuestion,
    Persona,
    QAStore,
    QATuple,
    Snippet,
    Template,
)
from iclr26.knowledge.chronoplay.retrieval import BM25Retriever, DenseRetriever
from iclr26.knowledge.chronoplay.synthesis import SynthesisError, SynthesisPipeline
from iclr26.knowledge.chronoplay.taxonomy import QUESTION_TYPES, TAXONOMY, TOPICS
from iclr26.knowledge.chronoplay.updater import (
    DualDynamicUpdater,
    inherit_by_topic,
    target_counts,
)
from iclr26.knowledge.chronoplay.world import PERSONAS, QUESTION_PATTERNS, ToyGameWorld

__all__ = [
    "BM25Retriever",
    "BenchmarkSlice",
    "CommunityQuestion",
    "DenseRetriever",
    "DualDynamicUpdater",
    "ExtractiveTemplateGenerator",
    "GazetteerNER",
    "GenerationError",
    "LLMGenerator",
    "OpenAICompatibleClient",
    "PERSONAS",
    "PhasePartition",
    "Persona",
    "QAStore",
    "QATuple",
    "QUESTION_PATTERNS",
    "QUESTION_TYPES",
    "RuleJudge",
    "Snippet",
    "SynthesisError",
    "SynthesisPipeline",
    "TAXONOMY",
    "TOPICS",
    "Template",
    "TopicClassifier",
    "ToyGameWorld",
    "calibrate_threshold",
    "evaluate_answers",
    "evaluate_retrieval",
    "infer_relation",
    "inherit_by_topic",
    "jsd",
    "match_change_points",
    "mine_personas",
    "mine_templates",
    "partition_phases",
    "ranking_metrics",
    "semantic_dedup",
    "stale_rate",
    "target_counts",
    "topic_distribution",
    "topic_misalignment",
    "weighted_jsd",
]
