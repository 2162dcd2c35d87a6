"""The fetch layer: mirror copies and downloads, checksum verification, clear failures."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import socket
import ssl
import time
from dataclasses import replace
from pathlib import Path

import pytest
from upstream_server import QuietHandler, https_server, make_certificate

from hybrid_ir.data.fetch import (
    ManifestEntry,
    Network,
    fetch,
    load_manifest,
    manifest_from_sources,
    mirror_root,
    write_manifest,
)
from hybrid_ir.errors import FetchError, InputFormatError

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
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls(certificate) -> ssl.SSLContext:
    """A client context that trusts the test certificate only."""
    return ssl.create_default_context(cafile=certificate[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory, certificate):
    """A local HTTPS server on 127.0.0.1 serving a good file and a corrupted copy."""
    root = tmp_path_factory.mktemp("upstream")
    (root / "good.txt").write_bytes(GOOD)
    (root / "corrupted.txt").write_bytes(b"qid 0 doc 2\n")
    (root / "plain.tsv").write_bytes(GOOD)

    class Files(QuietHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

    with https_server(Files, certificate) as url:
        yield url


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
    tampered = b"qid 0 doc 2\n"  # as long as GOOD: only the hash tells them apart
    (mirror / "cfquery").write_bytes(tampered)
    destination = tmp_path / "out" / "cfquery"
    entry = entry_for("cfquery", GOOD)
    with pytest.raises(FetchError) as error:
        fetch(entry, mirror, destination)
    message = str(error.value)
    assert "checksum mismatch for cfquery" in message
    assert entry.sha256 in message
    assert hashlib.sha256(tampered).hexdigest() in message
    assert "owner/repo@" in message
    assert "\n" not in message
    assert list(destination.parent.iterdir()) == []


def test_mirror_file_of_another_size_is_refused_before_it_is_copied(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "cfquery").write_bytes(GOOD[:5])  # a truncated copy
    destination = tmp_path / "out" / "cfquery"
    entry = entry_for("cfquery", GOOD)
    with pytest.raises(FetchError) as error:
        fetch(entry, mirror, destination)
    message = str(error.value)
    assert f"checksum mismatch for cfquery (from {mirror / 'cfquery'}): expected sha256" in message
    assert f"of {len(GOOD)} bytes, got a file of 5 bytes (not hashed)" in message
    assert list(destination.parent.iterdir()) == []


def test_an_absurd_manifest_size_leaves_the_download_deadline_working(tmp_path, server, tls):
    """A deadline derived from a size of 10**30 bytes overflowed the timer (OverflowError)."""
    entry = dataclasses.replace(entry_for("good.txt", GOOD, f"{server}/good.txt"), size=10**30)
    assert fetch(entry, None, tmp_path / "good.txt", network=Network(ssl_context=tls)).endswith(
        "/good.txt"
    )
    assert (tmp_path / "good.txt").read_bytes() == GOOD


def test_download_good_file(tmp_path, server, tls):
    destination = tmp_path / "good.txt"
    source = fetch(
        entry_for("good.txt", GOOD, f"{server}/good.txt"),
        None,
        destination,
        network=Network(ssl_context=tls),
    )
    assert source == f"{server}/good.txt"
    assert destination.read_bytes() == GOOD


def test_download_falls_back_when_file_is_missing_from_mirror(tmp_path, server, tls):
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    destination = tmp_path / "good.txt"
    fetch(
        entry_for("good.txt", GOOD, f"{server}/good.txt"),
        mirror,
        destination,
        network=Network(ssl_context=tls),
    )
    assert destination.read_bytes() == GOOD


def test_download_of_gzipped_file_checks_upstream_bytes(tmp_path, server, tls):
    entry = entry_for("corrupted.tsv.gz", b"x", f"{server}/corrupted.txt", upstream=GOOD)
    with pytest.raises(FetchError, match="expected upstream sha256"):
        fetch(entry, None, tmp_path / "corrupted.tsv.gz", network=Network(ssl_context=tls))


def test_download_corrupted_file_fails_and_leaves_nothing(tmp_path, server, tls):
    destination = tmp_path / "dl" / "corrupted.txt"
    with pytest.raises(FetchError, match=r"checksum mismatch for corrupted.txt .*expected sha256"):
        entry = entry_for("corrupted.txt", GOOD, f"{server}/corrupted.txt")
        fetch(entry, None, destination, network=Network(ssl_context=tls))
    assert list(destination.parent.iterdir()) == []


def test_download_404_names_file_url_and_origin(tmp_path, server, tls):
    destination = tmp_path / "dl" / "missing.txt"
    url = f"{server}/missing.txt"
    with pytest.raises(FetchError) as error:
        fetch(
            entry_for("missing.txt", GOOD, url),
            tmp_path,
            destination,
            network=Network(ssl_context=tls),
        )
    message = str(error.value)
    assert "cannot fetch missing.txt" in message
    assert url in message and "HTTP 404" in message
    assert "owner/repo@000000000000:data/missing.txt" in message
    assert list(destination.parent.iterdir()) == []


def test_file_without_url_or_mirror_copy_says_where_to_get_it(tmp_path):
    with pytest.raises(FetchError, match="has no download URL; place it there"):
        fetch(entry_for("packed.tar.gz", GOOD), tmp_path, tmp_path / "out" / "packed.tar.gz")


def test_download_of_file_gzipped_in_mirror_is_checked_then_compressed(tmp_path, server, tls):
    # The mirror copy was compressed by another gzip: its bytes cannot be reproduced here.
    compressed = gzip.compress(GOOD, compresslevel=1, mtime=12345)
    entry = entry_for("plain.tsv.gz", compressed, f"{server}/plain.tsv", upstream=GOOD)
    destination = tmp_path / "plain.tsv.gz"
    fetch(entry, None, destination, network=Network(ssl_context=tls))
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


class EndlessBody(QuietHandler):
    """Sends a body without a declared length that goes on until the client hangs up."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        block = b"x" * (64 << 10)
        for _ in range(256):  # 16 MiB at most, far beyond any cap the tests set
            try:
                self.wfile.write(block)
            except OSError:
                return


