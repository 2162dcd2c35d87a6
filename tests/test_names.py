"""Names instead of paths (hybrid_ir.data.names): a results folder laid out with hybrid_ir.paths'
own functions, its names resolved to its files by the module, by ``hybrid-ir`` (which says what
each name resolved to) and by the Python API; a path that exists winning over a name; an unknown
name listing the nearest ones; and ir_datasets ids read from a dataset registered from local
files (nothing downloaded: $IR_DATASETS_HOME is the test's folder and sockets are refused).

The folder: collection ``toy`` with topic set and qrels ``test`` and runs ``bm25`` and
``dense`` of it; collection ``cf`` with topic set ``all`` and qrels ``binary`` and ``graded``
(no qrels named as its topic set)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hybrid_ir import paths
from hybrid_ir.cli.main import main
from hybrid_ir.data import irds, names
from hybrid_ir.errors import HybridIRError, UnknownName
from hybrid_ir.interfaces import api

HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}}
TOPICS = [{"id": "q1", "title": "", "text": "zebra stripes"},
          {"id": "q2", "title": "", "text": "giraffe necks"}]  # fmt: skip
BM25 = {"q1": {"d1": 2.0, "d3": 1.0}, "q2": {"d2": 1.5, "d1": 0.5}}
DENSE = {"q1": {"d3": 0.9, "d1": 0.8}, "q2": {"d2": 0.7, "d4": 0.1}}


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection is a failure: nothing here may download."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a test connected to the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """The working directory, holding ``results/`` as the workflow writes it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "ir_datasets"))
    api.write_qrels(QRELS, paths.qrels("toy", "test"))
    _write_topics(Path(paths.topics("toy", "test")), TOPICS)
    _write_topics(Path(paths.corpus("toy")), [
        {"id": f"d{n}", "title": "", "text": f"document {n}"} for n in range(1, 5)
    ])  # fmt: skip
    api.write_run(BM25, paths.run("toy", "test", "bm25"), tag="bm25")
    api.write_run(DENSE, paths.run("toy", "test", "dense"), tag="dense")
    _write_topics(Path(paths.topics("cf", "all")), TOPICS)
    api.write_qrels(QRELS, paths.qrels("cf", "binary"))
    api.write_qrels({"q1": {"d1": 2}}, paths.qrels("cf", "graded"))
    return tmp_path


