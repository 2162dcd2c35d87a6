"""StackMathQA reader: shards in a .tar.gz or a folder, numeric shard order, clear errors."""

import io
import json
import tarfile

import pytest

from hybrid_ir.data.collections import get_reader
from hybrid_ir.errors import InputFormatError


def _pair(question, answer, url, answer_id):
    meta = {"url": url, "answer_id": answer_id, "source": "stackexchange"}
    return json.dumps({"Q": question, "A": answer, "meta": meta}) + "\n"


MSE, MO = "https://math.stackexchange.com/questions", "https://mathoverflow.net/questions"
SHARDS = {
    "stackmathqa100k/10.jsonl": _pair("Q ten $x$", "A ten", f"{MSE}/10", 0),
    "stackmathqa100k/9.jsonl": _pair("Q nine", "A $y^2$", f"{MO}/9", 2)
    + _pair("Q nine b", "A b", f"{MSE}/99", 1),
    "stackmathqa100k/source_counts.txt": "math.stackexchange.com 2\n",
}  # fmt: skip


def _tarball(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_reads_pairs_in_numeric_shard_order(tmp_path):
    shards = _tarball(tmp_path / "shards.tar.gz", SHARDS)
    docs = list(get_reader("stackmathqa")({"shards": shards}).docs)
    assert [d["id"] for d in docs] == [
        "mathoverflow.net-9-2", "math.stackexchange.com-99-1", "math.stackexchange.com-10-0",
    ]  # fmt: skip
    assert docs[0] == {"id": "mathoverflow.net-9-2", "title": "", "text": "A $y^2$",
                       "question": "Q nine", "url": f"{MO}/9"}  # fmt: skip


def test_folder_gives_the_same_documents(tmp_path):
    for name, text in SHARDS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    archive = _tarball(tmp_path / "s.tar.gz", SHARDS)
    reader = get_reader("stackmathqa")
    from_folder = list(reader({"shards": tmp_path / "stackmathqa100k"}).docs)
    assert from_folder == list(reader({"shards": archive}).docs)


def test_bad_line_names_member_and_line(tmp_path):
    shards = _tarball(
        tmp_path / "bad.tar.gz",
        {"d/3.jsonl": _pair("q", "a", "https://x.org/questions/1", 0) + '{"Q": "q"}\n'},
    )
    with pytest.raises(InputFormatError, match=r"bad.tar.gz:d/3.jsonl:2: key 'A' missing"):
        list(get_reader("stackmathqa")({"shards": shards}).docs)
