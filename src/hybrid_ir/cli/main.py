"""The hybrid-ir command: the package's steps outside Snakemake, for one's own files."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import re
import signal
import sys
from importlib.metadata import version
from typing import TextIO

from hybrid_ir import paths
from hybrid_ir.cli.commands import (
    check_command,
    claims_command,
    compare_command,
    config_command,
    convert_command,
    crossval_command,
    data_command,
    evaluate_command,
    explore_command,
    fetch_command,
    fuse_command,
    hub_pin_command,
    index_command,
    manifest_add_command,
    manifest_from_sources_command,
    manifest_members_command,
    provenance_command,
    search_command,
    status_command,
    targets_command,
)
from hybrid_ir.cli.completion import SHELLS, completion_script
from hybrid_ir.data.formats import MAX_RELEVANCE, relevance_limit
from hybrid_ir.data.runs import DEFAULT_K, DUPLICATE_POLICIES
from hybrid_ir.errors import HybridIRError, printable
from hybrid_ir.evaluation.significance import MAX_PERMUTATIONS, PERMUTATIONS, RANDOMIZATION_SEED
from hybrid_ir.fusion.crossval import ALPHAS, PAPER_SEED
from hybrid_ir.fusion.methods import FUSION_METHODS
from hybrid_ir.reports.compare import RENDERERS
from hybrid_ir.reports.explore.katex import DEBIAN_KATEX
from hybrid_ir.retrieval.bm25 import DEFAULTS as BM25_DEFAULTS
from hybrid_ir.retrieval.bm25 import JAVA_INT_MAX
from hybrid_ir.retrieval.lucene.index import LAYOUTS

SEED_MAX = 2**32 - 1
"""The largest seed every generator here takes (numpy's legacy RandomState: below 2^32)."""


def _seed(text: str) -> int:
    """A ``--seed``: an integer from 0 to :data:`SEED_MAX`, as the configuration's seeds."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{value} is outside 0..{SEED_MAX}")
    return value


def _source(text: str) -> tuple[str, str]:
    """A ``--source ROLE=PATH``, both parts non-empty."""
    role, equals, path = text.partition("=")
    if not (equals and role and path):
        raise argparse.ArgumentTypeError(f"{text!r} is not ROLE=PATH")
    return role, path


def _add_input_options(parser: argparse.ArgumentParser, qrels: bool = True) -> None:
    parser.add_argument(
        "--run-format",
        choices=["trec", "arqmath"],
        default=None,
        help="layout of every run file (default: decided from each file's first line)",
    )
    parser.add_argument(
        "--duplicates",
        choices=DUPLICATE_POLICIES,
        default="max",
        help="a document listed twice for one topic of a run: keep its highest score (max, the "
        "default), its first line's score (first), or refuse the file (error, as trec_eval "
        "does); the lenient two warn with the count",
    )
    if qrels:
        parser.add_argument(
            "--max-relevance",
            type=int,
            default=MAX_RELEVANCE,
            help=f"largest |relevance| accepted in the qrels (default {MAX_RELEVANCE})",
        )


_RUNS = (
    "TREC or ARQMath-TSV run files, or run names (collection/topics/system, or system with "
    "--topics)"
)
_QRELS = "TREC qrels, a qrels name (collection/qrels) or an ir_datasets id"


def _add_names_options(parser: argparse.ArgumentParser, qrels: bool = True) -> None:
    """``--topics``, the topic set a bare system name is a run of, and ``--qrels``, which
    defaults to that topic set's qrels."""
    parser.add_argument(
        "--topics",
        default=None,
        help="a topic set of the results folder (collection/topics, e.g. toy/test), or an "
        "ir_datasets id: a run given by its system name alone is that topic set's run"
        + (", and its qrels are the default --qrels" if qrels else "")
        + " (default: none; runs by file or full name)",
    )
    if qrels:
        parser.add_argument(
            "--qrels",
            default=None,
            help=f"{_QRELS} (default: the qrels of --topics: its collection's of the same "
            "name, or the only ones)",
        )


def _add_measures_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--measures",
        nargs="+",
        default=None,
        help="measure sets and/or ir_measures names (default: chosen from the qrels and said "
        "on stderr: arqmath, relevant from grade 2, when a grade is 2 or more, else beir, i.e. "
        "nDCG@10 R@100 R@1000)",
    )


