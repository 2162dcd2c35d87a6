"""Data anyone can get: downloads that resume and retry, archives rebuilt from their member lists,
raw files checked again when read, and ``hybrid-ir data``'s checklist; the default
configuration's collections built from a local copy of the upstream hosts, byte-identical to
those built from the mirror."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import ssl
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from toy_workflow import REPO, SNAKEMAKE, snakemake_environment
from upstream_server import Upstream, https_server, make_certificate

from hybrid_ir import paths
from hybrid_ir.cli.main import main
from hybrid_ir.config.layers import config_layers, merged_config
from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.checklist import required_raw_files
from hybrid_ir.data.fetch import (
    RAW_URL_BASE,
    ManifestEntry,
    Network,
    fetch,
    load_manifest,
    write_manifest,
)
from hybrid_ir.data.members import (
    find_member_list,
    load_member_list,
    member_list_from_archive,
    member_list_path,
    write_member_list,
)
from hybrid_ir.data.raw_check import check_raw_inputs
from hybrid_ir.errors import FetchError, InputFormatError
from hybrid_ir.planning.plan import Plan

CONTENT = b"".join(b"line %d of an upstream file\n" % number for number in range(2000))
REPOSITORY, COMMIT = "owner/repo", "c" * 40
HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")


def entry_for(path: str, content: bytes, url: str = "") -> ManifestEntry:
    return ManifestEntry(
        path=path,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        repository=REPOSITORY,
        commit=COMMIT,
        upstream_path=f"data/{path}",
        url=url,
        upstream_sha256="",
    )


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def upstream(certificate):
    """An empty local upstream host; tests fill in its files and faults."""
    served = Upstream({})
    with https_server(served.handler(), certificate) as url:
        served.url = url
        yield served


def quick(certificate, **settings) -> Network:
    """Retries without waiting, trusting the test certificate."""
    tls = ssl.create_default_context(cafile=certificate[0])
    return Network(ssl_context=tls, backoff_s=0, **{"attempts": 3, **settings})


def test_a_cut_download_resumes_with_a_range_request(tmp_path, upstream, certificate):
    upstream.files["/data/x.txt"] = CONTENT
    upstream.faults["/data/x.txt"] = "cut:1000"
    destination = tmp_path / "raw" / "x.txt"
    fetch(
        entry_for("x.txt", CONTENT, f"{upstream.url}/data/x.txt"),
        None,
        destination,
        network=quick(certificate),
        partial_dir=tmp_path / "partial",
    )
    assert destination.read_bytes() == CONTENT
    assert upstream.requests == [("/data/x.txt", None), ("/data/x.txt", "bytes=1000-")]
    assert not (tmp_path / "partial" / "x.txt.part").exists()


def test_a_failed_download_keeps_its_partial_file_for_the_next_run(tmp_path, upstream, certificate):
    upstream.files["/data/x.txt"] = CONTENT
    upstream.faults["/data/x.txt"] = "cut:1000"
    entry = entry_for("x.txt", CONTENT, f"{upstream.url}/data/x.txt")
    destination = tmp_path / "raw" / "x.txt"
    partials = tmp_path / "partial"
    with pytest.raises(FetchError, match=r"x\.txt.*1 attempt\(s\); the partial file is kept"):
        fetch(
            entry, None, destination, network=quick(certificate, attempts=1), partial_dir=partials
        )
    assert not destination.exists() and os.listdir(destination.parent) == []
    assert (partials / "x.txt.part").read_bytes() == CONTENT[:1000]
    fetch(entry, None, destination, network=quick(certificate), partial_dir=partials)
    assert destination.read_bytes() == CONTENT
    assert upstream.requests[-1] == ("/data/x.txt", "bytes=1000-")


def test_a_server_without_ranges_sends_the_whole_file_again(tmp_path, upstream, certificate):
    upstream.ranges = False
    upstream.files["/data/x.txt"] = CONTENT
    partials = tmp_path / "partial"
    partials.mkdir()
    (partials / "x.txt.part").write_bytes(CONTENT[:1000])
    destination = tmp_path / "x.txt"
    entry = entry_for("x.txt", CONTENT, f"{upstream.url}/data/x.txt")
    fetch(entry, None, destination, network=quick(certificate), partial_dir=partials)
    assert destination.read_bytes() == CONTENT


def test_a_resumed_file_of_the_wrong_bytes_is_downloaded_again_from_the_start(
    tmp_path, upstream, certificate
):
    upstream.files["/data/x.txt"] = CONTENT
    partials = tmp_path / "partial"
    partials.mkdir()
    (partials / "x.txt.part").write_bytes(b"garbage that is not the file's start")
    destination = tmp_path / "x.txt"
    entry = entry_for("x.txt", CONTENT, f"{upstream.url}/data/x.txt")
    fetch(entry, None, destination, network=quick(certificate), partial_dir=partials)
    assert destination.read_bytes() == CONTENT
    assert upstream.requests[0][1] is not None and upstream.requests[-1] == ("/data/x.txt", None)


@pytest.mark.parametrize(("status", "requests"), [(500, 3), (503, 3), (404, 1), (403, 1)])
def test_server_errors_are_retried_client_errors_are_not(
    tmp_path, upstream, certificate, status, requests
):
    upstream.faults["/data/x.txt"] = f"status:{status}"
    url = f"{upstream.url}/data/x.txt"
    destination = tmp_path / "x.txt"
    with pytest.raises(FetchError) as error:
        fetch(entry_for("x.txt", CONTENT, url), None, destination, network=quick(certificate))
    assert f"the download from {url} failed (HTTP {status}" in str(error.value)
    assert len(upstream.requests) == requests
    assert os.listdir(tmp_path) == []


def test_wrong_bytes_name_both_digests_and_leave_nothing(tmp_path, upstream, certificate):
    upstream.files["/data/x.txt"] = CONTENT + b"tampered\n"
    url = f"{upstream.url}/data/x.txt"
    partials = tmp_path / "partial"
    with pytest.raises(FetchError) as error:
        fetch(
            entry_for("x.txt", CONTENT, url),
            None,
            tmp_path / "raw" / "x.txt",
            network=quick(certificate),
            partial_dir=partials,
        )
    message = str(error.value)
    assert f"checksum mismatch for x.txt (from {url})" in message
    assert hashlib.sha256(CONTENT).hexdigest() in message
    assert hashlib.sha256(CONTENT + b"tampered\n").hexdigest() in message
    assert os.listdir(tmp_path / "raw") == [] and list(partials.rglob("*.part")) == []


def test_a_server_that_never_answers_times_out(tmp_path, upstream, certificate):
    upstream.faults["/data/x.txt"] = "hang"
    url = f"{upstream.url}/data/x.txt"
    began = time.monotonic()
    with pytest.raises(FetchError, match=f"download from {url} failed .*timed out"):
        fetch(
            entry_for("x.txt", CONTENT, url),
            None,
            tmp_path / "x.txt",
            network=quick(certificate, timeout=0.5, attempts=2),
        )
    assert time.monotonic() - began < 10
    assert os.listdir(tmp_path) == []


def test_the_raw_host_can_be_replaced(tmp_path, upstream, certificate):
    """Manifest URLs name GitHub's raw host; ``raw_url`` (HYBRID_IR_RAW_URL) serves them."""
    upstream.files[f"/{REPOSITORY}/{COMMIT}/data/x.txt"] = CONTENT
    entry = entry_for("x.txt", CONTENT, f"{RAW_URL_BASE}/{REPOSITORY}/{COMMIT}/data/x.txt")
    source = fetch(
        entry, None, tmp_path / "x.txt", network=quick(certificate, raw_url=upstream.url)
    )
    assert source == f"{upstream.url}/{REPOSITORY}/{COMMIT}/data/x.txt"


