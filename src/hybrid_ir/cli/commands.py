"""What each ``hybrid-ir`` subcommand does, given its parsed arguments: the package's steps on
one's own files, outside Snakemake. :mod:`hybrid_ir.cli.main` builds the parser and calls these."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.config.claim_setups import claims_by_paper
from hybrid_ir.config.layers import config_layers, merged_config
from hybrid_ir.config.settings import training_plan
from hybrid_ir.config.sources import Layers, attributed
from hybrid_ir.config.validation import validate_config
from hybrid_ir.data import names
from hybrid_ir.data.checklist import (
    MAX_CONNECTIONS,
    RawFile,
    all_here,
    can_run,
    checklist,
    download_missing,
    load_by_hand,
    render,
    required_raw_files,
)
from hybrid_ir.data.collections import convert, reader_options, source_problems
from hybrid_ir.data.fetch import (
    Network,
    add_to_manifest,
    entry_for_file,
    fetch,
    load_manifest,
    manifest_from_sources,
    mirror_root,
    raw_url_base,
    write_manifest,
)
from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.hub import current_revisions, hub_references, pin_lines, write_pins
from hybrid_ir.data.members import (
    find_member_list,
    member_list_from_archive,
    member_list_path,
    write_member_list,
)
from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run, topic_sort_key, write_run
from hybrid_ir.errors import ConfigError, HybridIRError, printable
from hybrid_ir.evaluation.checks import assert_all_passed
from hybrid_ir.evaluation.measures import evaluate, measures_for, resolve_measures
from hybrid_ir.fusion.crossval import crossvalidate_linear, report
from hybrid_ir.fusion.methods import fuse
from hybrid_ir.jobs.provenance import chain, provenance_tree
from hybrid_ir.monitor.status import status_lines
from hybrid_ir.planning.plan import Plan
from hybrid_ir.planning.targets import render_targets, targets_json
from hybrid_ir.reports.claims.render import print_claims
from hybrid_ir.reports.compare import RENDERERS, compare_runs
from hybrid_ir.reports.explore.data import ExplorerSettings
from hybrid_ir.reports.explore.pages import runs_explorer, write_explorer
from hybrid_ir.retrieval.bm25 import BM25Settings
from hybrid_ir.retrieval.lucene.index import build_bm25_index
from hybrid_ir.retrieval.lucene.search import bm25_search


def _validated_config(args: argparse.Namespace) -> tuple[dict, Layers]:
    """``--base`` with the ``--configfile`` overlays merged as Snakemake merges them and
    validated with the workflow's schema (hub pins not required), and its layers; an error
    names the file that sets the key."""
    layers = config_layers([args.base, *args.configfile], {})
    config = merged_config(layers)
    schema = Path(args.base).resolve().parent / "workflow" / "schemas" / "config.schema.yaml"
    try:
        validate_config(config, schema, require_pins=False)
    except ConfigError as error:
        raise attributed(error, layers) from None
    return config, layers


def data_command(args: argparse.Namespace) -> int:
    config, _ = _validated_config(args)
    mirror = mirror_root(config["mirror"])
    if args.connections > MAX_CONNECTIONS:
        raise HybridIRError(
            f"--connections must be at most {MAX_CONNECTIONS}, got {args.connections}"
        )
    network = Network(raw_url=raw_url_base(config["raw_url"]), connections=args.connections)
    manifest = load_manifest(config["manifest"])
    by_hand = load_by_hand(paths.BY_HAND)

    def listing() -> list[RawFile]:
        needed = required_raw_files(config)
        return checklist(needed, manifest, config["manifest"], mirror, by_hand, network)

    files = listing()
    if args.download and any(raw.state == "download" for raw in files):
        if mirror is None:
            raise HybridIRError("no mirror to download into: set mirror in the configuration")
        mirror.mkdir(parents=True, exist_ok=True)
        if not os.access(mirror, os.W_OK):
            raise HybridIRError(f"{mirror}: the mirror is not writable; set HYBRID_IR_MIRROR")
        failures = download_missing(files, mirror, network, args.connections)
        for failure in failures:
            print(f"hybrid-ir: {printable(failure)}", file=sys.stderr)
        files = listing()
    for line in render(files, mirror):
        print(printable(line))
    return 0 if can_run(files) and not (args.download and not all_here(files)) else 1


def manifest_members_command(args: argparse.Namespace) -> None:
    mirror = Path(args.mirror) if args.mirror else mirror_root(None)
    if mirror is None:
        raise HybridIRError("no mirror: pass --mirror or set $HYBRID_IR_MIRROR")
    archive = Path(args.archive).resolve()
    if not archive.is_relative_to(mirror.resolve()):
        raise HybridIRError(f"{args.archive}: not inside the mirror {mirror}; copy it there first")
    path = archive.relative_to(mirror.resolve()).as_posix()
    entry = load_manifest(args.manifest).get(path)
    if entry is None or not entry.repository:
        raise HybridIRError(f"{path}: no manifest row with a repository and commit to name")
    members = member_list_from_archive(
        Path(args.archive), path, entry.repository, entry.commit, args.upstream_folder
    )
    written = member_list_path(args.manifest, path)
    write_member_list(members, written)
    print(f"{written}: {len(members.members)} members, tar sha256 {members.tar_sha256}")


def manifest_from_sources_command(args: argparse.Namespace) -> None:
    mirror = Path(args.sources).resolve().parent
    entries = manifest_from_sources(args.sources, mirror)
    write_manifest(entries, args.output)
    print(f"{len(entries)} files written to {args.output}")


def manifest_add_command(args: argparse.Namespace) -> None:

    # An explicit --mirror wins over $HYBRID_IR_MIRROR, which only replaces the config's.
    mirror = Path(args.mirror) if args.mirror else mirror_root(None)
    if mirror is None:
        raise HybridIRError("no mirror: pass --mirror or set $HYBRID_IR_MIRROR")
    entries = [entry_for_file(file, mirror, args.url or "") for file in args.files]
    changed = add_to_manifest(args.manifest, entries)
    for entry in entries:
        state = "written" if entry.path in changed else "unchanged"
        print(f"{entry.path}\t{entry.size} bytes\tsha256 {entry.sha256}\t{state}")


def config_command(args: argparse.Namespace) -> None:
    import yaml

    config, _ = _validated_config(args)  # the plan does not need the hub
    print(yaml.safe_dump({"training": training_plan(config)}, sort_keys=False), end="")


def targets_command(args: argparse.Namespace) -> None:
    config, layers = _validated_config(args)
    try:
        claims = claims_by_paper(config["claims"], config)
        plan = Plan(config, {}, [], claims, None, layers)
        outputs, deferred = plan.named_outputs(), plan.deferred_tables()
        plan.target_rules()  # two outputs' target rules may clash
    except ConfigError as error:
        raise attributed(error, layers) from None
    if args.format == "json":
        print(json.dumps(targets_json(outputs, deferred), indent=1))
        return
    for line in render_targets(outputs, deferred):
        print(printable(line))


def hub_pin_command(args: argparse.Namespace) -> None:
    config = merged_config(config_layers([args.base, *args.configfile], {}))
    schema = Path(args.base).resolve().parent / "workflow" / "schemas" / "config.schema.yaml"
    validate_config(config, schema, require_pins=False)
    pinned = config["hub_models"]
    missing = [model for model in hub_references(config) if model not in pinned]
    revisions = current_revisions(missing)
    if args.write:
        write_pins(Path(args.write), revisions)
        for model, revision in revisions.items():
            print(f"{args.write}: pinned {model} at {revision}")
    else:
        print("\n".join(pin_lines(revisions)))


def fetch_command(args: argparse.Namespace) -> None:
    manifest = load_manifest(args.manifest)
    for path in args.paths:
        if path not in manifest:
            raise HybridIRError(f"{path} is not in the manifest {args.manifest}")
        destination = Path(args.output_dir) / path if args.output_dir else Path(paths.raw(path))
        mirror = Path(args.mirror) if args.mirror else mirror_root(None)
        members = find_member_list(args.manifest, path)
        network = Network(raw_url=raw_url_base(None))
        source = fetch(manifest[path], mirror, destination, members=members, network=network)
        print(f"{path}: verified, from {source}")


def convert_command(args: argparse.Namespace) -> None:
    sources = dict(args.source)
    roles = [role for role, _ in args.source]
    repeated = sorted({role for role in roles if roles.count(role) > 1})
    if repeated:
        raise ConfigError(f"convert: --source {', '.join(repeated)} given more than once")
    # The roles are checked as the workflow checks a configured collection's sources.
    listed = {"reader": args.reader, "sources": sources, "topics": args.topics, "qrels": args.qrels}
    if args.languages:
        listed["languages"] = args.languages
    if args.field:
        listed["fields"] = dict(args.field)
    errors, _ = source_problems("convert", listed)
    if errors:
        raise ConfigError("; ".join(errors))
    out = Path(args.output_dir)
    outputs = {}
    if not args.no_corpus:
        outputs["corpus"] = out / "corpus.jsonl"
    outputs |= {f"topics_{s}": out / "topics" / f"{s}.jsonl" for s in args.topics}
    outputs |= {f"qrels_{s}": out / "qrels" / f"{s}.qrels" for s in args.qrels}
    outputs |= {f"table_{s}": out / "tables" / f"{s}.tsv" for s in args.tables}
    options = reader_options(args.reader, listed)
    unused = sorted({"languages", "fields"} & set(listed) - set(options))
    if unused:
        raise ConfigError(f"convert: reader {args.reader!r} takes no {', '.join(unused)}")
    for name, count in convert(args.reader, sources, outputs, options=options).items():
        print(f"{name}: {count}")


def index_command(args: argparse.Namespace) -> None:
    stats = build_bm25_index(args.corpus, args.index, args.layout, threads=args.threads)
    print(json.dumps(stats, sort_keys=True))


def search_command(args: argparse.Namespace) -> None:
    settings = BM25Settings(
        layout=args.layout, k1=args.k1, b=args.b, depth=args.depth,
        query_fields=tuple(args.query_fields), remove_query=args.remove_query, tag=args.tag,
        threads=args.threads,
    )  # fmt: skip
    lines = bm25_search(args.index, args.topics, args.output, settings)
    print(f"{lines} lines written to {args.output}")


# ir_measures measures whose per-topic values are counts (NumRelRet is NumRet with rel=).
_COUNT_MEASURES = ("NumQ", "NumRel", "NumRet")


def _count_columns(measures: list[str]) -> set[str]:
    """Columns whose values are counts: totals such as Rel_Ret, and ir_measures' Num*."""

    return {
        column.name
        for column in resolve_measures(measures)
        if column.total or (column.measure is not None and column.measure.NAME in _COUNT_MEASURES)
    }