# Options that count something: a value below 1 is refused as a one-line error (exit 1).
_POSITIVE_OPTIONS = ("depth", "folds", "threads", "max_relevance", "permutations", "connections")


# Counts with a ceiling: what the engine takes, or what finishes in reasonable time.
_MAXIMA = {
    "depth": (JAVA_INT_MAX, "a Java int, the most Lucene takes"),
    "threads": (JAVA_INT_MAX, "a Java int, the most Lucene takes"),
    "permutations": (MAX_PERMUTATIONS, "the most sign flips a test draws"),
}


def _check_positive(args: argparse.Namespace) -> None:
    for name in _POSITIVE_OPTIONS:
        value = getattr(args, name, None)
        option = "--" + name.replace("_", "-")
        if value is not None and value < 1:
            raise HybridIRError(f"{option} must be at least 1, got {value}")
        maximum, why = _MAXIMA.get(name, (None, ""))
        if value is not None and maximum is not None and value > maximum:
            raise HybridIRError(f"{option} must be at most {maximum:,} ({why}), got {value}")
    _check_bm25(args)


def _check_bm25(args: argparse.Namespace) -> None:
    """BM25's parameters as Lucene takes them (it threw IllegalArgumentException otherwise)."""
    k1 = getattr(args, "k1", None)
    if k1 is not None and not (math.isfinite(k1) and k1 >= 0):
        raise HybridIRError(f"--k1 must be a finite number of at least 0, got {k1}")
    b = getattr(args, "b", None)
    if b is not None and not 0 <= b <= 1:
        raise HybridIRError(f"--b must be from 0 to 1, got {b}")


class _HelpFormatter(argparse.HelpFormatter):
    """Ends an option's help with its default, unless the help states it already; an option
    without a value to state (a flag, a required one) keeps its help as written."""

    def add_argument(self, action: argparse.Action) -> None:
        # argparse sizes the name column from a subcommand's name without the extra indent it
        # is printed with, so the longest name would wrap onto a line of its own.
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            longest = max((len(name) for name in action.choices), default=0)
            self._action_max_length = max(
                self._action_max_length, longest + self._current_indent + self._indent_increment
            )

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text
            or not action.option_strings
            or action.required
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return action.help
        default = action.default
        if isinstance(default, list):
            default = " ".join(map(str, default)) or "none"
        # argparse expands %-formats in help strings.
        return f"{text} (default: {str(default).replace('%', '%%')})".lstrip()


class _Commands:
    """The parser's subcommands: each with a one-line summary, which ``hybrid-ir --help`` lists,
    and a description heading its own --help (the summary where it needs no more)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        self, name: str, summary: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        return self.commands.add_parser(
            name, help=summary, description=description or summary, formatter_class=_HelpFormatter
        )

    def group(self, name: str, summary: str):
        return self.command(name, summary).add_subparsers(
            dest=f"{name}_command", required=True, metavar="COMMAND"
        )

    def subcommand(self, commands_of, name: str, help: str, description: str | None = None):
        return commands_of.add_parser(
            name, formatter_class=_HelpFormatter, help=help, description=description or help
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybrid-ir", description=__doc__, formatter_class=_HelpFormatter
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {version('hybrid-ir')}",
        help="print the package version and exit",
    )
    cli = _Commands(parser)
    _add_manifest_and_config(cli)
    _add_fetch_and_convert(cli)
    _add_bm25(cli)
    _add_evaluate_and_fuse(cli)
    _add_checks_and_results(cli)
    _add_explore(cli)
    _add_status(cli)
    completion = cli.command(
        "completion",
        "print a shell completion script (bash or zsh)",
        description="print the completion script of hybrid-ir for a shell, generated from this "
        "parser; e.g. in ~/.bashrc: source <(hybrid-ir completion bash), in ~/.zshrc: "
        "source <(hybrid-ir completion zsh)",
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion.set_defaults(handler=_completion)
    return parser


def _completion(args: argparse.Namespace) -> None:
    print(completion_script(build_parser(), args.shell), end="")


def _add_configuration_options(parser: argparse.ArgumentParser) -> None:
    """The configuration as Snakemake merges it: the workflow's config.yaml, then overlays."""
    parser.add_argument(
        "--configfile", nargs="*", default=[], help="overlays, lowest priority first"
    )
    parser.add_argument("--base", default="config.yaml", help="the workflow's config.yaml")


