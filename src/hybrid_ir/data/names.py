"""Names instead of paths: what the workflow produced, given by the workflow's own name for it.

Wherever ``hybrid-ir`` or the Python API reads qrels, topics, a run or a corpus, it takes,
besides a file path, the name of the thing in the workflow's results folder
(:mod:`hybrid_ir.paths` says where each lies):

- qrels: ``collection/qrels`` (``toy/test``: ``results/collections/toy/qrels/test.qrels``);
- topics: ``collection/topics`` (``results/collections/toy/topics/test.jsonl``);
- a run, a fusion's too: ``collection/topics/system`` (``toy/test/bm25-flat``:
  ``results/runs/toy/test/bm25-flat.trec``), or the bare ``system`` beside a topic set
  (``topics``: a topic set's name, or the path of its topics or qrels file there);
- a corpus: ``collection`` (``results/collections/toy/corpus.jsonl``).

An argument is, in this order: a file that exists (it always wins, so a file named like a name
is read as before; a folder is never one of these kinds, so a folder named like a name does not
hide it); a name whose file the results folder holds; for qrels and topics, an
ir_datasets id (``beir/scifact/test``, :mod:`hybrid_ir.data.irds`) where ir_datasets is
installed. Anything else is an :class:`~hybrid_ir.errors.UnknownName` error, one line listing
the nearest names (difflib) the results folder holds. Only the results layout is read: no
configuration, no Snakemake. The results folder is ``results/`` in the working directory,
as the workflow writes it, or the ``results`` argument."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.data import irds
from hybrid_ir.data.formats import read_records
from hybrid_ir.data.qrels import Qrels, read_qrels
from hybrid_ir.data.runs import Run, read_run
from hybrid_ir.errors import UnknownName, quoted

KINDS: dict[str, tuple[Callable[..., str], str]] = {
    "qrels": (paths.qrels, "collection/qrels"),
    "topics": (paths.topics, "collection/topics"),
    "run": (paths.run, "collection/topics/system"),
    "corpus": (paths.corpus, "collection"),
}
"""Each kind of name: the :mod:`hybrid_ir.paths` function of its file, and its form."""
DATASET_KINDS = ("qrels", "topics")
"""The kinds an ir_datasets id can name."""
NEAREST = 5
"""The most names an unknown name's error lists."""
CUTOFF = 0.6
"""How alike each part of a name must be (:func:`_similarity`, difflib's default cutoff) for
the name to be listed as a near one."""
_SLOT = "\0"


@dataclass(frozen=True)
class Resolved:
    """What an argument named: ``path`` the file to read, or ``dataset`` the ir_datasets id;
    ``name`` the results folder's name it was found by (None for a path given as such)."""

    given: str
    kind: str
    path: Path | None = None
    name: str | None = None
    dataset: str | None = None

    @property
    def label(self) -> str:
        """The file, or ``ir_datasets:<id>``: how outputs name the source."""
        return str(self.path) if self.path is not None else f"ir_datasets:{self.dataset}"

    @property
    def note(self) -> str | None:
        """``NAME -> PATH`` when the argument was a name, not a path (None then)."""
        if self.path is not None and self.name is None:
            return None
        where = self.label if self.path is not None else f"{self.label} (in {irds.home()})"
        return f"{self.given} -> {where}"


def results_root(results: str | Path | None = None) -> Path:
    """The results folder: ``results`` or the workflow's ``results/``."""
    return Path(paths.RESULTS if results is None else results)


def _template(kind: str) -> str:
    function, form = KINDS[kind]
    return function(*[_SLOT] * (form.count("/") + 1))


def _relative(template: str) -> str:
    return Path(template).relative_to(paths.RESULTS).as_posix()


def location(kind: str, name: str, results: str | Path | None = None) -> Path | None:
    """Where the workflow writes what ``name`` names (``collection/topics/system`` ...), there
    or not; None when ``name`` is not of the kind's form."""
    function, form = KINDS[kind]
    parts = name.split("/")
    if len(parts) != form.count("/") + 1 or not all(parts) or {".", ".."} & set(parts):
        return None
    if any(_SLOT in part for part in parts):
        return None
    relative = Path(function(*parts)).relative_to(paths.RESULTS)
    return results_root(results) / relative


def name_of(kind: str, path: str | Path, results: str | Path | None = None) -> str | None:
    """The name of the file ``path`` when it is where the workflow writes a ``kind`` in the
    results folder; None otherwise."""
    root = results_root(results)
    try:
        relative = Path(path).relative_to(root).as_posix()
    except ValueError:
        return None
    pieces = _relative(_template(kind)).split(_SLOT)
    pattern = "([^/]+)".join(re.escape(piece) for piece in pieces)
    found = re.fullmatch(pattern, relative)
    return "/".join(found.groups()) if found else None


def names(kind: str, results: str | Path | None = None) -> list[str]:
    """Every name of ``kind`` whose file the results folder holds, sorted."""
    root = results_root(results)
    if not root.is_dir():
        return []
    held = (
        name_of(kind, path, root)
        for path in root.glob(_relative(_template(kind)).replace(_SLOT, "*"))
        if path.is_file()
    )
    return sorted(name for name in held if name is not None)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte
        return False


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _given_file(given: str) -> bool:
    """Whether ``given`` is a path that exists and is not a folder (a file, a device, a pipe:
    ``/dev/stdin``): a path the caller meant as such, which wins over any name."""
    path = Path(given)
    try:
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):
        return False


def topic_set(topics: str | Path | None, results: str | Path | None = None) -> str | None:
    """The ``collection/topics`` name of a topic set given by name, or by the path of its
    topics or qrels file in the results folder (a qrels set names its topic set as a rule);
    None for anything else."""
    if topics is None:
        return None
    given = str(topics)
    if _given_file(given):
        return name_of("topics", given, results) or name_of("qrels", given, results)
    return given if location("topics", given, results) is not None else None