class DripBody(QuietHandler):
    """Sends a body one byte every 0.2 s."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.drip()

    def drip(self):
        for _ in range(100):
            try:
                self.wfile.write(b"x")
            except OSError:
                return
            time.sleep(0.2)


class DripHeaders(DripBody):
    """Sends the status line, then a header one byte every 0.2 s: stuck before any body."""

    def do_GET(self):
        self.wfile.write(b"HTTP/1.0 200 OK\r\nX-Drip: ")
        self.drip()


# The cap is the manifest size (64 times it for a file gzipped here) plus a 1 MiB margin.
@pytest.mark.parametrize(("gzipped_here", "cap"), [(False, 12 + 2**20), (True, 64 * 12 + 2**20)])
def test_endless_download_is_cut_at_the_size_cap(tmp_path, certificate, tls, gzipped_here, cap):
    upstream = GOOD if gzipped_here else None
    destination = tmp_path / "dl" / "endless.txt"
    began = time.monotonic()
    with https_server(EndlessBody, certificate) as url:
        entry = entry_for("endless.txt", GOOD, f"{url}/endless.txt", upstream=upstream)
        with pytest.raises(FetchError) as error:
            fetch(entry, None, destination, network=Network(ssl_context=tls))
    message = str(error.value)
    assert message.startswith(
        f"cannot fetch endless.txt: no mirror configured and the download from {url}/endless.txt "
        f"failed (sent more than {cap} bytes)"
    )
    assert "\n" not in message
    assert list(destination.parent.iterdir()) == []
    assert time.monotonic() - began < 5


@pytest.mark.parametrize("handler", [DripBody, DripHeaders])
def test_dripping_download_stops_at_the_deadline(tmp_path, certificate, tls, handler):
    destination = tmp_path / "dl" / "drip.txt"
    began = time.monotonic()
    with https_server(handler, certificate) as url:
        entry = entry_for("drip.txt", GOOD, f"{url}/drip.txt")
        with pytest.raises(FetchError, match=r"drip.txt .*took longer than 1 s"):
            fetch(
                entry,
                None,
                destination,
                network=Network(timeout=30, deadline=1, ssl_context=tls, attempts=1),
            )
    assert 1 <= time.monotonic() - began < 5
    assert list(destination.parent.iterdir()) == []


def test_download_needs_a_trusted_certificate(tmp_path, server):
    destination = tmp_path / "dl" / "good.txt"
    with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
        fetch(entry_for("good.txt", GOOD, f"{server}/good.txt"), None, destination)
    assert list(destination.parent.iterdir()) == []


@pytest.fixture
def listener():
    """A TCP socket on 127.0.0.1 that accepts nothing: whether anyone connected shows."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        sock.setblocking(False)
        yield sock