# --- archives packed from many upstream files --------------------------------------------------

FILES = {f"shards/{number}.jsonl": CONTENT[: 500 * number] for number in range(1, 6)}


def packed_archive(folder: Path, files=FILES, mode=0o644) -> Path:
    """A GNU tar of ``files`` under one folder, compressed as the mirror's archives were."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("shards")
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1577836800
        tar.addfile(info)
        for name, content in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), mode, 1577836800
            tar.addfile(info, io.BytesIO(content))
    archive = folder / "mirror" / "text" / "shards.tar.gz"
    archive.parent.mkdir(parents=True)
    gnu = subprocess.run(["gzip", "-9n", "-c"], input=raw.getvalue(), capture_output=True)
    archive.write_bytes(gnu.stdout)
    return archive


def archive_row(tmp_path: Path, upstream: Upstream) -> tuple[ManifestEntry, Path]:
    """The manifest row, member list and served members of :func:`packed_archive`."""
    archive = packed_archive(tmp_path)
    entry = entry_for("text/shards.tar.gz", archive.read_bytes())
    members = member_list_from_archive(archive, entry.path, REPOSITORY, COMMIT, "data/")
    write_member_list(members, member_list_path(tmp_path / "manifest.tsv", entry.path))
    for name, content in FILES.items():
        upstream.files[f"/{REPOSITORY}/{COMMIT}/data/{name}"] = content
    return entry, archive


def test_an_archive_is_rebuilt_byte_for_byte_from_its_members(tmp_path, upstream, certificate):
    entry, archive = archive_row(tmp_path, upstream)
    members = find_member_list(tmp_path / "manifest.tsv", entry.path)
    assert members is not None and len(members.members) == 6
    upstream.faults[f"/{REPOSITORY}/{COMMIT}/data/shards/5.jsonl"] = "cut:100"
    destination = tmp_path / "raw" / entry.path
    source = fetch(
        entry,
        None,
        destination,
        members=members,
        network=quick(certificate, raw_url=upstream.url),
        partial_dir=tmp_path / "partial",
    )
    assert destination.read_bytes() == archive.read_bytes()
    assert source.startswith(f"5 files of {REPOSITORY}@cccccccccccc:data/")
    assert (f"/{REPOSITORY}/{COMMIT}/data/shards/5.jsonl", "bytes=100-") in upstream.requests
    assert not (tmp_path / "partial" / f"{entry.path}.members").exists()


def test_a_member_of_the_wrong_bytes_names_the_member_and_both_digests(
    tmp_path, upstream, certificate
):
    entry, _ = archive_row(tmp_path, upstream)
    upstream.files[f"/{REPOSITORY}/{COMMIT}/data/shards/2.jsonl"] = b"not the shard\n"
    members = find_member_list(tmp_path / "manifest.tsv", entry.path)
    with pytest.raises(FetchError) as error:
        fetch(
            entry,
            None,
            tmp_path / "raw" / entry.path,
            members=members,
            network=quick(certificate, raw_url=upstream.url),
            partial_dir=tmp_path / "partial",
        )
    message = str(error.value)
    assert "checksum mismatch for member shards/2.jsonl of text/shards.tar.gz" in message
    assert hashlib.sha256(FILES["shards/2.jsonl"]).hexdigest() in message
    assert hashlib.sha256(b"not the shard\n").hexdigest() in message
    assert os.listdir(tmp_path / "raw" / "text") == []


def test_an_archive_compressed_otherwise_passes_by_its_tar_stream(tmp_path, upstream):
    """A row verifies either the archive's sha256 or its tar stream's (every member and header):
    the same tar under another deflate, as a machine without GNU gzip packs it, is accepted."""
    entry, archive = archive_row(tmp_path, upstream)
    members = find_member_list(tmp_path / "manifest.tsv", entry.path)
    recompressed = gzip.compress(gzip.decompress(archive.read_bytes()), 1, mtime=0)
    assert recompressed != archive.read_bytes()
    archive.write_bytes(recompressed)
    destination = tmp_path / "raw" / entry.path
    fetch(entry, tmp_path / "mirror", destination, members=members)
    assert destination.read_bytes() == recompressed
    tampered = gzip.compress(gzip.decompress(recompressed).replace(b"line 3 ", b"line 9 "))
    archive.write_bytes(tampered)
    with pytest.raises(FetchError, match="checksum mismatch for text/shards.tar.gz"):
        fetch(entry, tmp_path / "mirror", tmp_path / "again" / entry.path, members=members)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../outside.txt", "must be a relative path"),
        ("/etc/passwd", "must be a relative path"),
        ("shards/./x", "must be a relative path"),
        ("shards\nx", "must be a relative path"),
    ],
)
def test_member_names_that_would_leave_the_folder_are_refused(tmp_path, upstream, name, problem):
    entry, _ = archive_row(tmp_path, upstream)
    path = member_list_path(tmp_path / "manifest.tsv", entry.path)
    document = json.loads(path.read_text())
    document["members"][2]["name"] = name
    path.write_text(json.dumps(document))
    with pytest.raises(InputFormatError) as error:
        load_member_list(path)
    assert str(error.value).startswith(f"{path}: member 3: name ")
    assert problem in str(error.value)


def test_an_upstream_folder_that_would_leave_the_repository_is_refused(tmp_path, upstream):
    entry, _ = archive_row(tmp_path, upstream)
    path = member_list_path(tmp_path / "manifest.tsv", entry.path)
    document = json.loads(path.read_text())
    document["upstream_folder"] = "../../other/"
    path.write_text(json.dumps(document))
    with pytest.raises(InputFormatError, match="upstream_folder '../../other/' must be"):
        load_member_list(path)


def test_the_committed_member_lists_describe_the_mirror_archives(mirror):
    """Each member list is what `hybrid-ir manifest members` makes of the mirror's archive."""
    manifest = REPO / paths.MANIFEST
    rows = load_manifest(manifest)
    lists = sorted((REPO / "workflow/resources/members").rglob("*.json"))
    assert len(lists) == 2
    for path in lists:
        members = load_member_list(path)
        entry = rows[members.archive]
        assert (entry.repository, entry.commit, entry.url) == (
            members.repository,
            members.commit,
            "",
        )
        again = member_list_from_archive(
            mirror / members.archive,
            members.archive,
            entry.repository,
            entry.commit,
            members.upstream_folder,
        )
        assert again == members