class _Sources:
    """A command's inputs, each a file or a name (:mod:`hybrid_ir.data.names`): a run's bare
    system name is looked up in the topic set of ``--topics`` (or of ``--qrels``), and qrels
    left out are that topic set's. What a name resolved to is said on stderr once the result
    is there (:meth:`say`): a failing command's stderr stays its one error line."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.notes: list[str] = []
        self.topics = getattr(args, "topics", None) or getattr(args, "qrels", None)

    def resolved(self, kind: str, given: str) -> names.Resolved:
        found = names.resolve(kind, given, topics=self.topics)
        return self._noted(found)

    def _noted(self, found: names.Resolved) -> names.Resolved:
        if found.note:
            self.notes.append(found.note)
        return found

    def qrels(self) -> tuple[str, Qrels]:
        """The qrels' label (file, or ``ir_datasets:<id>``) and the qrels."""
        if self.args.qrels is not None:
            found = self.resolved("qrels", self.args.qrels)
        elif getattr(self.args, "topics", None) is not None:
            found = self._noted(names.qrels_of(self.args.topics))
        else:
            raise HybridIRError(f"{self.args.command} needs --qrels, or --topics for its qrels")
        return found.label, names.named_qrels(found)

    def run(self, given: str) -> tuple[str, Run]:
        """A run's label (its file) and the run, read with --run-format and --duplicates."""
        found = self.resolved("run", given)
        run = names.named_run(found, self.args.run_format, self.args.duplicates)
        return found.label, run

    def file(
        self,
        kind: str,
        given: str | None,
        default: Callable[[str], names.Resolved] | None = None,
    ) -> str:
        """The file a ``kind`` argument names, or, left out, ``default(--topics)``'s; an
        ir_datasets id is an error, as the command reads files."""
        if given is not None:
            found = self.resolved(kind, given)
        elif default is not None:
            found = self._noted(default(self.args.topics))
        else:
            raise HybridIRError(f"{self.args.command} needs a {kind}")
        if found.path is None:
            raise HybridIRError(
                f"{self.args.command} reads files: {kind} {found.given!r} is an ir_datasets id"
            )
        return str(found.path)

    def say(self, note: str | None = None) -> None:
        for line in [*self.notes, note]:
            _say(line)


