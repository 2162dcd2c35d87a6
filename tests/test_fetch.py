"""The fetch layer: mirror copies and downloads, checksum verification, clear failures."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from hybrid_ir.errors import FetchError, InputFormatError
from hybrid_ir.fetch import (
    ManifestEntry,
    fetch,
    load_manifest,
    manifest_from_sources,
    mirror_root,
    write_manifest,
)

GOOD = b"qid 0 doc 1\n"


def entry_for(path: str, content: bytes, url: str = "", upstream: bytes | None = None):
    return ManifestEntry(
        path=path,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        repository="owner/repo",
        commit="0" * 40,
        upstream_path=f"data/{path}",
        url=url,
        upstream_sha256=hashlib.sha256(upstream).hexdigest() if upstream is not None else "",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A local HTTP server on 127.0.0.1 serving a good file and a corrupted copy."""
    root = tmp_path_factory.mktemp("upstream")
    (root / "good.txt").write_bytes(GOOD)
    (root / "corrupted.txt").write_bytes(b"qid 0 doc 2\n")
    (root / "plain.tsv").write_bytes(GOOD)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def test_copy_from_mirror_verifies_and_names_the_source(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "cf").mkdir(parents=True)
    (mirror / "cf" / "cfquery").write_bytes(GOOD)
    destination = tmp_path / "out" / "cf" / "cfquery"
    source = fetch(entry_for("cf/cfquery", GOOD), mirror, destination)
    assert destination.read_bytes() == GOOD
    assert source == str(mirror / "cf" / "cfquery")


def test_mirror_file_with_wrong_hash_fails_without_output(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "cfquery").write_bytes(b"tampered\n")
    destination = tmp_path / "out" / "cfquery"
    entry = entry_for("cfquery", GOOD)
    with pytest.raises(FetchError) as error:
        fetch(entry, mirror, destination)
    message = str(error.value)
    assert "checksum mismatch for cfquery" in message
    assert entry.sha256 in message
    assert hashlib.sha256(b"tampered\n").hexdigest() in message
    assert "owner/repo@" in message
    assert "\n" not in message
    assert list(destination.parent.iterdir()) == []


def test_download_good_file(tmp_path, server):
    destination = tmp_path / "good.txt"
    source = fetch(entry_for("good.txt", GOOD, f"{server}/good.txt"), None, destination)
    assert source == f"{server}/good.txt"
    assert destination.read_bytes() == GOOD


def test_download_falls_back_when_file_is_missing_from_mirror(tmp_path, server):
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    destination = tmp_path / "good.txt"
    fetch(entry_for("good.txt", GOOD, f"{server}/good.txt"), mirror, destination)
    assert destination.read_bytes() == GOOD


def test_download_of_gzipped_file_checks_upstream_bytes(tmp_path, server):
    entry = entry_for("corrupted.tsv.gz", b"x", f"{server}/corrupted.txt", upstream=GOOD)
    with pytest.raises(FetchError, match="expected upstream sha256"):
        fetch(entry, None, tmp_path / "corrupted.tsv.gz")


def test_download_corrupted_file_fails_and_leaves_nothing(tmp_path, server):
    destination = tmp_path / "dl" / "corrupted.txt"
    with pytest.raises(FetchError, match=r"checksum mismatch for corrupted.txt .*expected sha256"):
        fetch(entry_for("corrupted.txt", GOOD, f"{server}/corrupted.txt"), None, destination)
    assert list(destination.parent.iterdir()) == []


def test_download_404_names_file_url_and_origin(tmp_path, server):
    destination = tmp_path / "dl" / "missing.txt"
    url = f"{server}/missing.txt"
    with pytest.raises(FetchError) as error:
        fetch(entry_for("missing.txt", GOOD, url), tmp_path, destination)
    message = str(error.value)
    assert "cannot fetch missing.txt" in message
    assert url in message and "HTTP 404" in message
    assert "owner/repo@000000000000:data/missing.txt" in message
    assert list(destination.parent.iterdir()) == []


def test_file_without_url_or_mirror_copy_says_where_to_get_it(tmp_path):
    with pytest.raises(FetchError, match="has no download URL; place it there"):
        fetch(entry_for("packed.tar.gz", GOOD), tmp_path, tmp_path / "out" / "packed.tar.gz")


def test_download_of_file_gzipped_in_mirror_is_checked_then_compressed(tmp_path, server):
    # The mirror copy was compressed by another gzip: its bytes cannot be reproduced here.
    compressed = gzip.compress(GOOD, compresslevel=1, mtime=12345)
    entry = entry_for("plain.tsv.gz", compressed, f"{server}/plain.tsv", upstream=GOOD)
    destination = tmp_path / "plain.tsv.gz"
    fetch(entry, None, destination)
    assert gzip.decompress(destination.read_bytes()) == GOOD


def test_mirror_environment_variable_overrides_config(monkeypatch, tmp_path):
    monkeypatch.setenv("HYBRID_IR_MIRROR", str(tmp_path))
    assert mirror_root("../shared/data") == tmp_path
    monkeypatch.delenv("HYBRID_IR_MIRROR")
    assert mirror_root("../shared/data") == Path("../shared/data")


def test_manifest_round_trip_and_bad_rows(tmp_path):
    entries = [entry_for("a/b.txt", GOOD, "https://example.invalid/b.txt")]
    path = tmp_path / "manifest.tsv"
    write_manifest(entries, path)
    assert load_manifest(path) == {"a/b.txt": entries[0]}
    path.write_text(path.read_text().replace(entries[0].sha256, "nothex"))
    with pytest.raises(InputFormatError, match=r"manifest.tsv:2: bad sha256"):
        load_manifest(path)


def test_manifest_from_sources_builds_pinned_urls(tmp_path):
    (tmp_path / "data" / "x").mkdir(parents=True)
    (tmp_path / "data" / "x" / "f.tsv.gz").write_bytes(gzip.compress(GOOD, mtime=0))
    sha = hashlib.sha256((tmp_path / "data" / "x" / "f.tsv.gz").read_bytes()).hexdigest()
    commit = "a" * 40
    sources = tmp_path / "SOURCES.md"
    sources.write_text(
        "| staged file | repository | path in repository | commit | size (bytes) | sha256 |\n"
        f"| `data/x/f.tsv.gz` | o/r | `dir/f.tsv` | `{commit}` | 10 | `{sha}` |\n"
        f"| `data/x/p.tar.gz` | o/r | `dir/ (many files, packed)` | `{commit}` | 10 | `{sha}` |\n"
    )
    gzipped, packed = manifest_from_sources(sources, tmp_path / "data")
    assert gzipped.url == f"https://raw.githubusercontent.com/o/r/{commit}/dir/f.tsv"
    assert gzipped.upstream_sha256 == hashlib.sha256(GOOD).hexdigest()
    assert packed.url == "" and packed.upstream_sha256 == ""


@pytest.mark.mirror
def test_committed_manifest_matches_the_mirror(mirror):
    repo = Path(__file__).resolve().parents[1]
    manifest = load_manifest(repo / "workflow" / "resources" / "manifest.tsv")
    rebuilt = {e.path: e for e in manifest_from_sources(mirror / "SOURCES.md", mirror)}
    assert manifest == rebuilt
    assert len(manifest) == 210
    sample = manifest["cf/original/cfquery"]
    assert replace(sample, url="") != sample  # every single-file row has a pinned URL