def _add_manifest_and_config(cli: _Commands) -> None:
    """The manifest of raw files, and the merged configuration."""
    manifest_commands = cli.group("manifest", "write raw-file manifest rows (path, sha256, size)")
    add = cli.subcommand(
        manifest_commands,
        "add",
        "add (or update) the rows of files put in the mirror, e.g. a full collection",
    )
    add.add_argument("files", nargs="+", help="files inside the mirror folder")
    add.add_argument("--mirror", default=None, help="mirror folder (default: $HYBRID_IR_MIRROR)")
    add.add_argument("--manifest", default=paths.MANIFEST, help="manifest to update")
    add.add_argument(
        "--url",
        default=None,
        help="https URL the files can be downloaded from (default: none, mirror only)",
    )
    add.set_defaults(handler=manifest_add_command)
    members = cli.subcommand(
        manifest_commands,
        "members",
        "write the member list of a mirror archive packed from many upstream files",
        "write the member list (workflow/resources/members/<path>.json) of an archive in the "
        "mirror that was packed from many files of its manifest row's repository and commit, "
        "so that the archive can be rebuilt from them",
    )
    members.add_argument("archive", help="the archive, inside the mirror folder")
    members.add_argument(
        "--upstream-folder",
        required=True,
        help="the repository folder the member names start in, ending in / (e.g. data/)",
    )
    members.add_argument(
        "--mirror", default=None, help="mirror folder (default: $HYBRID_IR_MIRROR)"
    )
    members.add_argument("--manifest", default=paths.MANIFEST, help="manifest the row is in")
    members.set_defaults(handler=manifest_members_command)
    sources = cli.subcommand(
        manifest_commands, "from-sources", "rebuild the whole manifest from a mirror's SOURCES.md"
    )
    sources.add_argument("sources", help="SOURCES.md at the root of the mirror's data folder")
    sources.add_argument("-o", "--output", default=paths.MANIFEST, help="manifest to write")
    sources.set_defaults(handler=manifest_from_sources_command)

    data = cli.command(
        "data",
        "list the raw files a configuration needs, their state and source; download them",
        description="list every raw file the configuration needs: its state (fetched, in the "
        "mirror, to download, to obtain by hand, corrupt), size and source, and the total to "
        "download; exit status 0 when every file is here or downloadable. With --download, "
        "download what can be (into the mirror, resuming partial files) and list what must be "
        "obtained by hand, with the hybrid-ir manifest add line for each.",
    )
    _add_configuration_options(data)
    data.add_argument(
        "--download", action="store_true", help="download the missing files that can be"
    )
    data.add_argument(
        "--connections",
        type=int,
        default=4,
        help="downloads side by side (default: 4)",
    )
    data.set_defaults(handler=data_command)

    config = cli.command(
        "config",
        "print each model's effective training settings",
        description="print each model's effective training settings for config.yaml and overlays, "
        "merged as Snakemake merges --configfile",
    )
    _add_configuration_options(config)
    config.set_defaults(handler=config_command)

    targets = cli.command(
        "targets",
        "list the tables, figures and claims pages a configuration builds",
        description="list every table, figure and claims page the configuration builds, by "
        "paper: its name, the paper's table or figure number and its title where the "
        "configuration gives them, its files, and the Snakemake target that builds it (one "
        "per paper too, e.g. snakemake --cores all paper001); and the tables it does not build "
        "here, with why and the configuration file that does",
    )
    _add_configuration_options(targets)
    targets.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="output: text by paper, or one JSON object (papers, outputs, not_built)",
    )
    targets.set_defaults(handler=targets_command)

    hub_commands = cli.group("hub", "hub models a configuration names")
    pin = cli.subcommand(
        hub_commands,
        "pin",
        "ask the hub (HF_ENDPOINT, if set) for the commit of every unpinned hub model",
        "ask the hub (HF_ENDPOINT, if set) for the commit it serves now of every hub model the "
        "configuration names without a pin; print the hub_models lines, or add them to a "
        "configuration file",
    )
    _add_configuration_options(pin)
    pin.add_argument(
        "--write", default=None, help="configuration file to add the pins to (default: print them)"
    )
    pin.set_defaults(handler=hub_pin_command)