def _measures(
    args: argparse.Namespace, qrels: Qrels, qrels_name: str
) -> tuple[list[str], str | None]:
    """``--measures``, or the set that fits the qrels and the line saying so; a measure that no
    grade of the qrels makes relevant is an error."""
    return measures_for(qrels, args.measures, qrels_name)


def _say(note: str | None) -> None:
    """A note on stderr (the chosen measures, what a name resolved to), once the result is
    there: a failing command's stderr stays its one error line."""
    if note:
        print(f"hybrid-ir: {printable(note)}", file=sys.stderr)


def evaluate_command(args: argparse.Namespace) -> None:
    sources = _Sources(args)
    qrels_name, qrels = sources.qrels()
    measures, note = _measures(args, qrels, qrels_name)
    counts = _count_columns(measures)

    def counted(values: dict[str, float | None]) -> dict[str, float | int | None]:
        # A count prints as 1000, not 1000.0000; a mean of counts keeps its fraction.
        return {
            column: int(value)
            if column in counts and value is not None and float(value).is_integer()
            else value
            for column, value in values.items()
        }

    rows = []
    for given in args.run:
        path, run = sources.run(given)
        evaluation = evaluate(qrels, run, measures, (qrels_name, path), args.allow_disjoint)
        rows.append({"run": path, "topic": "all", **counted(dict(evaluation.aggregate))})
        if args.per_query:
            topics = {topic for scores in evaluation.per_query.values() for topic in scores}
            for topic in sorted(topics, key=topic_sort_key):
                values = {
                    column: scores.get(topic) for column, scores in evaluation.per_query.items()
                }
                rows.append({"run": path, "topic": topic, **counted(values)})
    sources.say(note)
    _print_rows(rows, args.format)


