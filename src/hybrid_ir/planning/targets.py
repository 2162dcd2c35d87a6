"""What one can ask the workflow for by name: each table, figure and claims page a configuration
builds, with its paper, title, files and the Snakemake target rule that builds it; one target
rule per paper; the tables the configuration defers, and why; and, for a result file it does not
build, the nearest ones it does.

The outputs come from the registry of output kinds (each
:class:`~hybrid_ir.planning.output_kinds.OutputKind`'s ``named`` method of the
:class:`~hybrid_ir.planning.plan.Plan`), the same methods ``rule all``'s targets are made of;
``workflow/rules/targets.smk`` turns them into rules and ``hybrid-ir targets`` lists them.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_ir import paths
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.html_report import BEYOND, PAPERS, paper_category

RESULT_FOLDERS = ("tables", "figures", "claims")
"""The folders under results/ whose files one names (tables, figures, claims pages): a file
there that the configuration does not build is refused with the nearest ones it does."""

_PAPER_PREFIX = re.compile(r"paper(\d{3})-")
"""A result's paper, as the report files it (:func:`hybrid_ir.reports.html_report.category`)."""
_NUMBER = re.compile(r"\b(Table|Fig\.|Figure)\s+(\d+)")
_NAMED_NUMBER = re.compile(r"-(table|fig)(\d+)(?:-|$)")
_OVERLAY = re.compile(r"--configfile\s+(\S+)")
_WHAT_ORDER = {"table": 0, "figure": 1, "claims": 2}


def paper_of(name: str) -> str | None:
    """The paper (three digits) a result named ``paperNNN-...`` belongs to, else None."""
    match = _PAPER_PREFIX.match(name)
    return match.group(1) if match else None


def paper_rule(paper: str) -> str:
    """The target rule that builds every table, figure and claims page of a paper."""
    return f"paper{paper}"


def target_rule(name: str) -> str:
    """The target rule that builds one output: its name with ``-`` and ``.`` as ``_``
    (``paper000-table3-arqmath1`` -> ``paper000_table3_arqmath1``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


@dataclass(frozen=True)
class NamedOutput:
    """A table, figure or claims page one can ask for by name."""

    what: str
    """table, figure or claims."""
    name: str
    """Its name: the configuration's key, which its files are named after."""
    files: tuple[str, ...]
    key: str
    """The configuration key that makes it (in errors)."""
    title: str | None = None
    paper: str | None = None

    @property
    def target(self) -> str:
        return target_rule(self.name)

    @property
    def number(self) -> str | None:
        """The paper's own table or figure number, where the title says it (``Paper 000,
        Table 3: ...``) or else the name (``paper000-fig2``)."""
        found = _NUMBER.search(self.title or "")
        if found:
            return f"{found.group(1)} {found.group(2)}"
        named = _NAMED_NUMBER.search(self.name)
        if named:
            return f"{'Table' if named.group(1) == 'table' else 'Fig.'} {named.group(2)}"
        return None


@dataclass(frozen=True)
class DeferredTable:
    """A table the configuration names (``deferred_tables``) but does not build here."""

    name: str
    needs: str

    @property
    def paper(self) -> str | None:
        return paper_of(self.name)

    @property
    def overlay(self) -> str | None:
        """The configuration file that builds it, where ``needs`` says ``--configfile FILE``."""
        found = _OVERLAY.search(self.needs)
        return found.group(1).rstrip(".,;)") if found else None


def deferred_tables(config: Mapping[str, Any]) -> list[DeferredTable]:
    """The deferred tables that no table of the configuration replaces (as its warnings say)."""
    return [
        DeferredTable(name, needs)
        for name, needs in config["deferred_tables"].items()
        if name not in config["tables"]
    ]


def paper_targets(outputs: Iterable[NamedOutput]) -> dict[str, list[str]]:
    """Paper -> the files of its tables, figures and claims pages, papers in order."""
    by_paper: dict[str, list[str]] = {}
    for output in outputs:
        if output.paper is not None:
            by_paper.setdefault(output.paper, []).extend(output.files)
    return {paper: by_paper[paper] for paper in sorted(by_paper)}