def _add_fetch_and_convert(cli: _Commands) -> None:
    """Raw files into the mirror, and raw collections into canonical files."""
    fetch = cli.command(
        "fetch",
        "copy raw files from the mirror and verify sha256",
        description="copy raw files from the mirror (or download them) and verify sha256",
    )
    fetch.add_argument("paths", nargs="+", help="manifest paths, e.g. cf/original/cfquery")
    fetch.add_argument("--manifest", default=paths.MANIFEST, help="manifest of the raw files")
    fetch.add_argument("--mirror", default=None, help="mirror folder (default: $HYBRID_IR_MIRROR)")
    fetch.add_argument(
        "--output-dir",
        default=None,
        help=f"folder the files are copied into, under their manifest paths (default: "
        f"{paths.raw('')})",
    )
    fetch.set_defaults(handler=fetch_command)

    convert = cli.command(
        "convert",
        "convert a raw collection to canonical files",
        description="convert a raw collection to canonical files",
    )
    convert.add_argument("reader", help="reader name, e.g. cf, beir, scifact_allenai_csv")
    convert.add_argument(
        "--source",
        action="append",
        type=_source,
        default=[],
        metavar="ROLE=PATH",
        help="a raw file and the reader's role for it; repeat for each (default: none)",
    )
    convert.add_argument("--topics", nargs="*", default=[], help="topic set names")
    convert.add_argument("--qrels", nargs="*", default=[], help="qrels set names")
    convert.add_argument("--tables", nargs="*", default=[], help="extra table names")
    convert.add_argument("--no-corpus", action="store_true", help="the reader has no corpus")
    convert.add_argument(
        "--languages", nargs="*", default=[], help="languages of a multilingual corpus (en fr ...)"
    )
    convert.add_argument(
        "--field",
        action="append",
        type=_source,
        default=[],
        metavar="ROLE=NAME",
        help="multilingual reader: the field holding a role, e.g. doc_id=_id (default: none)",
    )
    convert.add_argument("-o", "--output-dir", required=True, help="folder of the canonical files")
    convert.set_defaults(handler=convert_command)