def compare_command(args: argparse.Namespace) -> None:
    sources = _Sources(args)
    qrels_name, qrels = sources.qrels()
    measures, note = _measures(args, qrels, qrels_name)
    table = compare_runs(
        (qrels_name, qrels), sources.run(args.baseline), [sources.run(run) for run in args.runs],
        measures, args.permutations, args.seed, args.holm,
    )  # fmt: skip
    sources.say(note)
    print(RENDERERS[args.format](table), end="")


def _print_rows(rows: list[dict], style: str) -> None:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if style == "json":
        print(json.dumps(rows, indent=1))
        return
    if style == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return

    def cell(value: object) -> str:
        if value is None:
            return "–"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(cell(row.get(column)) for column in columns) + " |")


def crossval_command(args: argparse.Namespace) -> None:
    sources = _Sources(args)
    qrels_name, qrels = sources.qrels()
    measures, note = _measures(args, qrels, qrels_name)
    _, dense = sources.run(args.dense)
    _, base = sources.run(args.base)
    results = crossvalidate_linear(
        dense, base, qrels, measures, alphas=args.alphas,
        k_folds=args.folds, seed=args.seed, mode="legacy" if args.legacy else "default",
        k=args.depth,
    )  # fmt: skip
    summary = report(results)
    if args.output:
        with atomic_output(args.output) as out:
            json.dump(summary, out, indent=1, sort_keys=True)
    rows = [
        {
            "metric": column,
            "cross-validated": result["mean_test_score"],
            "alpha per fold": " ".join(str(fold["param"]) for fold in result["folds"]),
        }
        for column, result in summary["columns"].items()
    ]
    sources.say(note)
    _print_rows(rows, "md")


def fuse_command(args: argparse.Namespace) -> None:
    params = {"k": args.depth}
    for name, value in (
        ("alpha", args.alpha),
        ("rrf_k", args.rrf_k),
        ("eta", args.eta),
        ("lam", args.lam),
    ):
        if value is not None:
            params[name] = value
    sources = _Sources(args)
    runs = [sources.run(given)[1] for given in args.runs]
    fused = fuse(args.method, runs, **params)
    output = args.output or f"{args.method}.trec"
    lines = write_run(fused, output, tag=args.tag or args.method, k=args.depth)
    sources.say()
    print(f"{lines} lines written to {output}")


def explore_command(args: argparse.Namespace) -> None:
    for option, value in (("--top-k", args.top_k), ("--text-chars", args.text_chars)):
        if value < 1:
            raise HybridIRError(f"{option} must be at least 1, got {value}")
    sources = _Sources(args)
    topics = sources.file("topics", args.topics)
    qrels = sources.file("qrels", args.qrels, names.qrels_of)
    corpus = sources.file("corpus", args.corpus, names.corpus_of)
    runs = [sources.file("run", run) for run in args.runs]
    page, note = runs_explorer(
        runs, qrels, topics, corpus, ExplorerSettings(args.top_k, args.text_chars),
        args.measures, args.labels, args.label_set, args.title, args.katex, args.run_format,
        args.duplicates,
    )  # fmt: skip
    write_explorer(page, args.output)
    sources.say(note)
    print(f"{args.output}: {len(page.encode('utf-8')):,} bytes, {len(args.runs)} runs")


def check_command(args: argparse.Namespace) -> None:
    print(f"all {assert_all_passed(args.summary)} checks passed")


def claims_command(args: argparse.Namespace) -> None:
    print(print_claims(args.results, args.format), end="")


def provenance_command(args: argparse.Namespace) -> None:
    if args.format == "json":
        print(json.dumps(provenance_tree(args.result), indent=1, allow_nan=False))
        return
    for line in chain(args.result):
        print(line)


def status_command(args: argparse.Namespace) -> None:
    for line in status_lines(args.directory, args.log, args.lines):
        print(line)
