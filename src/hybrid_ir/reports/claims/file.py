"""A paper's claims file (``expected/claims/paperNNN.yaml``, its structure in
``workflow/schemas/claims.schema.yaml``): its claims, each two rows of one table in one column
tested as the kind of statement the paper makes; the paper's setup of each table they compare;
and its reproductions, the authors' runs beside this workflow's. Read and checked against the
configured tables when the DAG is built, so a claim naming a row or column a table lacks fails
before anything runs; :mod:`hybrid_ir.reports.claims.verdicts` judges them."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.data.formats import parse_yaml, read_document
from hybrid_ir.errors import ConfigError, cut
from hybrid_ir.evaluation.reproducibility import RBO_PERSISTENCE
from hybrid_ir.reports.tables.spec import column_key, row_sources, table_groups

KINDS = ("superiority", "non-inferiority", "equivalence", "non-superiority")
"""What a claim says of its two rows: the system beats the baseline; is no worse than it by more
than a margin; differs from it by less than the margin either way; beats it by no more than
the margin ("does not help")."""
MARGIN_KINDS = KINDS[1:]

LABELS = ("the paper's setup", "a scaled-down stand-in", "a different collection")
"""How this configuration's rows compare with the paper's: the paper's collection and models;
the paper's collection sampled or searched by smaller, shorter-trained models; another
collection."""

SCHEMA = Path(__file__).resolve().parents[4] / "workflow" / "schemas" / "claims.schema.yaml"

DEPTH = 10
"""How many documents of each run Kendall's tau and RBO compare per topic by default."""


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and the comparison that tests it here."""

    id: str
    claim: str
    where: str
    table: str
    column: str
    system: str
    baseline: str
    paper_test: str | None
    kind: str = "superiority"
    direction: str = "greater"
    margin: float | None = None
    test: str = "t-test"
    alpha: float = 0.05
    quote: str | None = None
    comparability: str | None = None
    paper_rows: Mapping[str, str] = field(default_factory=dict)
    published: Mapping[str, float] = field(default_factory=dict)
    configuration: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Setup:
    """What the paper ran for one table: the workflow's collections the paper searched (none:
    no counterpart here), the model ids of its neural rows, and the setup in words."""

    collections: tuple[str, ...]
    described: str
    backbones: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reproduction:
    """A run of the paper's authors (``original``) beside this workflow's reproduction of it
    (``reproduced``): two rows of one table with run files, compared per topic in ``column``
    (RMSE) and by ranking (Kendall's tau, RBO) down to ``depth``."""

    id: str
    what: str
    where: str
    table: str
    column: str
    original: str
    reproduced: str
    depth: int = DEPTH
    persistence: float = RBO_PERSISTENCE


@dataclass(frozen=True)
class PaperClaims:
    """A paper's claims file: its claims and how their p-values are corrected together, the
    paper's setup of each table they compare, and its original runs beside their
    reproductions."""

    paper: str
    title: str
    correction: str
    claims: tuple[Claim, ...]
    source: str
    reproductions: tuple[Reproduction, ...] = ()
    setups: Mapping[str, Setup] = field(default_factory=dict)


@functools.cache
def _schema() -> dict:
    return parse_yaml(SCHEMA.read_text(encoding="utf-8"), SCHEMA)


def _schema_problem(path: Path, data: Mapping) -> str | None:
    """The first problem the claims schema finds, as one line naming the claim and the key."""
    import jsonschema

    errors = sorted(
        jsonschema.Draft202012Validator(_schema()).iter_errors(data),
        key=lambda error: [str(part) for part in error.absolute_path],
    )
    if not errors:
        return None
    error = errors[0]
    where = list(error.absolute_path)
    message = error.message
    if error.validator in ("not", "const"):
        message = error.schema.get("description", message)
    if where[:1] in (["claims"], ["reproductions"]) and len(where) > 1:
        entry = data[where[0]][where[1]]
        name = entry.get("id") if isinstance(entry, dict) else None
        kind = "claim" if where[0] == "claims" else "reproduction"
        label = f"{kind} {name if isinstance(name, str) else f'#{int(where[1]) + 1}'}"
        key = ".".join(str(part) for part in where[2:])
        return f"{path}: {label}: {key + ': ' if key else ''}{cut(message)}"
    key = ".".join(str(part) for part in where) or "(top level)"
    return f"{path}: {key}: {cut(message)}"


def load_claims(path: str | Path) -> PaperClaims:
    """Read and check one claims file against its schema (the structure only:
    :func:`check_claims` checks the tables, rows and columns against a configuration)."""
    import yaml

    path = Path(path)
    try:
        data = parse_yaml(read_document(path), path)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the claims file: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a claims file is a mapping with 'paper' and 'claims'")
    problem = _schema_problem(path, data)
    if problem:
        raise ConfigError(problem)
    defaults = {key: data[key] for key in ("alpha", "test") if key in data}
    setups = {
        table: Setup(
            tuple(entry["collections"]), entry["described"], tuple(entry.get("backbones", ()))
        )
        for table, entry in (data.get("setups") or {}).items()
    }
    claims, seen = [], set()
    for entry in data["claims"] or []:
        if entry.get("kind", "superiority") in MARGIN_KINDS:
            entry = {**defaults, **entry, "test": "t-test"}
        else:
            entry = {**defaults, **entry}
        claim = Claim(**{**entry, "alpha": float(entry.get("alpha", 0.05))})
        if claim.margin is not None and not math.isfinite(claim.margin):
            raise ConfigError(
                f"{path}: claim {claim.id}: margin: must be a finite number, got {claim.margin}"
            )
        if claim.id in seen:
            raise ConfigError(f"{path}: claim id {claim.id!r} appears twice")
        if claim.table not in setups:
            raise ConfigError(
                f"{path}: claim {claim.id}: table: {claim.table!r} has no entry in 'setups' "
                "(what the paper ran for it: collection, backbones, described)"
            )
        seen.add(claim.id)
        claims.append(claim)
    reproductions = [
        Reproduction(**{**entry, "persistence": float(entry.get("persistence", RBO_PERSISTENCE))})
        for entry in data.get("reproductions") or []
    ]
    return PaperClaims(
        data["paper"],
        str(data.get("title", "")),
        data.get("correction", "holm"),
        tuple(claims),
        str(path),
        tuple(reproductions),
        setups,
    )


def table_layout(spec: Mapping) -> tuple[set[str], set[str], set[str]]:
    """A configured table's row labels, its rows with a run (not published-only) and its
    column keys, as the table writes them."""

    rows = [row for block in spec["blocks"] for row in block["rows"]]
    labels = {row["label"] for row in rows}
    computed = {row["label"] for row in rows if "published_only" not in row}
    columns = {
        column_key(group["name"], column)
        for group in table_groups(spec)
        for column in group["columns"]
    }
    return labels, computed, columns


def check_claims(claims: PaperClaims, config: Mapping) -> None:
    """Refuse a claim whose table, rows or column the configuration's ``tables`` do not
    produce, naming the file, the claim id and the key; a claim whose table is not configured
    passes only when it names the ``configuration`` that builds it."""
    tables = config["tables"]
    for claim in claims.claims:
        name = f"{claims.source}: claim {claim.id}"
        if claim.table not in tables:
            if claim.configuration:
                continue
            raise ConfigError(
                f"{name}: table {claim.table!r} is not built by this configuration (give the "
                "claim a 'configuration' that builds it)"
            )
        labels, computed, columns = table_layout(tables[claim.table])
        for key in ("system", "baseline"):
            label = getattr(claim, key)
            if label not in computed:
                why = "a published-only row" if label in labels else "not a row"
                raise ConfigError(f"{name}: {key} {label!r} is {why} of table {claim.table}")
        for key, label in claim.paper_rows.items():
            if label not in labels:
                raise ConfigError(
                    f"{name}: paper_rows.{key} {label!r} is not a row of table {claim.table}"
                )
        if claim.column not in columns:
            raise ConfigError(
                f"{name}: column {claim.column!r} is not a column of table {claim.table} "
                f"(its columns: {sorted(columns)})"
            )
    for reproduction in claims.reproductions:
        reproduction_runs(reproduction, tables, claims.source)


def reproduction_runs(
    reproduction: Reproduction, tables: Mapping[str, Mapping], source: str = "claims"
) -> dict[str, tuple[str, str, str]]:
    """``original`` and ``reproduced`` -> (collection, topics, run) of the two rows' run
    files in the reproduction's column group; a ConfigError names what the table lacks."""

    name = f"{source}: reproduction {reproduction.id}"
    if reproduction.table not in tables:
        raise ConfigError(
            f"{name}: table {reproduction.table!r} is not built by this configuration"
        )
    spec = tables[reproduction.table]
    groups = table_groups(spec)
    group = next(
        (
            g
            for g in groups
            for c in g["columns"]
            if column_key(g["name"], c) == reproduction.column
        ),
        None,
    )
    if group is None:
        raise ConfigError(
            f"{name}: column {reproduction.column!r} is not a column of table {reproduction.table}"
        )
    rows = {row["label"]: row for block in spec["blocks"] for row in block["rows"]}
    found = {}
    for key in ("original", "reproduced"):
        label = getattr(reproduction, key)
        if label not in rows:
            raise ConfigError(f"{name}: {key} {label!r} is not a row of table {reproduction.table}")
        kind, run = row_sources(rows[label], [g["name"] for g in groups]).get(
            group["name"], (None, None)
        )
        if kind != "run" or run is None:
            raise ConfigError(
                f"{name}: {key} {label!r} has no run file in table {reproduction.table} (a "
                "cross-validated or published-only row): rankings cannot be compared"
            )
        found[key] = (group["collection"], group["topics"], run)
    return found