def _add_bm25(cli: _Commands) -> None:
    """Lucene BM25 indexes and runs."""
    index = cli.command(
        "index",
        "build a Lucene BM25 index from corpus JSONL",
        description="build a Lucene BM25 index from corpus JSONL",
    )
    index.add_argument("corpus", help="canonical corpus JSONL")
    index.add_argument("index", help="index folder to write")
    index.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="flat",
        help="flat: title and text in one field; multifield: one field each",
    )
    index.add_argument("--threads", type=int, default=1, help="indexing threads")
    index.set_defaults(handler=index_command)

    search = cli.command(
        "search",
        "BM25 top-k run (TREC format) for topics JSONL",
        description="BM25 top-k run (TREC format) for topics JSONL",
    )
    search.add_argument("index", help="index folder (hybrid-ir index)")
    search.add_argument("topics", help="canonical topics JSONL")
    search.add_argument("-o", "--output", required=True, help="run file to write")
    # The defaults are BM25Settings', which the workflow's rule and the API share.
    search.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=BM25_DEFAULTS.layout,
        help="the index's layout, as built",
    )
    search.add_argument("--k1", type=float, default=BM25_DEFAULTS.k1, help="BM25 k1")
    search.add_argument("--b", type=float, default=BM25_DEFAULTS.b, help="BM25 b")
    search.add_argument(
        "--depth", type=int, default=BM25_DEFAULTS.depth, help="documents kept per topic"
    )
    search.add_argument(
        "--remove-query",
        action="store_true",
        help="drop a hit whose id is the topic's own id (a collection that holds its queries)",
    )
    search.add_argument(
        "--query-fields",
        nargs="+",
        default=list(BM25_DEFAULTS.query_fields),
        help="topic fields of the query",
    )
    search.add_argument("--tag", default=BM25_DEFAULTS.tag, help="run tag")
    search.add_argument("--threads", type=int, default=BM25_DEFAULTS.threads, help="search threads")
    search.set_defaults(handler=search_command)


def _add_evaluate_and_fuse(cli: _Commands) -> None:
    """Evaluation, cross-validation and fusion of run files."""
    evaluate = cli.command(
        "evaluate",
        "evaluate runs as the official tools do",
        description="evaluate runs as the official tools do: measure sets arqmath (prime "
        "measures), ntcir12, beir, cf, recall(k...) or any ir_measures name",
    )
    _add_names_options(evaluate)
    evaluate.add_argument("--run", nargs="+", required=True, help=_RUNS)
    _add_measures_option(evaluate)
    evaluate.add_argument("--per-query", action="store_true", help="also print each topic")
    evaluate.add_argument(
        "--format",
        choices=["md", "csv", "json"],
        default="md",
        help="output: a Markdown table, CSV or a JSON list of rows",
    )
    evaluate.add_argument(
        "--allow-disjoint",
        action="store_true",
        help="warn, instead of failing, when a run shares no topic with the qrels",
    )
    _add_input_options(evaluate)
    evaluate.set_defaults(handler=evaluate_command)

    crossval = cli.command(
        "crossval",
        "cross-validate the weight of a linear fusion",
        description="k-fold cross-validation of alpha in alpha*DENSE + (1-alpha)*BASE (min-max "
        "normalized), one alpha per metric tuned on the other folds",
    )
    crossval.add_argument("dense", help="run whose weight is alpha (a file or a name)")
    crossval.add_argument("base", help="run whose weight is 1 - alpha (a file or a name)")
    _add_names_options(crossval)
    _add_measures_option(crossval)
    crossval.add_argument("--folds", type=int, default=5, help="number of folds")
    crossval.add_argument("--seed", type=_seed, default=PAPER_SEED, help="seed of the fold split")
    crossval.add_argument(
        "--alphas",
        type=float,
        nargs="+",
        default=list(ALPHAS),
        help="alphas tried on each fold",
    )
    crossval.add_argument(
        "--legacy",
        action="store_true",
        help="pya0 crossvalidate.py's folds and fold means (numpy shuffle, 4-decimal rounding)",
    )
    crossval.add_argument("--depth", type=int, default=DEFAULT_K, help="documents kept per topic")
    crossval.add_argument(
        "-o", "--output", help="write the full report (JSON) here (default: none, table only)"
    )
    _add_input_options(crossval)
    crossval.set_defaults(handler=crossval_command)

    fuse = cli.command(
        "fuse",
        "fuse runs with one of the fusion methods",
        description=f"fuse runs: {', '.join(FUSION_METHODS)} (linear, interleave and score_hybrid "
        "weigh the first run)",
    )
    fuse.add_argument("--method", required=True, help=f"fusion method: {', '.join(FUSION_METHODS)}")
    fuse.add_argument(
        "--alpha",
        type=float,
        help="linear: weight of the first (dense) run (no default: linear needs it)",
    )
    fuse.add_argument("--rrf-k", type=int, help="rrf: the constant k (default 60)")
    fuse.add_argument(
        "--eta",
        type=float,
        help="interleave: share of the first run (no default: interleave needs it)",
    )
    fuse.add_argument(
        "--lam",
        type=float,
        help="score_hybrid: weight of the first (dense) run (no default: score_hybrid needs it)",
    )
    fuse.add_argument("--depth", type=int, default=DEFAULT_K, help="documents kept per topic")
    fuse.add_argument("--tag", default=None, help="run tag (default: the method)")
    fuse.add_argument("runs", nargs="+", help=_RUNS)
    _add_names_options(fuse, qrels=False)
    fuse.add_argument(
        "-o", "--output", default=None, help="run file to write (default: METHOD.trec)"
    )
    _add_input_options(fuse, qrels=False)
    fuse.set_defaults(handler=fuse_command)