def target_rules(outputs: Sequence[NamedOutput], taken: Iterable[str] = ()) -> dict[str, list[str]]:
    """Target rule -> the files it asks for: one per paper (``paper000``), then one per output
    (``paper000_table1``). Two outputs whose rules would share a name, or an output whose rule
    would take a paper's or another rule's (``taken``) name, are a configuration error."""
    rules = {paper_rule(paper): files for paper, files in paper_targets(outputs).items()}
    owners = {name: f"the workflow's rule {name}" for name in taken}
    for rule in rules:
        if rule in owners:
            raise ConfigError(f"{owners[rule]} has the name of a paper's target rule")
        owners[rule] = "a paper's target"
    for output in outputs:
        if output.target in owners:
            raise ConfigError(
                f"config: {output.key}: its target rule {output.target} is already "
                f"{owners[output.target]}; rename it"
            )
        owners[output.target] = output.key
        rules[output.target] = list(output.files)
    return rules


def result_files(outputs: Iterable[NamedOutput], targets: Iterable[str]) -> list[str]:
    """Every file under :data:`RESULT_FOLDERS` the configuration builds: the named outputs'
    and any other target there."""
    folders = tuple(f"{paths.RESULTS}/{folder}/" for folder in RESULT_FOLDERS)
    files = [file for output in outputs for file in output.files]
    files += [target for target in targets if target.startswith(folders)]
    return list(dict.fromkeys(files))


def unknown_result_constraint(known: Iterable[str]) -> str:
    """The wildcard constraint (of ``results/{unknown_result}``) that matches a file in
    :data:`RESULT_FOLDERS` other than the ``known`` ones, so that the rule refusing it takes
    nothing another rule makes."""
    prefix = f"{paths.RESULTS}/"
    relative = sorted((file.removeprefix(prefix) for file in known), key=len, reverse=True)
    excluded = "|".join(re.escape(file) for file in relative)
    folders = "|".join(RESULT_FOLDERS)
    return f"(?!(?:{excluded})$)(?:{folders})/[^/]+" if excluded else f"(?:{folders})/[^/]+"


def unknown_target_constraint(rules: Iterable[str]) -> str:
    """The wildcard constraint of a target named like a paper's (``paper...``, no folder, no
    extension) that is no target rule: a misspelled rule name, which Snakemake would take for
    a file."""
    excluded = "|".join(re.escape(rule) for rule in sorted(rules, key=len, reverse=True))
    return f"(?=paper)(?!(?:{excluded})$)[A-Za-z0-9_]+" if excluded else "paper[A-Za-z0-9_]*"


def unknown_target_message(requested: str, rules: Sequence[str]) -> str:
    """A target named like a paper's rule that is none, on one line with the nearest rules."""
    close = [rule for rule in rules if rule.startswith(requested)] or difflib.get_close_matches(
        requested, rules, n=3
    )
    where = f"the nearest: {_listing(close)}" if close else "none is close to it"
    return f"{requested}: no target rule has this name; {where} (hybrid-ir targets lists them)"


def nearest(requested: str, known: Sequence[str], count: int = 3) -> list[str]:
    """The known files ``requested`` names the start of (``paper000-table3.md``: each topic
    set's ``paper000-table3-<topics>.md``), else the ``count`` whose names are closest
    (difflib's ratio, at least 0.6), among those of its extension first (``x.md``: other
    tables' Markdown, not ``x.tex``)."""
    suffix = _suffix(requested)
    alike = [file for file in known if _suffix(file) == suffix]
    stem = requested.removesuffix(f".{suffix}")
    started = [file for file in alike if file.startswith(f"{stem}-")]
    if started:
        return started
    return _closest(requested, alike, count) or _closest(requested, known, count)


def _closest(requested: str, files: Sequence[str], count: int) -> list[str]:
    """The files whose names (without their folders, which all share) are closest."""
    by_name: dict[str, list[str]] = {}
    for file in files:
        by_name.setdefault(file.rpartition("/")[2], []).append(file)
    names = difflib.get_close_matches(requested.rpartition("/")[2], list(by_name), n=count)
    return [file for name in names for file in by_name[name]][:count]


