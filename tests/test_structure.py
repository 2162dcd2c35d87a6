"""Approach0 structure search: documents, queries, the pya0 engine, and its failure modes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from hybrid_ir.data.collections.ntcir import read_formulas
from hybrid_ir.errors import HybridIRError, InputFormatError
from hybrid_ir.retrieval import approach0
from hybrid_ir.retrieval.structure import (
    DocumentTemplate,
    QueryRule,
    Terms,
    built_query,
    formulas_in,
    marked_math,
    read_keyword_file,
    topic_queries,
)

BOOSTS = {"term": 1.0, "tex": 1.0}
ARQMATH_DOCUMENT = "{title}\n\n{question}\n\n__ANSWER__\n\n{text}"


def test_arqmath_document_as_pya0_writes_it():
    record = {
        "id": "7",
        "title": "Sum of $a^2+b^2$",
        "question": "Why is $$x^{2}+y^{2}=z^{2}$$ true?",
        "text": "Because of Pythagoras' theorem, see \\(c^2\\).",
    }
    document = DocumentTemplate(ARQMATH_DOCUMENT).render(record, Terms(None), "corpus.jsonl")
    assert document == (
        "sum of [imath]a^2+b^2[/imath]\n\nwhy is [imath]x^{2}+y^{2}=z^{2}[/imath] true\n\n"
        "__ANSWER__\n\nbecause of pythagoras theorem see [imath]c^2[/imath]"
    )
    assert formulas_in(document) == ["a^2+b^2", "x^{2}+y^{2}=z^{2}", "c^2"]


def test_stemming_applies_to_words_never_to_formulas():
    text = marked_math("Integrals of $\\int_{a}^{b} x\\,dx$ and derivatives", Terms("porter"))
    assert text == "integr of [imath]\\int_{a}^{b} x\\,dx[/imath] and deriv"


def test_latexml_line_wraps_are_removed_from_formulas():
    text = marked_math("$\\frac{1}% {1-p^{-s}}$", Terms(None))
    assert formulas_in(text) == ["\\frac{1}{1-p^{-s}}"]


def test_missing_template_field_names_the_document():
    with pytest.raises(
        InputFormatError, match=r"corpus.jsonl: document '3' has no field 'question'"
    ):
        DocumentTemplate(ARQMATH_DOCUMENT).render(
            {"id": "3", "title": "", "text": ""}, Terms(None), "corpus.jsonl"
        )


def test_built_query_takes_title_words_and_first_distinct_formulas():
    topic = {
        "id": "A.9",
        "title": "Limit of $\\frac{1}{n}$ as n grows",
        "text": "Show $\\frac{1}{n}\\to 0$ and $x$ and $\\frac{1}{n}$ and $y$ and $z$.",
    }
    query = built_query(topic, QueryRule(max_formulas=3), Terms(None), BOOSTS)
    assert query == [
        {"type": "term", "str": "limit of as n grows", "boost": 1.0},
        {"type": "tex", "str": "\\frac{1}{n}", "boost": 1.0},
        {"type": "tex", "str": "\\frac{1}{n}\\to 0", "boost": 1.0},
        {"type": "tex", "str": "x", "boost": 1.0},
    ]
    assert all(isinstance(keyword["boost"], float) for keyword in query)


def test_formula_only_topic_becomes_one_tex_keyword():
    rule = QueryRule(term_fields=(), formula_fields=(), tex_fields=("text",))
    topic = {"id": "NTCIR12-MathWiki-2", "title": "", "text": "\\mathfrak{P}"}
    assert built_query(topic, rule, Terms(None), BOOSTS) == [
        {"type": "tex", "str": "\\mathfrak{P}", "boost": 1.0}
    ]


def test_topic_without_formulas_gets_a_keyword_query_and_one_without_anything_fails():
    rule = QueryRule()
    queries = topic_queries(
        [{"id": "A.1", "title": "Prime numbers", "text": "no math here"}],
        None,
        rule,
        Terms(None),
        BOOSTS,
        "topics.jsonl",
    )
    assert queries[0]["keywords"] == [{"type": "term", "str": "prime numbers", "boost": 1.0}]
    with pytest.raises(InputFormatError, match=r"topics.jsonl: topic 'A.2' has neither"):
        topic_queries(
            [{"id": "A.2", "title": "", "text": ""}],
            None,
            rule,
            Terms(None),
            BOOSTS,
            "topics.jsonl",
        )


def test_refined_keyword_file_and_kw_json(tmp_path):
    refined = tmp_path / "topics.refined.txt"
    refined.write_text(
        "qid\tterm\ttex\tMore tex formulas follow ...\t\n"
        "A.201\tinvertable, matrix\t\t\t\n"
        "A.202\trings theory\tF \\subset D\t\t\n",
        encoding="utf-8",
    )
    queries = read_keyword_file(refined, Terms("porter"), BOOSTS)
    assert queries == {
        "A.201": [{"type": "term", "str": "invert matrix", "boost": 1.0}],
        "A.202": [
            {"type": "term", "str": "ring theori", "boost": 1.0},
            {"type": "tex", "str": "F \\subset D", "boost": 1.0},
        ],
    }
    kw = tmp_path / "topics.json"
    kw.write_text(json.dumps([{"qid": "A.1", "kw": [{"type": "tex", "str": "f(x)"}]}]))
    assert read_keyword_file(kw, Terms(None), BOOSTS) == {
        "A.1": [{"type": "tex", "str": "f(x)", "boost": 1.0}]
    }
    refined.write_text("qid\tterm\nA.1\tx\nA.1\ty\n", encoding="utf-8")
    with pytest.raises(
        InputFormatError, match=r"topics.refined.txt:3: topic 'A.1' is listed twice"
    ):
        read_keyword_file(refined, Terms(None), BOOSTS)


def test_keyword_file_topic_wins_over_the_built_query():
    queries = topic_queries(
        [{"id": "A.1", "title": "words", "text": ""}, {"id": "A.2", "title": "other", "text": ""}],
        {"A.1": [{"type": "tex", "str": "x", "boost": 1.0}]},
        QueryRule(),
        Terms(None),
        BOOSTS,
        "t",
    )
    assert [(q["id"], q["origin"]) for q in queries] == [
        ("A.1", "pya0 keyword file"),
        ("A.2", "built from the topic"),
    ]


# The engine ------------------------------------------------------------------------------------


def tiny_documents() -> list[tuple[str, str]]:
    """Three documents: one with x^2+y^2=z^2's structure under other symbols, one unrelated
    formula, one with an unparsable formula."""
    terms = Terms("porter")
    template = DocumentTemplate("{text}")
    records = [
        {"id": "10", "text": "Pythagoras says $a^2+b^2=c^2$ for right triangles."},
        {"id": "20", "text": "An integral $\\int_0^1 f(t)\\,dt$ of a function."},
        {"id": "30", "text": "Broken $\\frac{$ formula and prime numbers."},
    ]
    return [(r["id"], template.render(r, terms, "corpus")) for r in records]


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    index = tmp_path_factory.mktemp("a0") / "index"
    stats = approach0.build_index(tiny_documents(), index, max_unparsed_rate=0.5, where="corpus")
    return index, stats


def test_index_statistics_count_formulas_and_parse_failures(tiny_index):
    index, stats = tiny_index
    assert stats["documents"] == 3
    assert stats["formulas"] == 3
    assert stats["unparsed_formulas"] == 1
    assert stats["documents_with_unparsed_formulas"] == 1
    assert stats["index_files"] == sum(1 for p in index.rglob("*") if p.is_file()) - 1
    assert approach0.index_is_complete(index)


def test_formula_query_finds_the_same_structure_with_other_symbols(tiny_index):
    index, _ = tiny_index
    queries = [
        {"id": "q1", "keywords": [{"type": "tex", "str": "x^2+y^2=z^2", "boost": 1.0}]},
        {"id": "q2", "keywords": [{"type": "term", "str": "prime", "boost": 1.0}]},
        {"id": "q3", "keywords": [{"type": "term", "str": "zebra", "boost": 1.0}]},
    ]
    run, facts = approach0.search(index, queries, depth=10)
    assert list(run["q1"])[0] == "10"
    assert "20" not in run["q1"] or run["q1"]["20"] < run["q1"]["10"]
    assert list(run["q2"]) == ["30"]
    assert "q3" not in run and facts["without_hits"] == ["q3"]
    assert facts["with_hits"] == 2 and facts["failed"] == {}


def test_ties_are_broken_as_trec_eval_does():
    results = [
        {
            "id": "q",
            "ret_code": 0,
            "ret_str": "",
            "hits": [["1", 2.5], ["3", 2.5], ["2", 2.5]],
            "seconds": 0.1,
        }
    ]
    run, _ = approach0._run_and_facts(results, depth=2)
    assert list(run["q"].items()) == [("3", 2.5), ("2", 2.5)]


def test_too_many_unparsed_formulas_is_an_error(tmp_path):
    documents = [("1", "[imath]\\frac{[/imath] and [imath]x[/imath]")]
    with pytest.raises(InputFormatError, match=r"corpus.jsonl: 1 of 2 formulas \(50.0%\)"):
        approach0.build_index(
            documents, tmp_path / "ix", max_unparsed_rate=0.1, where="corpus.jsonl"
        )
    assert not (tmp_path / "ix").exists()


def test_half_written_index_is_refused_and_rebuilt(tiny_index, tmp_path):
    index, _ = tiny_index
    broken = tmp_path / "index"
    broken.mkdir()
    (broken / "metadata.bin").write_bytes(b"")
    with pytest.raises(HybridIRError, match="not a complete Approach0 index"):
        approach0.search(broken, [{"id": "q", "keywords": []}], depth=5)
    approach0.build_index([("1", "prime [imath]x[/imath]")], broken, 0.5, "corpus")
    assert approach0.index_is_complete(broken)
    assert (broken / "metadata.bin").stat().st_size > 0  # the new index's, not the stub


def index_files(index: Path) -> dict[str, bytes]:
    """Every file of an index by its path inside it; the marker is left out (it holds the
    build's seconds)."""
    return {
        str(path.relative_to(index)): path.read_bytes()
        for path in sorted(index.rglob("*"))
        if path.is_file() and path.name != approach0.MARKER
    }


def test_index_is_built_in_the_scratch_directory_and_renamed_into_place(tmp_path, monkeypatch):
    scratch, final = tmp_path / "s", tmp_path / "results" / "index"
    pya0 = approach0._engine()
    opened, real_open = [], pya0.index_open

    def recording_open(path, *args, **kwargs):
        opened.append(Path(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(pya0, "index_open", recording_open)
    stats = approach0.build_index(tiny_documents(), final, 0.5, "corpus", scratch=scratch)
    (built,) = opened
    assert built.parent.parent == scratch and not built.exists()  # built there, moved away
    assert approach0.index_is_complete(final)
    assert stats["index_files"] == len(index_files(final)) > 0
    assert list(scratch.iterdir()) == []  # the temporary directory is gone
    assert [path.name for path in final.parent.iterdir()] == ["index"]  # no staging name left


BUILD_IN_ITS_OWN_PROCESS = """
import errno, json, os, shutil, sys
from pathlib import Path
from hybrid_ir.retrieval import approach0
index, scratch, cross_device = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "yes"
copies = []
if cross_device:  # as from /dev/shm to a disk
    real_rename, real_copytree = os.rename, shutil.copytree
    def rename(source, destination, *args, **kwargs):
        if Path(source).is_relative_to(scratch):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(source, destination, *args, **kwargs)
    def copytree(source, destination, *args, **kwargs):
        copies.append(str(destination))
        return real_copytree(source, destination, *args, **kwargs)
    os.rename, shutil.copytree = rename, copytree
documents = [tuple(document) for document in json.load(sys.stdin)]
stats = approach0.build_index(documents, index, 0.5, "corpus", scratch=scratch)
print(json.dumps({"stats": stats, "copies": copies}))
"""


def build_in_its_own_process(index: Path, scratch: Path, cross_device: bool = False) -> dict:
    """The tiny index built by a new process, as each workflow job builds its index: the
    engine's term index pads its blocks with whatever its heap held, the same for the first
    build of a process but not for a second one in the same process."""
    done = subprocess.run(
        [sys.executable, "-c", BUILD_IN_ITS_OWN_PROCESS, str(index), str(scratch),
         "yes" if cross_device else "no"],
        input=json.dumps(tiny_documents()),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_index_is_the_same_renamed_copied_from_another_file_system_or_built_in_place(
    tmp_path,
):
    scratch = tmp_path / "s"
    renamed = tmp_path / "renamed" / "index"
    assert build_in_its_own_process(renamed, scratch)["copies"] == []
    copied = tmp_path / "copied" / "index"
    built = build_in_its_own_process(copied, scratch, cross_device=True)
    # Copied into a staging name beside the index, then renamed.
    assert Path(built["copies"][0]) == copied.with_name(".index.tmp")
    # A scratch path too long for the engine: built in the staging directory, as before.
    in_place = tmp_path / "in-place" / "index"
    build_in_its_own_process(in_place, tmp_path / ("long-" * 20))
    for index in (renamed, copied, in_place):
        assert approach0.index_is_complete(index)
        assert [path.name for path in index.parent.iterdir()] == ["index"]
    assert index_files(copied) == index_files(renamed) == index_files(in_place) != {}
    assert built["stats"]["index_files"] == len(index_files(copied))
    assert list(scratch.iterdir()) == []


def test_a_failed_build_leaves_neither_an_index_nor_its_temporary_files(tmp_path, monkeypatch):
    scratch, final = tmp_path / "s", tmp_path / "results" / "index"
    # The engine's files are refused: too many unparsed formulas.
    documents = [("1", "[imath]\\\\frac{[/imath] and [imath]x[/imath]")]
    with pytest.raises(InputFormatError, match="above the configured limit"):
        approach0.build_index(documents, final, 0.1, "corpus", scratch=scratch)
    assert list(scratch.iterdir()) == [] and list(final.parent.iterdir()) == []
    # The copy from another file system fails halfway (a full disk).
    copied = []

    def copy_until_full(source, destination, **kwargs):
        if len(copied) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        copied.append(destination)
        return shutil.copy2(source, destination, **kwargs)

    real_rename = os.rename

    def cross_device(source, destination, *args, **kwargs):
        if Path(source).is_relative_to(scratch):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(source, destination, *args, **kwargs)

    monkeypatch.setattr(os, "rename", cross_device)
    real_move = shutil.move
    monkeypatch.setattr(
        approach0.shutil,
        "move",
        lambda source, destination: real_move(source, destination, copy_function=copy_until_full),
    )
    with pytest.raises(OSError, match="No space left"):
        approach0.build_index(tiny_documents(), final, 0.5, "corpus", scratch=scratch)
    assert len(copied) == 3  # the copy had begun
    assert list(scratch.iterdir()) == [] and list(final.parent.iterdir()) == []


def test_a_build_killed_earlier_leaves_nothing_in_the_scratch_directory_once_rebuilt(tmp_path):
    scratch, final = tmp_path / "s", tmp_path / "results" / "index"
    # What SIGKILL leaves: a half-built index under the build's own name, a half-copied staging.
    approach0.build_index(tiny_documents(), final, 0.5, "corpus", scratch=scratch)
    building = approach0._scratch_directory(final, scratch)
    assert building is not None
    (building / "index").mkdir()
    (building / "index" / "metadata.bin").write_bytes(b"")
    final.with_name(".index.tmp").mkdir()
    approach0.build_index(tiny_documents(), final, 0.5, "corpus", scratch=scratch)
    assert list(scratch.iterdir()) == []
    assert [path.name for path in final.parent.iterdir()] == ["index"]


def test_a_scratch_path_too_long_for_the_engine_builds_the_index_beside_it(tmp_path):
    # pya0 aborts the process on an index path over 104 bytes (lemur's file name limit).
    scratch = tmp_path / ("long-" * 20)
    final = tmp_path / "results" / "index"
    approach0.build_index(tiny_documents(), final, 0.5, "corpus", scratch=scratch)
    assert approach0.index_is_complete(final)
    assert not scratch.exists()
    assert [path.name for path in final.parent.iterdir()] == ["index"]


def test_the_configured_scratch_is_used_only_where_it_has_room(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"x" * 1000)
    ram, tmpdir = tmp_path / "ram", tmp_path / "tmpdir"
    ram.mkdir()
    assert approach0.index_scratch(ram, corpus, tmpdir) == ram
    assert approach0.index_scratch(None, corpus, tmpdir) == tmpdir
    assert approach0.index_scratch(tmp_path / "missing", corpus, tmpdir) == tmpdir
    needed = approach0.SCRATCH_ROOM * 1000
    for free, chosen in ((needed, ram), (needed - 1, tmpdir)):
        usage = SimpleNamespace(total=10 * needed, used=10 * needed - free, free=free)
        monkeypatch.setattr(approach0.shutil, "disk_usage", lambda path, usage=usage: usage)
        assert approach0.index_scratch(ram, corpus, tmpdir) == chosen


def test_engine_crash_fails_one_topic_and_the_next_worker_goes_on(tiny_index, monkeypatch):
    index, _ = tiny_index
    real_run = subprocess.run
    calls = []

    def crash_first(command, **kwargs):
        calls.append(command)
        if len(calls) == 1:  # the first worker dies on its first topic, as a segfault would
            return subprocess.CompletedProcess(command, -11)
        return real_run(command, **kwargs)

    monkeypatch.setattr(approach0.subprocess, "run", crash_first)
    queries = [
        {"id": "q1", "keywords": [{"type": "term", "str": "prime", "boost": 1.0}]},
        {"id": "q2", "keywords": [{"type": "term", "str": "prime", "boost": 1.0}]},
    ]
    run, facts = approach0.search(index, queries, depth=5)
    assert facts["failed"] == {"q1": "engine crashed (signal 11)"}
    assert list(run) == ["q2"]
    assert calls[1][-2] == "1"  # the second worker starts at the second topic


def test_no_download_is_attempted_with_the_network_blocked(tmp_path):
    """Index, queries (with stemming) and search in a process whose sockets all fail, and
    where NLTK's downloader and pya0's prebuilt-index fetcher would raise if reached."""
    script = textwrap.dedent(
        f"""
        import socket, sys
        def blocked(*args, **kwargs):
            raise OSError("network blocked by the test")
        socket.socket.connect = blocked
        socket.create_connection = blocked
        import nltk
        def no_download(*args, **kwargs):
            raise SystemExit("nltk.download called")
        nltk.download = no_download
        import nltk.data
        def no_data(*args, **kwargs):
            raise SystemExit("nltk data looked up: " + repr(args))
        nltk.data.find = no_data
        nltk.data.load = no_data
        from hybrid_ir.retrieval import approach0
        from hybrid_ir.retrieval.structure import DocumentTemplate, Terms, topic_queries, QueryRule
        terms = Terms("porter")
        doc = DocumentTemplate("{{text}}").render({{"id": "1", "text": "Primes $p^2$"}}, terms, "c")
        approach0.build_index([("1", doc)], r"{tmp_path / "ix"}", 0.5, "c")
        topics = [{{"id": "t", "title": "primes", "text": "$p^2$"}}]
        queries = topic_queries(topics, None, QueryRule(), terms, {{"term": 1.0, "tex": 1.0}}, "t")
        import pya0.index_manager
        def no_prebuilt(*args, **kwargs):
            raise SystemExit("pya0 prebuilt index requested")
        pya0.index_manager.from_prebuilt_index = no_prebuilt
        run, facts = approach0.search(r"{tmp_path / "ix"}", queries, 5)
        assert list(run["t"]) == ["1"], (run, facts)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("ok")


def test_pya0_is_kept_out_of_the_modules_that_prepare_documents_and_queries():
    for module in ("structure.py", "approach0.py"):
        source = (Path(approach0.__file__).parent / module).read_text(encoding="utf-8")
        top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
        assert not [line for line in top_level if "pya0" in line], module


def test_ntcir12_formula_list_as_pya0_reads_it(tmp_path):
    latex = tmp_path / "formulas.txt"
    latex.write_text(
        "Binomial_coefficient:197 \\binom{n}{k}\n"
        "Dedekind_eta_function:31 \\eta(\\tau)=% q^{1/24}\n",
        encoding="utf-8",
    )
    assert read_formulas(latex) == [
        {
            "id": "Binomial_coefficient:197",
            "title": "Binomial coefficient",
            "text": "\\binom{n}{k}",
        },
        {
            "id": "Dedekind_eta_function:31",
            "title": "Dedekind eta function",
            "text": "\\eta(\\tau)=q^{1/24}",
        },
    ]
    latex.write_text("Binomial_coefficient \\binom{n}{k}\n", encoding="utf-8")
    with pytest.raises(
        InputFormatError, match=r"formulas.txt:1: expected '<Article>:<position> <TeX>'"
    ):
        read_formulas(latex)


def test_ntcir12_formula_collection_is_searched_by_structure(tmp_path):
    records = [
        {"id": "Pythagorean_theorem:1", "title": "", "text": "a^2+b^2=c^2"},
        {"id": "Integral:4", "title": "", "text": "\\int_a^b f(x)\\,dx"},
    ]
    template = DocumentTemplate("{text}", formula_fields=("text",))
    terms = Terms(None)
    documents = [(r["id"], template.render(r, terms, "c")) for r in records]
    approach0.build_index(documents, tmp_path / "ix", 0.5, "c")
    rule = QueryRule(term_fields=(), formula_fields=(), tex_fields=("text",))
    queries = topic_queries(
        [{"id": "NTCIR12-MathWiki-1", "title": "", "text": "x^2+y^2=z^2"}],
        None,
        rule,
        terms,
        BOOSTS,
        "t",
    )
    run, _ = approach0.search(tmp_path / "ix", queries, 10)
    assert list(run["NTCIR12-MathWiki-1"])[0] == "Pythagorean_theorem:1"


# --- sharded indexes (structure.<collection>.<name>.shards) ------------------------------------

SHARD_RECORDS = [
    {"id": "1", "title": "", "text": "Pythagoras says $a^2+b^2=c^2$ for right triangles."},
    {"id": "2", "title": "", "text": "An integral $\\int_0^1 f(t)\\,dt$ of a function."},
    {"id": "3", "title": "", "text": "Primes and $x^2+y^2=z^2$ in number theory."},
    {"id": "4", "title": "", "text": "A sum $\\sum_{k=1}^n k$ of integers, and primes."},
    {"id": "5", "title": "", "text": "Squares $p^2+q^2=r^2$ again, a right triangle."},
]
SHARD_QUERIES = [
    {"id": "q1", "keywords": [{"type": "tex", "str": "x^2+y^2=z^2", "boost": 1.0}]},
    {"id": "q2", "keywords": [{"type": "term", "str": "prime", "boost": 1.0}]},
]


@pytest.fixture(scope="module")
def shard_corpus(tmp_path_factory) -> Path:
    corpus = tmp_path_factory.mktemp("sharded") / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in SHARD_RECORDS))
    return corpus


def index_of(corpus: Path, index: Path, **shard) -> dict:
    template, terms = DocumentTemplate("{text}"), Terms("porter")
    return approach0.index_corpus(corpus, template, terms, index, 0.5, **shard)


INDEX_IN_ITS_OWN_PROCESS = """
import json, sys
from hybrid_ir.retrieval import approach0
from hybrid_ir.retrieval.structure import DocumentTemplate, Terms
corpus, index, shard = sys.argv[1:4]
arguments = {} if shard == "default" else {"shard": 0, "shards": 1}
stats = approach0.index_corpus(corpus, DocumentTemplate("{text}"), Terms("porter"), index, 0.5,
                               **arguments)
print(json.dumps(stats))
"""


def test_one_shard_is_the_whole_index_byte_for_byte(shard_corpus, tmp_path):
    """Each built by a new process, as a job builds it (see build_in_its_own_process)."""
    stats = {}
    for name, shard in (("whole", "default"), ("single", "0 of 1")):
        done = subprocess.run(
            [sys.executable, "-c", INDEX_IN_ITS_OWN_PROCESS, str(shard_corpus),
             str(tmp_path / name), shard],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        stats[name] = json.loads(done.stdout.splitlines()[-1])
        del stats[name]["seconds"]
    assert stats["single"] == stats["whole"]
    assert index_files(tmp_path / "single") == index_files(tmp_path / "whole") != {}
    merged = approach0.merge_shard_searches(
        [approach0.search(tmp_path / "single", SHARD_QUERIES, 10)], 10
    )
    assert merged[0] == approach0.search(tmp_path / "whole", SHARD_QUERIES, 10)[0] != {}


def test_shards_deal_the_records_out_in_turn_and_merge_into_one_ranking(shard_corpus, tmp_path):
    shards = 2
    parts, stats = [], []
    for shard in range(shards):
        stats.append(index_of(shard_corpus, tmp_path / f"s{shard}", shard=shard, shards=shards))
        parts.append(approach0.search(tmp_path / f"s{shard}", SHARD_QUERIES, 10))
    assert [part["documents"] for part in stats] == [3, 2]
    assert {doc for run, _ in parts[:1] for docs in run.values() for doc in docs} <= {"1", "3", "5"}
    assert {doc for run, _ in parts[1:] for docs in run.values() for doc in docs} <= {"2", "4"}
    run, facts = approach0.merge_shard_searches(parts, depth=2)
    # Each topic: the canonical top 2 of both shards' hits (score, then id, descending).
    for topic in ("q1", "q2"):
        union = {doc: score for part, _ in parts for doc, score in part.get(topic, {}).items()}
        ranked = sorted(union.items(), key=lambda item: (item[1], item[0]), reverse=True)
        assert list(run[topic].items()) == ranked[:2]
    assert facts["with_hits"] == 2 and facts["failed"] == {} and len(facts["shards"]) == 2
    merged_stats = approach0.merge_shard_stats(stats)
    assert merged_stats["documents"] == 5 and merged_stats["shards"] == 2
    assert merged_stats["formulas"] == sum(part["formulas"] for part in stats)


def test_a_topic_failed_on_one_shard_is_failed_naming_the_shard():
    ok = ({"q": {"1": 2.0}}, {"topics": 1, "with_hits": 1, "without_hits": [], "failed": {}})
    crashed = ({}, {"topics": 1, "with_hits": 0, "without_hits": [], "failed": {"q": "engine x"}})
    _, facts = approach0.merge_shard_searches([ok, crashed], depth=5)
    assert facts["failed"] == {"q": "shard 1: engine x"} and facts["with_hits"] == 0


def test_more_shards_than_documents_is_an_error_naming_the_corpus(shard_corpus, tmp_path):
    from hybrid_ir.errors import ConfigError

    with pytest.raises(ConfigError, match=r"corpus.jsonl: 6 shards for 5 documents .* at most 5"):
        index_of(shard_corpus, tmp_path / "ix", shard=5, shards=6)
    assert not (tmp_path / "ix").exists()