def _add_checks_and_results(cli: _Commands) -> None:
    """Expected-score checks, comparisons of runs, provenance and claims."""
    check = cli.command(
        "check",
        "fail unless every expected-score check passed",
        description="fail unless every expected-score check passed",
    )
    check.add_argument(
        "summary",
        nargs="?",
        default=paths.checks("summary.tsv"),
        help=f"the checks' summary (default: {paths.checks('summary.tsv')})",
    )
    check.set_defaults(handler=check_command)

    compare = cli.command(
        "compare",
        "compare runs with a baseline, with paired tests",
        description="compare runs with a baseline per measure: scores, difference, two-tailed "
        "paired t-test and randomization test p-values, on the topics each run shares with the "
        "baseline and the qrels",
    )
    compare.add_argument("runs", nargs="+", help=f"{_RUNS}, to compare")
    compare.add_argument(
        "--baseline", required=True, help="the run every run is compared with (a file or a name)"
    )
    _add_names_options(compare)
    _add_measures_option(compare)
    compare.add_argument(
        "--permutations",
        type=int,
        default=PERMUTATIONS,
        help="random sign flips of the randomization test, at most "
        f"{MAX_PERMUTATIONS:,}; all 2^n are enumerated when that is no more (default: "
        f"{PERMUTATIONS})",
    )
    compare.add_argument(
        "--seed", type=_seed, default=RANDOMIZATION_SEED, help="seed of the random sign flips"
    )
    compare.add_argument(
        "--holm",
        action="store_true",
        help="add Holm–Bonferroni-adjusted p-values across the runs of each measure (the "
        "significance markers then follow them)",
    )
    compare.add_argument(
        "--format",
        choices=list(RENDERERS),
        default="md",
        help="output: a Markdown table with notes, CSV with every p-value unrounded, a LaTeX "
        "(booktabs) table, or JSON (every number unrounded; keys in "
        "docs/guides/evaluate-your-run.md)",
    )
    _add_input_options(compare)
    compare.set_defaults(handler=compare_command)

    provenance = cli.command(
        "provenance",
        "print what produced a workflow result",
        description="print what produced a workflow result (rule, commit, configuration hash, "
        "packages, seeds, wall time) and each of its inputs, back to the raw files and their "
        "sha256; run it in the workflow's directory",
    )
    provenance.add_argument("result", help="a file under results/, e.g. a table or a run")
    provenance.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="output: indented text, or one JSON tree (keys in "
        "docs/explanations/determinism-and-provenance.md)",
    )
    provenance.set_defaults(handler=provenance_command)

    claims = cli.command(
        "claims",
        "print each paper's claims as the workflow judged them",
        description="print each paper's claims as the workflow judged them (verdict, effect with "
        "its 95% interval, p, detectable effect, the paper's effect, Effect Ratio, ΔRI), from "
        "results/claims/",
    )
    claims.add_argument(
        "--results", default="results", help="the results directory (default: results)"
    )
    claims.add_argument(
        "--format", choices=["text", "json"], default="text", help="output (default: text)"
    )
    claims.set_defaults(handler=claims_command)