# --- raw files checked when read ---------------------------------------------------------------


def test_a_raw_file_changed_after_its_fetch_fails_the_job_reading_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = Path(paths.raw("x.txt"))
    raw.parent.mkdir(parents=True)
    raw.write_bytes(CONTENT)
    manifest = tmp_path / "manifest.tsv"
    write_rows(manifest, [entry_for("x.txt", CONTENT)])
    assert check_raw_inputs([str(raw), "results/other.txt"], manifest) == {
        "x.txt": hashlib.sha256(CONTENT).hexdigest()
    }
    raw.write_bytes(CONTENT.replace(b"line 7 ", b"line 8 "))
    with pytest.raises(FetchError) as error:
        check_raw_inputs([str(raw)], manifest)
    message = str(error.value)
    assert message.startswith("results/raw/x.txt changed since it was fetched: ")
    assert hashlib.sha256(CONTENT).hexdigest() in message
    assert hashlib.sha256(raw.read_bytes()).hexdigest() in message
    assert message.endswith("delete it and run again to fetch the original, or restore it")


def write_rows(manifest: Path, entries: list[ManifestEntry]) -> None:
    write_manifest(entries, manifest)


# --- hybrid-ir data ------------------------------------------------------------------------------


def test_the_paper_configuration_lists_every_missing_file_at_once(mirror, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    configs = ["configs/paper.yaml", "configs/paper004-beir.yaml"]
    status = main(["data", "--configfile", *configs])
    out = capsys.readouterr().out
    assert status == 1
    by_hand = [line.split()[3] for line in out.splitlines() if line.startswith("by hand")]
    assert by_hand == [
        "arqmath/full/PostLinks.V1.3.xml",
        "arqmath/full/Posts.V1.3.xml",
        "beir/bioasq/corpus.jsonl.gz",
        "beir/bioasq/qrels/test.tsv",
        "beir/bioasq/queries.jsonl",
        "beir/nfcorpus/nfcorpus.zip",
        "beir/trec-covid/trec-covid.zip",
        "math-text/stackmathqa100k.tar.gz",
        "ntcir12-wiki-formula/NTCIR12_MathIR_WikiCorpus_v2.1.0.tar.bz2",
    ]
    assert "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip" in out
    assert out.count("  hybrid-ir manifest add ") == 9
    assert out.rstrip().endswith("The configuration cannot run until the files above are in place.")


# --- the default configuration from the upstream hosts ------------------------------------------


def upstream_of(mirror: Path, needed: list[str]) -> dict[str, object]:
    """URL path -> bytes for every needed row, as GitHub's raw host serves them: a file gzipped
    for the mirror as its upstream original, an archive packed here as its members."""
    manifest = REPO / paths.MANIFEST
    rows = load_manifest(manifest)
    files: dict[str, object] = {}
    for path in needed:
        entry = rows[path]
        members = find_member_list(manifest, path)
        if members is not None:
            with tarfile.open(mirror / path) as tar:
                for member in members.files():
                    content = tar.extractfile(member.name).read()
                    url_path = f"/{members.repository}/{members.commit}/"
                    files[url_path + members.upstream_path(member)] = content
            continue
        assert entry.url.startswith(RAW_URL_BASE), entry
        stored = mirror / path
        if entry.gzipped_here:
            files[entry.url[len(RAW_URL_BASE) :]] = lambda stored=stored: gzip.decompress(
                stored.read_bytes()
            )
        else:
            files[entry.url[len(RAW_URL_BASE) :]] = stored.read_bytes
    return files


def default_targets() -> tuple[list[str], list[str]]:
    """The default configuration's raw files (manifest paths) and every canonical file its
    collections' readers write."""
    config = merged_config(config_layers([REPO / "config.yaml"], {}))
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml", require_pins=False)
    plan = Plan(config, {}, [], {}, None)
    collections = [
        file for name in config["collections"] for file in plan.converted_outputs(name).values()
    ]
    return list(required_raw_files(config)), collections


def same_content(left: Path, right: Path) -> bool:
    """Byte-identical, or the same bytes once decompressed (a file gzipped for the mirror is
    compressed again after its download, with other deflate choices)."""
    if left.read_bytes() == right.read_bytes():
        return True
    return left.suffix == ".gz" and gzip.decompress(left.read_bytes()) == gzip.decompress(
        right.read_bytes()
    )


def run_workflow(workdir: Path, mirror: Path, targets: list[str], env: dict[str, str]) -> float:
    workdir.mkdir()
    (workdir / "expected").symlink_to(REPO / "expected")
    began = time.monotonic()
    result = subprocess.run(
        [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
         *targets, "--cores", "2", "--configfile", str(REPO / "config.yaml"),
         "--config", f"mirror={mirror}", f"manifest={REPO / paths.MANIFEST}"],
        capture_output=True, text=True, env=snakemake_environment(env), timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    return time.monotonic() - began


@pytest.mark.mirror
def test_the_default_collections_from_upstream_equal_those_from_the_mirror(
    mirror, tmp_path, certificate
):
    """From an empty mirror and a local copy of the upstream hosts: `hybrid-ir data --download`
    brings every raw file of the default configuration (the two archives packed from their
    members), and the workflow, fetching on its own, builds every canonical collection file
    byte-identical to a build from the mirror."""
    needed, collections = default_targets()
    served = Upstream(upstream_of(mirror, needed))
    with https_server(served.handler(), certificate) as url:
        env = {"HYBRID_IR_RAW_URL": url, "SSL_CERT_FILE": str(certificate[0])}
        downloaded = tmp_path / "downloaded-mirror"
        # A working folder of its own: the repository's results/raw/ may hold a finished run.
        checkout = tmp_path / "checkout"
        checkout.mkdir()
        for folder in ("workflow", "expected"):
            (checkout / folder).symlink_to(REPO / folder)
        began = time.monotonic()
        listing = subprocess.run(
            [str(HYBRID_IR), "data", "--download", "--base", str(REPO / "config.yaml")],
            capture_output=True, text=True, cwd=checkout, timeout=900,
            env=snakemake_environment({**env, "HYBRID_IR_MIRROR": str(downloaded)}),
        )  # fmt: skip
        seconds = time.monotonic() - began
        assert listing.returncode == 0, listing.stderr[-3000:] + listing.stdout[-3000:]
        assert listing.stdout.startswith(
            f"{len(needed)} raw files needed: 0 fetched, {len(needed)} in the mirror, "
            "0 to download (0 B), 0 to obtain by hand, 0 corrupt"
        ), listing.stdout[:500]
        for path in needed:
            assert same_content(downloaded / path, mirror / path), path
        requests = len(served.requests)
        print(
            f"\nhybrid-ir data --download: {len(needed)} files, {requests} requests, "
            f"{seconds:.1f} s"
        )
        targets = [paths.raw(path) for path in needed] + collections
        from_mirror = run_workflow(tmp_path / "from-mirror", mirror, targets, {})
        from_upstream = run_workflow(tmp_path / "from-upstream", tmp_path / "empty", targets, env)
    print(
        f"workflow to the collections: {from_mirror:.1f} s from the mirror, "
        f"{from_upstream:.1f} s from upstream"
    )
    for path in needed:
        raw = paths.raw(path)
        assert same_content(tmp_path / "from-upstream" / raw, tmp_path / "from-mirror" / raw), raw
    for file in collections:
        upstream_copy = (tmp_path / "from-upstream" / file).read_bytes()
        assert upstream_copy == (tmp_path / "from-mirror" / file).read_bytes(), file
    archives = [
        path
        for path in needed
        if path.endswith(".tar.gz") and find_member_list(REPO / paths.MANIFEST, path)
    ]
    assert len(archives) == 2
    for path in archives:
        assert (tmp_path / "from-upstream" / paths.raw(path)).read_bytes() == (
            mirror / path
        ).read_bytes()


# --- a hostile-input pass over the new commands --------------------------------------------------


def test_member_lists_are_made_only_of_tar_archives_inside_the_mirror(tmp_path, capsys):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    broken = mirror / "x.tar.gz"
    broken.write_bytes(b"not an archive\n")
    manifest = tmp_path / "manifest.tsv"
    write_rows(manifest, [entry_for("x.tar.gz", broken.read_bytes())])
    outside = tmp_path / "outside.tar.gz"
    outside.write_bytes(b"")
    members = ["manifest", "members", "--upstream-folder", "data/", "--mirror", str(mirror)]
    assert main([*members, str(outside), "--manifest", str(manifest)]) == 1
    assert capsys.readouterr().err == (
        f"hybrid-ir error: {outside}: not inside the mirror {mirror}; copy it there first\n"
    )
    assert main([*members, str(broken), "--manifest", str(manifest)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"hybrid-ir error: {broken}: not a readable tar archive")
    assert error.count("\n") == 1
    assert not member_list_path(manifest, "x.tar.gz").exists()


def test_a_raw_host_that_is_not_https_and_too_many_connections_are_one_line(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HYBRID_IR_RAW_URL", "http://127.0.0.1:9")
    assert main(["data"]) == 1
    assert capsys.readouterr().err == (
        "hybrid-ir error: HYBRID_IR_RAW_URL: 'http://127.0.0.1:9' is not an https:// URL, the "
        "only kind downloaded\n"
    )
    monkeypatch.delenv("HYBRID_IR_RAW_URL")
    assert main(["data", "--download", "--connections", "1000"]) == 1
    assert (
        capsys.readouterr().err == "hybrid-ir error: --connections must be at most 16, got 1000\n"
    )
