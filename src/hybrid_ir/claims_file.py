"""A paper's claims file (``expected/claims/paperNNN.yaml``): its claims, each two rows of one
table in one column with a claimed direction, and its reproductions, the authors' runs beside
this workflow's. Read and checked against the configured tables when the DAG is built, so a
claim naming a row or column a table lacks fails before anything runs; :mod:`hybrid_ir.claims`
judges them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.errors import ConfigError
from hybrid_ir.formats import parse_yaml, read_document
from hybrid_ir.reproducibility import (
    RBO_PERSISTENCE,
)
from hybrid_ir.table_spec import column_key, row_sources, table_groups

DIRECTIONS = ("greater", "less")


TESTS = ("t-test", "randomization")


CORRECTIONS = ("holm", "none")


_CLAIM_KEYS = {
    "id", "claim", "where", "table", "column", "system", "baseline", "direction", "test",
    "alpha", "paper_rows", "published", "configuration", "note",
}  # fmt: skip


_FILE_KEYS = {"paper", "title", "alpha", "test", "correction", "claims", "reproductions"}


_REPRODUCTION_KEYS = {
    "id",
    "what",
    "where",
    "table",
    "column",
    "original",
    "reproduced",
    "depth",
    "persistence",
}


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
    direction: str = "greater"
    test: str = "t-test"
    alpha: float = 0.05
    paper_rows: Mapping[str, str] = field(default_factory=dict)
    published: Mapping[str, float] = field(default_factory=dict)
    configuration: str | None = None
    note: str | None = None


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
    """A paper's claims file: its claims and how their p-values are corrected together, and
    its original runs beside their reproductions."""

    paper: str
    title: str
    correction: str
    claims: tuple[Claim, ...]
    source: str
    reproductions: tuple[Reproduction, ...] = ()


def load_claims(path: str | Path) -> PaperClaims:
    """Read and check one claims file (the structure only: :func:`check_claims` checks the
    tables, rows and columns against a configuration)."""
    import yaml

    path = Path(path)
    try:
        data = parse_yaml(read_document(path), path)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the claims file: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a claims file is a mapping with 'paper' and 'claims'")
    unknown = sorted(set(data) - _FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; known: {sorted(_FILE_KEYS)}")
    for key in ("paper", "claims"):
        if key not in data:
            raise ConfigError(f"{path}: '{key}' is missing")
    correction = data.get("correction", "holm")
    if correction not in CORRECTIONS:
        raise ConfigError(
            f"{path}: correction must be one of {list(CORRECTIONS)}, got {correction!r}"
        )
    defaults = {key: data[key] for key in ("alpha", "test") if key in data}
    claims, seen = [], set()
    for position, entry in enumerate(data["claims"] or [], start=1):
        claim = _claim(path, position, {**defaults, **(entry or {})})
        if claim.id in seen:
            raise ConfigError(f"{path}: claim id {claim.id!r} appears twice")
        seen.add(claim.id)
        claims.append(claim)
    reproductions = [
        _reproduction(path, position, entry or {})
        for position, entry in enumerate(data.get("reproductions") or [], start=1)
    ]
    return PaperClaims(
        str(data["paper"]),
        str(data.get("title", "")),
        correction,
        tuple(claims),
        str(path),
        tuple(reproductions),
    )


def _reproduction(path: Path, position: int, entry: Mapping) -> Reproduction:
    name = f"{path}: reproduction {entry.get('id', f'#{position}')!s}"
    _check_keys(
        name,
        entry,
        _REPRODUCTION_KEYS,
        ("id", "what", "where", "table", "column", "original", "reproduced"),
    )
    depth = entry.get("depth", DEPTH)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"{name}: depth must be a positive integer, got {depth!r}")
    persistence = entry.get("persistence", RBO_PERSISTENCE)
    if (
        isinstance(persistence, bool)
        or not isinstance(persistence, int | float)
        or not (0 < persistence < 1)
    ):
        raise ConfigError(
            f"{name}: persistence must lie strictly between 0 and 1, got {persistence!r}"
        )
    return Reproduction(**{**entry, "persistence": float(persistence)})


def _check_keys(name: str, entry: Mapping, known: set[str], required: Sequence[str]) -> None:
    """An entry's keys are among ``known`` and each ``required`` one is a non-empty string."""
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigError(f"{name}: unknown key(s) {unknown}; known: {sorted(known)}")
    for key in required:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ConfigError(f"{name}: '{key}' must be a non-empty string")


def _claim(path: Path, position: int, entry: Mapping) -> Claim:
    name = f"{path}: claim {entry.get('id', f'#{position}')!s}"
    _check_keys(
        name, entry, _CLAIM_KEYS, ("id", "claim", "where", "table", "column", "system", "baseline")
    )
    direction = entry.get("direction", "greater")
    if direction not in DIRECTIONS:
        raise ConfigError(f"{name}: direction must be greater or less, got {direction!r}")
    test = entry.get("test", "t-test")
    if test not in TESTS:
        raise ConfigError(f"{name}: test must be one of {list(TESTS)}, got {test!r}")
    alpha = entry.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise ConfigError(f"{name}: alpha must lie strictly between 0 and 1, got {alpha!r}")
    for key, allowed in (("paper_rows", str), ("published", int | float)):
        value = entry.get(key, {})
        if (
            not isinstance(value, dict)
            or set(value) - {"system", "baseline"}
            or any(
                isinstance(item, bool) or not isinstance(item, allowed) for item in value.values()
            )
        ):
            raise ConfigError(f"{name}: '{key}' maps system and/or baseline to a value")
    return Claim(**{**entry, "alpha": float(alpha), "direction": direction, "test": test})


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


def check_claims(claims: PaperClaims, tables: Mapping[str, Mapping]) -> None:
    """Refuse a claim whose table, rows or column the configuration's ``tables`` do not
    produce, naming the file, the claim id and the key; a claim whose table is not configured
    passes only when it names the ``configuration`` that builds it."""
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


def claims_by_paper(paths: Sequence[str | Path], tables: Mapping[str, Mapping]) -> dict:
    """Each configured claims file, loaded and checked against the configuration's tables,
    by its paper's three digits."""
    papers: dict[str, PaperClaims] = {}
    for path in paths:
        claims = load_claims(path)
        if claims.paper in papers:
            raise ConfigError(
                f"{path}: paper {claims.paper} already has claims in {papers[claims.paper].source}"
            )
        check_claims(claims, tables)
        papers[claims.paper] = claims
    return papers