def resolve(
    kind: str,
    given: str | Path,
    topics: str | Path | None = None,
    results: str | Path | None = None,
) -> Resolved:
    """What ``given`` names as a ``kind`` (:data:`KINDS`): an existing path, else a name the
    results folder holds (a run's bare system name with ``topics``, a topic set's name or
    file), else for qrels and topics an ir_datasets id; an
    :class:`~hybrid_ir.errors.UnknownName` otherwise."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose {', '.join(KINDS)}")
    text = str(given)
    if _given_file(text):
        return Resolved(text, kind, Path(text))
    for name in _candidates(kind, text, topics, results):
        path = location(kind, name, results)
        if path is not None and _is_file(path):
            return Resolved(text, kind, path, name=name)
    if kind in DATASET_KINDS and irds.has(text, kind):
        return Resolved(text, kind, dataset=text)
    raise UnknownName(_unknown(kind, text, topics, results))


def _candidates(
    kind: str, given: str, topics: str | Path | None, results: str | Path | None
) -> list[str]:
    found = [given]
    context = topic_set(topics, results) if kind == "run" and "/" not in given else None
    if context is not None:
        found.append(f"{context}/{given}")
    return found


def _similarity(given: str, held: str) -> tuple[float, float]:
    """How alike two names are, part by part (difflib's ratio, 0 to 1): the least alike part,
    then the mean, so that a shared ``collection/topics/`` does not make every run of a topic
    set alike. Names of different lengths compare their last parts (a system named without
    its topic set)."""
    ours, theirs = given.split("/"), held.split("/")
    if len(ours) != len(theirs):
        ours, theirs = ours[-1:], theirs[-1:]
    ratios = [
        difflib.SequenceMatcher(None, a, b).ratio() for a, b in zip(ours, theirs, strict=True)
    ]
    return min(ratios), sum(ratios) / len(ratios)


def _unknown(kind: str, given: str, topics: str | Path | None, results: str | Path | None) -> str:
    root = results_root(results)
    held = names(kind, results)
    tried_names = _candidates(kind, given, topics, results)
    scores = {name: max(_similarity(tried, name) for tried in tried_names) for name in held}
    nearest = sorted((name for name in held if scores[name][0] >= CUTOFF), key=scores.__getitem__)
    nearest = nearest[::-1][:NEAREST]
    form = KINDS[kind][1] + (" or a system of the topic set" if kind == "run" else "")
    what = "a folder, not a file" if _is_folder(Path(given)) else "no such file"
    tried = f"{kind} {quoted(given)}: {what}, nor a name in {root}/ ({form})"
    if kind in DATASET_KINDS:
        tried += ", nor an ir_datasets id" if irds.installed() else " (ir_datasets: not installed)"
    if nearest:
        return f"{tried}; nearest: {', '.join(nearest)}"
    if not root.is_dir():
        return f"{tried}; there is no {root}/ here"
    if not held:
        return f"{tried}; {root}/ holds no {kind}"
    shown = ", ".join(held[:NEAREST]) + (f" … ({len(held)} in all)" if len(held) > NEAREST else "")
    return f"{tried}; {root}/ holds {shown}"


def qrels_of(topics: str | Path, results: str | Path | None = None) -> Resolved:
    """The qrels of a topic set (a name, or its file in the results folder): its collection's
    qrels of the same name, or the collection's only qrels; an ir_datasets id's own qrels."""
    context = topic_set(topics, results)
    if context is None:
        if not _given_file(str(topics)) and irds.has(str(topics), "qrels"):
            return Resolved(str(topics), "qrels", dataset=str(topics))
        raise UnknownName(
            f"no qrels known for topics {quoted(str(topics))}: not a topic set in "
            f"{results_root(results)}/ nor an ir_datasets id with qrels; name the qrels"
        )
    path = location("qrels", context, results)
    if path is not None and _is_file(path):
        return Resolved(context, "qrels", path, name=context)
    collection = context.split("/")[0]
    held = [name for name in names("qrels", results) if name.split("/")[0] == collection]
    if len(held) == 1:
        return Resolved(held[0], "qrels", location("qrels", held[0], results), name=held[0])
    choices = f" (it has {', '.join(held)})" if held else ""
    raise UnknownName(
        f"topics {context}: {collection} has no qrels {context} in {results_root(results)}/"
        f"{choices}; name the qrels"
    )


def corpus_of(topics: str | Path, results: str | Path | None = None) -> Resolved:
    """The corpus of a topic set's collection in the results folder."""
    context = topic_set(topics, results)
    if context is None:
        raise UnknownName(
            f"no corpus known for topics {quoted(str(topics))}: not a topic set in "
            f"{results_root(results)}/; name the corpus"
        )
    return resolve("corpus", context.split("/")[0], results=results)


def named_qrels(resolved: Resolved) -> Qrels:
    """The qrels ``resolved`` names: its file's, or its ir_datasets dataset's."""
    if resolved.path is not None:
        return read_qrels(resolved.path)
    return irds.qrels(str(resolved.dataset))


def named_topics(resolved: Resolved) -> list[dict]:
    """The topic records (``id``, ``title``, ``text``, ...) ``resolved`` names."""
    if resolved.path is not None:
        return list(read_records(resolved.path))
    return irds.topics(str(resolved.dataset))


def named_run(resolved: Resolved, run_format: str | None = None, duplicates: str = "max") -> Run:
    """The run ``resolved`` names (:func:`~hybrid_ir.data.runs.read_run`)."""
    return read_run(str(resolved.path), run_format=run_format, duplicates=duplicates)
