"""StackMathQA (yifanzhang-pro/StackMathQA): question/answer pairs in Markdown + LaTeX, for MLM.

Role ``shards``: a ``.tar.gz`` (or directory) of the dataset's ``<n>.jsonl`` shards, one
``{"Q", "A", "meta"}`` object per line; ``meta`` has the question ``url`` and the ``answer_id``.
Other members (``source_counts.txt``...) are ignored. One document per pair: ``id``
(``<site>-<question number>-<answer_id>``, e.g. ``math.stackexchange.com-12345-0``), ``title``
(empty: the dataset joins title and body in ``Q``), ``question`` (``Q``), ``text`` (``A``),
``url``. Shards are read in numeric order, so document order does not depend on the archive.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, cast

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.formats import MemberText, UniqueIds, archive_errors, json_lines, open_text
from hybrid_ir.errors import ConfigError, InputFormatError

_SHARD = re.compile(r"(?:^|/)(\d+)\.jsonl$")
_QUESTION_URL = re.compile(r"https?://([^/]+)/questions/(\d+)")


def _pair(value: dict, name: str, number: int) -> dict:
    for key in ("Q", "A"):
        if not isinstance(value.get(key), str):
            raise InputFormatError(name, number, f"key {key!r} missing or not a string")
    meta = value.get("meta") or {}
    match = _QUESTION_URL.match(str(meta.get("url", "")))
    if match is None or "answer_id" not in meta:
        raise InputFormatError(name, number, "meta needs a question url and an answer_id")
    site, question = match.groups()
    return {
        "id": f"{site}-{question}-{meta['answer_id']}",
        "title": "",
        "text": value["A"],
        "question": value["Q"],
        "url": meta["url"],
    }


def _shard_number(name: str) -> int | None:
    match = _SHARD.search(name)
    return int(match.group(1)) if match else None


def _documents(path: Path) -> Iterator[dict]:
    ids = UniqueIds()
    for where, number, document in _pairs(path):
        ids.add(document["id"], where, number)
        yield document
    if not ids:
        raise InputFormatError(path, None, "no question/answer pairs in any <n>.jsonl shard")


def _pairs(path: Path) -> Iterator[tuple[str, int, dict]]:
    if path.is_dir():
        shards = sorted(
            (number, shard)
            for shard in path.rglob("*.jsonl")
            if (number := _shard_number(str(shard))) is not None
        )
        for _, shard in shards:
            with open_text(shard) as handle:
                for number, value in json_lines(handle, shard):
                    yield str(shard), number, _pair(value, str(shard), number)
        return
    with archive_errors(path), tarfile.open(path) as archive:
        members = sorted(
            (number, member)
            for member in archive.getmembers()
            if member.isfile() and (number := _shard_number(member.name)) is not None
        )
        for _, member in members:
            name = f"{path}:{member.name}"
            # A regular file (isfile() above), so extractfile never returns None here.
            raw = cast(IO[bytes], archive.extractfile(member))
            with MemberText(raw, name) as lines:
                for number, value in json_lines(lines, name):
                    yield name, number, _pair(value, name, number)


@reader("stackmathqa", SourceRoles(main=(frozenset({"shards"}),)))
def read_stackmathqa(sources: Mapping[str, Path]) -> Collection:
    if "shards" not in sources:
        raise ConfigError("the stackmathqa reader needs a 'shards' source (.tar.gz or folder)")
    return Collection(docs=_documents(sources["shards"]))