def _add_explore(cli: _Commands) -> None:
    explore = cli.command(
        "explore",
        "write a per-topic explorer page for two or more runs",
        description="write a per-topic explorer page (one self-contained HTML file) comparing "
        "runs topic by topic: pick a system, a baseline and a measure for the sorted per-topic "
        "differences with the mean difference, its 95% interval and the paired t-test, the "
        "breakdown by topic label (with --labels), and each topic's two rankings side by side "
        "with grades and document texts, formulas rendered with KaTeX where it is installed "
        "(Debian's libjs-katex); the first run opens as the system, the second as the baseline",
    )
    explore.add_argument("runs", nargs="+", help=f"{_RUNS} (two or more)")
    explore.add_argument(
        "--topics",
        required=True,
        help="topics, canonical JSON Lines, or a topic set's name (collection/topics)",
    )
    explore.add_argument(
        "--qrels",
        help="TREC qrels, or a qrels name (collection/qrels) (default: the qrels of --topics)",
    )
    explore.add_argument(
        "--corpus",
        help="corpus, canonical JSON Lines, or a collection's name (default: the corpus of "
        "--topics' collection)",
    )
    explore.add_argument(
        "--labels",
        help="topic label table (TSV: topic_id, optionally set, label columns; default: none, "
        "no breakdown by label)",
    )
    explore.add_argument(
        "--label-set",
        help="keep the label rows whose set column is this (default: every row)",
    )
    _add_measures_option(explore)
    explore.add_argument(
        "--top-k", type=int, default=10, help="documents shown per ranking and topic (default: 10)"
    )
    explore.add_argument(
        "--text-chars",
        type=int,
        default=1000,
        help="characters kept of each text, cut before a formula (default: 1000)",
    )
    explore.add_argument("--title", help="the page's title (default: the runs' names)")
    explore.add_argument(
        "--katex",
        default=DEBIAN_KATEX,
        help=f"KaTeX release folder to inline (default: {DEBIAN_KATEX}, Debian's libjs-katex; "
        "without it formulas show as TeX)",
    )
    explore.add_argument(
        "-o", "--output", default="explore.html", help="page to write (default: explore.html)"
    )
    _add_input_options(explore)
    explore.set_defaults(handler=explore_command)


def _add_status(cli: _Commands) -> None:
    status = cli.command(
        "status",
        "print where the current or last workflow run stands",
        description="print where the current or last Snakemake run of a workflow directory "
        "stands: its jobs finished, running (with their progress and time against their "
        "runtime), waiting and failed (with their log's last lines), for a local run and for "
        "one whose jobs run on SLURM alike; read from .snakemake/ and the jobs' logs",
    )
    status.add_argument(
        "--directory", default=".", help="the workflow directory (default: the current one)"
    )
    status.add_argument(
        "--log", help="a run's log under .snakemake/log/ (default: the newest, the last run's)"
    )
    status.add_argument(
        "--lines", type=int, default=10, help="lines of a failed job's log to show (default: 10)"
    )
    status.set_defaults(handler=status_command)


class _EscapedControls(io.TextIOBase):
    """Standard output with control characters other than line breaks and tabs (ESC, CR, BEL)
    written as escapes (``\\x1b``): a run file's name, a record or a title read from a file
    cannot recolour the terminal, move its cursor or rewrite a line already printed."""

    _CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._stream.write(self._CONTROLS.sub(lambda found: printable(found.group()), text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_positive(args)
        with (
            relevance_limit(getattr(args, "max_relevance", MAX_RELEVANCE)),
            contextlib.redirect_stdout(_EscapedControls(sys.stdout)),
        ):
            status = args.handler(args)
    except BrokenPipeError:
        # The reader stopped early (`| head`): say nothing more, as a command killed by
        # SIGPIPE would, and keep Python from complaining again when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (HybridIRError, OSError) as error:  # OSError: a missing or unreadable file
        print(f"hybrid-ir error: {printable(str(error))}", file=sys.stderr)
        return 1
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