def assert_nobody_connected(sock: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        sock.accept()


def test_plain_http_url_is_refused_without_connecting(tmp_path, listener):
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/good.txt"
    with pytest.raises(FetchError) as error:
        fetch(entry_for("good.txt", GOOD, url), None, tmp_path / "good.txt")
    assert str(error.value).startswith(
        f"cannot fetch good.txt: no mirror configured and its download URL '{url}' is not https://"
    )
    assert_nobody_connected(listener)
    assert not (tmp_path / "good.txt").exists()


def test_long_url_is_quoted_short(tmp_path):
    url = "ftp://" + "a" * 10_000
    with pytest.raises(FetchError) as error:
        fetch(entry_for("good.txt", GOOD, url), None, tmp_path / "good.txt")
    assert len(str(error.value)) < 500


def test_redirect_to_plain_http_is_not_followed(tmp_path, certificate, tls, listener):
    target = f"http://127.0.0.1:{listener.getsockname()[1]}/good.txt"

    class Downgrade(QuietHandler):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()

    with https_server(Downgrade, certificate) as url:
        with pytest.raises(FetchError, match=f"redirected to '{target}', which is not https://"):
            fetch(entry_for("good.txt", GOOD, f"{url}/good.txt"), None, tmp_path / "good.txt",
                  network=Network(ssl_context=tls))  # fmt: skip
    assert_nobody_connected(listener)


def test_entry_path_outside_the_folders_is_refused(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (tmp_path / "secret").write_bytes(GOOD)
    with pytest.raises(FetchError, match=r"refusing to fetch '\.\./secret'"):
        fetch(entry_for("../secret", GOOD), mirror, tmp_path / "out" / "secret")
    assert not (tmp_path / "out").exists()


def manifest_with(tmp_path, bad_row: str) -> Path:
    """A manifest whose line 2 is a good row and line 3 ``bad_row``."""
    path = tmp_path / "manifest.tsv"
    write_manifest([entry_for("good.txt", GOOD, "https://example.invalid/good.txt")], path)
    path.write_text(path.read_text() + bad_row + "\n")
    return path


def row(**changes: str) -> str:
    """A manifest row for GOOD at x.txt, with ``changes`` to its path, sha256 or size."""
    values = {"path": "x.txt", "sha256": hashlib.sha256(GOOD).hexdigest(), "size": str(len(GOOD))}
    values |= changes
    fixed = ["o/r", "0" * 40, "data/x.txt", "", ""]
    return "\t".join([values["path"], values["sha256"], values["size"], *fixed])


@pytest.mark.parametrize(
    ("bad_row", "problem"),
    [
        (row(path="/etc/passwd"), "path '/etc/passwd' must be relative"),
        (row(path="../x"), "path '../x' must be relative"),
        (row(path="a/../../b"), "path 'a/../../b' must be relative"),
        (row(path="a//b"), "path 'a//b' must be relative"),
        (row(path=""), "path '' must be relative"),
        (row(path="a\0b"), "path 'a\\x00b' must be relative"),
        (row(path="a" * 200_000), "unreadable row: field larger than field limit"),
        ("x.txt\tonly\tthree", "3 columns, the header has 8"),
        (row() + "\textra", "9 columns, the header has 8"),
        (row(size="12 bytes"), "size must be a whole number of bytes, got '12 bytes'"),
        (row(size="-12"), "size must be a whole number of bytes, got '-12'"),
        (row(sha256="z" * 64), "bad sha256 'zzz"),
        (row(path="good.txt"), "duplicate path 'good.txt'"),
    ],
)
def test_bad_manifest_row_names_its_line(tmp_path, bad_row, problem):
    with pytest.raises(InputFormatError) as error:
        load_manifest(manifest_with(tmp_path, bad_row))
    assert str(error.value).startswith(f"{tmp_path / 'manifest.tsv'}:3: {problem}")


def test_bad_manifest_value_is_quoted_short(tmp_path):
    with pytest.raises(InputFormatError) as error:
        load_manifest(manifest_with(tmp_path, row(path="../" + "a" * 100_000)))
    assert len(str(error.value)) < 500 + len(str(tmp_path))


def test_manifest_that_is_not_utf8_is_refused(tmp_path):
    path = manifest_with(tmp_path, row(path="caf\xe9.txt"))
    path.write_bytes(path.read_bytes().replace("é".encode(), b"\xe9"))
    with pytest.raises(InputFormatError, match=r"manifest.tsv: not UTF-8 text$"):
        load_manifest(path)


# hybrid-ir manifest add -------------------------------------------------------------------------


def test_manifest_add_writes_path_sha256_and_size_and_replaces_a_stale_row(tmp_path, capsys):
    from hybrid_ir.cli.main import main

    existing = entry_for("cf/original/cfquery", GOOD)
    mirror = tmp_path / "mirror"
    (mirror / "arqmath" / "full").mkdir(parents=True)
    posts = mirror / "arqmath" / "full" / "Posts.V1.3.xml"
    posts.write_bytes(b"<posts>\n</posts>\n")
    manifest = tmp_path / "manifest.tsv"
    write_manifest([entry_for("cf/original/cfquery", GOOD)], manifest)

    assert (
        main(["manifest", "add", str(posts), "--mirror", str(mirror), "--manifest", str(manifest)])
        == 0
    )
    row = load_manifest(manifest)["arqmath/full/Posts.V1.3.xml"]
    assert (row.sha256, row.size) == (hashlib.sha256(posts.read_bytes()).hexdigest(), 17)
    assert load_manifest(manifest)[existing.path] == existing
    assert "written" in capsys.readouterr().out

    posts.write_bytes(b"<posts/>\n")
    assert (
        main(["manifest", "add", str(posts), "--mirror", str(mirror), "--manifest", str(manifest)])
        == 0
    )
    assert load_manifest(manifest)["arqmath/full/Posts.V1.3.xml"].size == 9
    assert (
        main(["manifest", "add", str(posts), "--mirror", str(mirror), "--manifest", str(manifest)])
        == 0
    )
    assert capsys.readouterr().out.rstrip().endswith("unchanged")


def test_manifest_add_records_a_symlink_alias_under_its_own_name(tmp_path, capsys):
    """The alias's path, not its target's (which the row named before)."""
    from hybrid_ir.cli.main import main

    mirror = tmp_path / "mirror"
    (mirror / "stored").mkdir(parents=True)
    target = mirror / "stored" / "posts-v1.3.xml"
    target.write_bytes(b"<posts/>\n")
    alias = mirror / "Posts.xml"
    alias.symlink_to(target)
    manifest = tmp_path / "manifest.tsv"
    write_manifest([entry_for("cf/original/cfquery", GOOD)], manifest)
    common = ["--mirror", str(mirror), "--manifest", str(manifest)]
    assert main(["manifest", "add", str(alias), *common]) == 0, capsys.readouterr().err
    rows = load_manifest(manifest)
    assert "Posts.xml" in rows and "stored/posts-v1.3.xml" not in rows
    assert rows["Posts.xml"].size == 9


def test_manifest_add_refuses_a_file_outside_the_mirror_and_a_missing_one(tmp_path, capsys):
    from hybrid_ir.cli.main import main

    (tmp_path / "mirror").mkdir()
    outside = tmp_path / "elsewhere.xml"
    outside.write_text("x")
    manifest = tmp_path / "manifest.tsv"
    write_manifest([entry_for("cf/original/cfquery", GOOD)], manifest)
    before = manifest.read_bytes()
    common = ["--mirror", str(tmp_path / "mirror"), "--manifest", str(manifest)]
    assert main(["manifest", "add", str(outside), *common]) == 1
    assert "not inside the mirror" in capsys.readouterr().err
    assert main(["manifest", "add", str(tmp_path / "mirror" / "nope.xml"), *common]) == 1
    assert "nope.xml: no such file" in capsys.readouterr().err
    assert manifest.read_bytes() == before