def _listing(names: Sequence[str], limit: int = 6) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _suffix(path: str) -> str:
    return path.rpartition("/")[2].partition(".")[2]


def unknown_result_message(
    requested: str, known: Sequence[str], deferred: Iterable[DeferredTable]
) -> str:
    """Why a result file is not built, on one line: a deferred table's reason, else the
    nearest files that are."""
    for table in deferred:
        if requested.startswith(f"{paths.RESULTS}/tables/{table.name}."):
            return f"{requested}: tables.{table.name} is not built here: it needs {table.needs}"
    close = nearest(requested, known)
    where = f"the nearest targets: {_listing(close)}" if close else "no target is close to it"
    return (
        f"{requested}: this configuration builds no such file; {where} "
        "(hybrid-ir targets lists them all)"
    )


# --- hybrid-ir targets ------------------------------------------------------------------------


def _files_line(files: Sequence[str]) -> str:
    """A output's files as one shell brace expansion where they share a name
    (``results/tables/x.{md,csv}``)."""
    if len(files) == 1:
        return files[0]
    prefix = os.path.commonprefix(list(files))
    cut = prefix.rfind(".") + 1
    if cut <= prefix.rfind("/") + 1:
        return " ".join(files)
    return f"{prefix[:cut]}{{{','.join(file[cut:] for file in files)}}}"


def _ordered(outputs: Iterable[NamedOutput]) -> list[NamedOutput]:
    """By paper (results of no paper last), then tables, figures, claims, then name."""
    return sorted(
        outputs,
        key=lambda o: (o.paper is None, o.paper or "", _WHAT_ORDER.get(o.what, 3), o.name),
    )


def _papers(outputs: Sequence[NamedOutput], deferred: Sequence[DeferredTable]) -> list[str | None]:
    papers = {o.paper for o in outputs} | {t.paper for t in deferred}
    return sorted(papers, key=lambda paper: (paper is None, paper or ""))


def _heading(paper: str | None) -> str:
    if paper is None:
        return BEYOND
    return paper_category(paper) if paper in PAPERS else f"Paper {paper}"


def render_targets(outputs: Sequence[NamedOutput], deferred: Sequence[DeferredTable]) -> list[str]:
    """``hybrid-ir targets``' text: per paper, its target, then each output's name, number,
    target, title and files, and the tables not built here with why."""
    lines = []
    for paper in _papers(outputs, deferred):
        mine = [o for o in outputs if o.paper == paper]
        target = f" (snakemake {paper_rule(paper)})" if paper is not None and mine else ""
        lines.append(f"{_heading(paper)}{target}")
        for output in _ordered(mine):
            number = f" ({output.number})" if output.number else ""
            lines.append(f"  {output.what} {output.name}{number}: snakemake {output.target}")
            if output.title:
                lines.append(f"    {output.title}")
            lines.append(f"    {_files_line(output.files)}")
        for table in (t for t in deferred if t.paper == paper):
            lines.append(f"  table {table.name}: not built here")
            lines.append(f"    it needs {table.needs}")
            if table.overlay:
                lines.append(
                    f"    snakemake --cores all {target_rule(table.name)} "
                    f"--configfile {table.overlay}"
                )
    return lines


def targets_json(outputs: Sequence[NamedOutput], deferred: Sequence[DeferredTable]) -> dict:
    """``hybrid-ir targets --format json``: the papers' targets, the outputs, the tables not
    built here."""
    papers = [paper for paper in _papers(outputs, []) if paper is not None]
    return {
        "papers": [
            {"paper": paper, "title": _heading(paper), "target": paper_rule(paper)}
            for paper in papers
        ],
        "outputs": [_output_json(output) for output in _ordered(outputs)],
        "not_built": [
            {
                "kind": "table",
                "name": table.name,
                "paper": table.paper,
                "needs": table.needs,
                "overlay": table.overlay,
                "target": target_rule(table.name) if table.overlay else None,
            }
            for table in deferred
        ],
    }


def _output_json(output: NamedOutput) -> dict[str, Any]:
    return {
        "kind": output.what,
        "name": output.name,
        "paper": output.paper,
        "number": output.number,
        "title": output.title,
        "files": list(output.files),
        "target": output.target,
    }