def _write_topics(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def _cli(capsys, *argv: str) -> tuple[int, str, list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


# the module ------------------------------------------------------------------------------------


def test_each_kind_of_name_resolves_to_the_file_paths_names(results):
    assert names.resolve("run", "toy/test/bm25").path == Path(paths.run("toy", "test", "bm25"))
    assert names.resolve("qrels", "toy/test").path == Path(paths.qrels("toy", "test"))
    assert names.resolve("topics", "toy/test").path == Path(paths.topics("toy", "test"))
    assert names.resolve("corpus", "toy").path == Path(paths.corpus("toy"))
    bare = names.resolve("run", "dense", topics="toy/test")
    assert bare.path == Path(paths.run("toy", "test", "dense"))
    assert bare.note == "dense -> results/runs/toy/test/dense.trec"
    # The topic set may be given by its topics or qrels file too.
    for context in (paths.topics("toy", "test"), paths.qrels("toy", "test")):
        assert names.resolve("run", "dense", topics=context).path == bare.path
    assert names.names("run") == ["toy/test/bm25", "toy/test/dense"]
    assert names.names("qrels") == ["cf/binary", "cf/graded", "toy/test"]


def test_another_results_folder_is_an_argument(results, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    found = names.resolve("run", "toy/test/bm25", results=tmp_path / "results")
    assert found.path == tmp_path / paths.run("toy", "test", "bm25")
    assert found.note == f"toy/test/bm25 -> {tmp_path / paths.run('toy', 'test', 'bm25')}"
    assert api.read_run("toy/test/bm25", results=tmp_path / "results") == BM25
    with pytest.raises(UnknownName, match="there is no results/ here"):
        names.resolve("run", "toy/test/bm25")


def test_a_path_that_exists_wins_over_a_name(results):
    shadow = results / "toy" / "test" / "bm25"  # a file whose path reads as a run's name
    shadow.parent.mkdir(parents=True)
    api.write_run(DENSE, shadow, tag="shadow")
    found = names.resolve("run", "toy/test/bm25")
    assert found.path == Path("toy/test/bm25") and found.name is None and found.note is None
    assert api.read_run("toy/test/bm25") == DENSE
    assert api.read_run(paths.run("toy", "test", "bm25")) == BM25
    # A folder is no run, qrels or topics: the folder toy/test hides no name.
    assert names.resolve("qrels", "toy/test").path == Path(paths.qrels("toy", "test"))
    with pytest.raises(UnknownName, match="^run 'toy': a folder, not a file, nor a name"):
        names.resolve("run", "toy")


@pytest.mark.parametrize(
    ("kind", "given", "topics", "message"),
    [
        ("run", "toy/test/bm2", None, "run 'toy/test/bm2': no such file, nor a name in results/ "
         "(collection/topics/system or a system of the topic set); nearest: toy/test/bm25"),
        ("run", "dens", "toy/test", "nearest: toy/test/dense"),
        ("run", "bm25", None, "nearest: toy/test/bm25"),
        ("qrels", "toy/tset", None, "qrels 'toy/tset': no such file, nor a name in results/ "
         "(collection/qrels), nor an ir_datasets id; nearest: toy/test"),
        ("qrels", "cf/grade", None, "nearest: cf/graded"),
        ("corpus", "toys", None, "corpus 'toys': no such file, nor a name in results/ "
         "(collection); nearest: toy"),
        ("run", "zzz/yyy/xxx", None,
         "; results/ holds toy/test/bm25, toy/test/dense"),
    ],
)  # fmt: skip
def test_an_unknown_name_is_one_line_listing_the_nearest(results, kind, given, topics, message):
    with pytest.raises(UnknownName) as raised:
        names.resolve(kind, given, topics=topics)
    text = str(raised.value)
    assert "\n" not in text and text.endswith(message), text


def test_a_topic_sets_qrels_are_its_namesake_or_its_collections_only_ones(results):
    assert names.qrels_of("toy/test").path == Path(paths.qrels("toy", "test"))
    with pytest.raises(
        UnknownName, match=r"cf has no qrels cf/all .*\(it has cf/binary, cf/graded"
    ):
        names.qrels_of("cf/all")
    api.write_qrels(QRELS, paths.qrels("toy", "extra"))  # namesake first
    assert names.qrels_of("toy/test").path == Path(paths.qrels("toy", "test"))
    assert names.corpus_of("toy/test").path == Path(paths.corpus("toy"))


# the API ---------------------------------------------------------------------------------------


def test_the_api_takes_names_wherever_it_takes_runs_and_qrels(results):
    measures = ["nDCG@10", "P@1"]
    assert api.evaluate("toy/test", "toy/test/bm25", measures) == api.evaluate(
        QRELS, BM25, measures
    )
    assert api.fuse(["toy/test/dense", "toy/test/bm25"], "rrf", rrf_k=60) == api.fuse(
        [DENSE, BM25], "rrf", rrf_k=60
    )
    assert api.read_qrels("toy/test") == QRELS
    assert api.read_topics("toy/test") == TOPICS
    assert api.read_run("dense", topics="toy/test") == DENSE
    by_name = api.crossvalidate("toy/test/dense", "toy/test/bm25", "toy/test", "P@1", folds=2)
    assert by_name == api.crossvalidate(DENSE, BM25, QRELS, "P@1", folds=2)
    report = api.compare("toy/test", "toy/test/bm25", {"dense": "toy/test/dense"}, ["P@1"])
    assert report == api.compare(QRELS, BM25, {"dense": DENSE}, ["P@1"])
    with pytest.raises(UnknownName, match="nearest: toy/test/dense"):
        api.evaluate("toy/test", "toy/test/dence", measures)


# the command -----------------------------------------------------------------------------------


def test_evaluate_says_what_each_name_resolved_to(results, capsys):
    code, out, err = _cli(capsys, "evaluate", "--topics", "toy/test", "--run", "bm25",
                          "toy/test/dense", "--measures", "P@1")  # fmt: skip
    assert code == 0, err
    assert err == [
        "hybrid-ir: toy/test -> results/collections/toy/qrels/test.qrels",
        "hybrid-ir: bm25 -> results/runs/toy/test/bm25.trec",
        "hybrid-ir: toy/test/dense -> results/runs/toy/test/dense.trec",
    ]
    assert out.splitlines()[2:] == [
        "| results/runs/toy/test/bm25.trec | all | 1.0000 |",
        "| results/runs/toy/test/dense.trec | all | 0.5000 |",
    ]
    # Paths as before: nothing said, the same table.
    code, by_path, err = _cli(capsys, "evaluate", "--qrels", paths.qrels("toy", "test"), "--run",
                              paths.run("toy", "test", "bm25"), paths.run("toy", "test", "dense"),
                              "--measures", "P@1")  # fmt: skip
    assert code == 0 and err == [] and by_path == out


def test_qrels_by_name_give_the_topic_set_of_bare_system_names(results, capsys):
    code, out, err = _cli(
        capsys, "compare", "--qrels", "toy/test", "--baseline", "bm25", "dense", "--measures",
        "P@1", "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    assert err[0] == "hybrid-ir: toy/test -> results/collections/toy/qrels/test.qrels"
    assert "P@1,dense,results/runs/toy/test/dense.trec,bm25,2,2,0,0.5,1.0,-0.5" in out


def test_fuse_crossval_and_explore_take_names(results, capsys):
    code, out, err = _cli(capsys, "fuse", "--method", "rrf", "--topics", "toy/test", "dense",
                          "bm25", "-o", "fused.trec")  # fmt: skip
    assert code == 0, err
    assert err == ["hybrid-ir: dense -> results/runs/toy/test/dense.trec",
                   "hybrid-ir: bm25 -> results/runs/toy/test/bm25.trec"]  # fmt: skip
    assert api.read_run("fused.trec") == api.fuse([DENSE, BM25], "rrf")
    code, out, err = _cli(capsys, "crossval", "--topics", "toy/test", "dense", "bm25", "--folds",
                          "2", "--measures", "P@1")  # fmt: skip
    assert code == 0 and "| P@1 | " in out, err
    code, out, err = _cli(capsys, "explore", "--topics", "toy/test", "bm25", "dense", "-o",
                          "explore.html", "--measures", "P@1")  # fmt: skip
    assert code == 0, err
    assert err == [
        "hybrid-ir: toy/test -> results/collections/toy/topics/test.jsonl",
        "hybrid-ir: toy/test -> results/collections/toy/qrels/test.qrels",
        "hybrid-ir: toy -> results/collections/toy/corpus.jsonl",
        "hybrid-ir: bm25 -> results/runs/toy/test/bm25.trec",
        "hybrid-ir: dense -> results/runs/toy/test/dense.trec",
    ]
    assert out.startswith("explore.html: ") and "zebra stripes" in Path("explore.html").read_text()


def test_an_unknown_name_is_one_error_line_from_the_installed_command(results):
    done = subprocess.run(
        [str(HYBRID_IR), "evaluate", "--topics", "toy/test", "--run", "bm52", "--measures",
         "P@1"],
        cwd=results, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "hybrid-ir error: run 'bm52': no such file, nor a name in results/ "
        "(collection/topics/system or a system of the topic set); nearest: toy/test/bm25\n"
    )


def test_neither_qrels_nor_topics_is_one_line(results, capsys):
    code, out, err = _cli(capsys, "evaluate", "--run", "toy/test/bm25")
    assert code == 1 and err == [
        "hybrid-ir error: evaluate needs --qrels, or --topics for its qrels"
    ]


# ir_datasets -----------------------------------------------------------------------------------


@pytest.fixture
def dataset(results) -> str:
    """A dataset registered with ir_datasets from local files under a fresh id."""
    ir_datasets = pytest.importorskip("ir_datasets", reason="ir_datasets is not installed")
    from ir_datasets.formats import TrecQrels, TsvQueries
    from ir_datasets.util import LocalDownload

    local = results / "local"
    local.mkdir()
    (local / "queries.tsv").write_text("q1\tzebra stripes\nq2\tgiraffe necks\n")
    # q2 judged twice: the highest relevance is kept, as read_qrels keeps it.
    (local / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 0\nq2 0 d2 1\n")
    dataset_id = f"hybrid-ir-test/{uuid.uuid4().hex}/test"
    ir_datasets.registry.register(
        dataset_id,
        ir_datasets.Dataset(
            TsvQueries(LocalDownload(local / "queries.tsv")),
            TrecQrels(LocalDownload(local / "qrels.txt"), {0: "not", 1: "relevant"}),
        ),
    )
    return dataset_id


def test_an_ir_datasets_id_gives_its_qrels_and_topics(dataset, results):
    assert irds.has(dataset, "qrels") and irds.has(dataset, "topics")
    assert not irds.has("hybrid-ir-test/no-such-dataset", "qrels")
    found = names.resolve("qrels", dataset)
    assert found.path is None and found.dataset == dataset
    assert found.note == f"{dataset} -> ir_datasets:{dataset} (in {results / 'ir_datasets'})"
    assert api.read_qrels(dataset) == QRELS
    assert api.read_topics(dataset) == TOPICS
    assert api.evaluate(dataset, "toy/test/dense", ["P@1"]) == {"P@1": 0.5}
    # A name of the results folder comes first, and a run is no ir_datasets kind.
    with pytest.raises(UnknownName, match="^run "):
        names.resolve("run", dataset)


def test_the_command_evaluates_against_an_ir_datasets_id(dataset, results, capsys):
    code, out, err = _cli(capsys, "evaluate", "--qrels", dataset, "--run", "toy/test/dense",
                          "--measures", "P@1")  # fmt: skip
    assert code == 0, err
    assert err[0] == f"hybrid-ir: {dataset} -> ir_datasets:{dataset} (in {results / 'ir_datasets'})"
    assert out.splitlines()[2] == "| results/runs/toy/test/dense.trec | all | 0.5000 |"
    # The topic set's qrels, and bare system names need a topic set of the results folder.
    code, out, err = _cli(capsys, "evaluate", "--topics", dataset, "--run", "toy/test/bm25",
                          "--measures", "P@1")  # fmt: skip
    assert code == 0 and out.splitlines()[2].endswith("| 1.0000 |"), err
    code, out, err = _cli(capsys, "explore", "--topics", dataset, "toy/test/bm25",
                          "toy/test/dense", "--corpus", "toy")  # fmt: skip
    assert code == 1
    assert err == [f"hybrid-ir error: explore reads files: topics '{dataset}' is an ir_datasets id"]


def test_an_ir_datasets_read_failure_is_one_error(dataset, results, monkeypatch):
    (results / "local" / "qrels.txt").unlink()
    with pytest.raises(HybridIRError, match="its qrels could not be read: FileNotFoundError"):
        api.read_qrels(dataset)
