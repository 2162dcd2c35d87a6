"""A local HTTPS server for download tests: a self-signed certificate, a quiet threaded server,
and a handler serving files from memory as GitHub's raw host lays them out, with range
requests, and faults asked for by path (an error status, a connection cut mid-file, wrong
bytes, no answer)."""

from __future__ import annotations

import contextlib
import http.server
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key): self-signed for 127.0.0.1 and localhost, made by the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that hang up or reject the certificate are what these tests make.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def https_server(handler: type[http.server.BaseHTTPRequestHandler], certificate) -> Iterator[str]:
    """Serve ``handler`` over TLS on 127.0.0.1 from a thread; yield the base URL."""
    httpd = QuietServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    # Handshakes happen in the request threads, so a stalled client cannot block the server.
    httpd.socket = context.wrap_socket(
        httpd.socket, server_side=True, do_handshake_on_connect=False
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


_RANGE = re.compile(r"bytes=(\d+)-")


class Upstream:
    """What the server serves (URL path -> bytes, or a function giving them), the faults it
    plays (URL path -> one of ``status:<code>``, ``cut:<bytes>``, ``hang``), whether it honours
    range requests, and every request it got: (path, Range header or None)."""

    def __init__(self, files: Mapping[str, bytes | Callable[[], bytes]], ranges: bool = True):
        self.files = dict(files)
        self.faults: dict[str, str] = {}
        self.ranges = ranges
        self.requests: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        upstream = self

        class Files(QuietHandler):
            def do_GET(self):
                upstream.serve(self)

        return Files

    def serve(self, request: http.server.BaseHTTPRequestHandler) -> None:
        path = request.path
        with self._lock:
            self.requests.append((path, request.headers.get("Range")))
            fault = self.faults.get(path, "")
            if fault.startswith("cut:"):
                del self.faults[path]  # cut once: the next attempt gets the rest
        if fault.startswith("status:"):
            request.send_error(int(fault.split(":")[1]))
            return
        if fault == "hang":
            time.sleep(30)
            return
        content = self.files.get(path)
        if content is None:
            request.send_error(404)
            return
        body = content() if callable(content) else content
        start = 0
        match = _RANGE.fullmatch(request.headers.get("Range") or "")
        if self.ranges and match:
            start = int(match.group(1))
            if start >= len(body):
                request.send_response(416)
                request.send_header("Content-Range", f"bytes */{len(body)}")
                request.end_headers()
                return
            request.send_response(206)
            request.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            request.send_response(200)
        request.send_header("Content-Length", str(len(body) - start))
        request.end_headers()
        if fault.startswith("cut:"):
            request.wfile.write(body[start : start + int(fault.split(":")[1])])
            request.wfile.flush()
            request.close_connection = True
            return
        request.wfile.write(body[start:])
