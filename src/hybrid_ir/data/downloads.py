"""One file over HTTPS into a partial file that survives a failed attempt: bounded in size and
time, retried with backoff, and resumed where the last attempt stopped.

The partial file is never the real one: the caller verifies its checksum and only then renames
it into place. A later call with the same partial file continues it with an HTTP range request
(a server that ignores the range sends the whole file again, and the partial starts over).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import http.client
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from tqdm import tqdm

from hybrid_ir.errors import FetchError, quoted

_CHUNK = 1 << 20
MINIMUM_DEADLINE = 180.0
SLOWEST_ACCEPTED_RATE = 256 << 10  # bytes per second
ATTEMPTS = 4
BACKOFF_S = 2.0
_TRANSIENT_STATUS = {408, 425, 429, 500, 502, 503, 504}
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")

Progress = Callable[[int], None]
"""Told the number of bytes each chunk added (negative when a partial file starts over)."""


class DownloadFailed(FetchError):
    """A download that no retry can mend (HTTP 404, a body past its size limit), or that failed
    every attempt; ``reason`` is the last failure without the URL."""

    def __init__(self, url: str, reason: str):
        self.url = url
        self.reason = reason
        super().__init__(f"download from {url} failed ({reason})")


@contextlib.contextmanager
def byte_progress(description: str, total: int) -> Iterator[Progress]:
    """A :data:`Progress` that shows a byte bar (rate, time left) on standard error from the
    first byte on, safe to call from several download threads; nothing shows for a file that
    is copied, not downloaded."""
    lock = threading.Lock()
    bar: tqdm | None = None

    def advance(count: int) -> None:
        nonlocal bar
        with lock:
            if bar is None:
                bar = tqdm(
                    total=total, desc=description, unit="B", unit_scale=True, unit_divisor=1024
                )
            bar.update(count)

    try:
        yield advance
    finally:
        if bar is not None:
            bar.close()


def is_https(url: str) -> bool:
    return url.startswith("https://")


def default_deadline(limit: int) -> float:
    """Three minutes plus the time ``limit`` bytes take at 256 KiB/s."""
    return MINIMUM_DEADLINE + limit / SLOWEST_ACCEPTED_RATE


def download(
    url: str,
    partial: Path,
    limit: int,
    timeout: float = 60,
    deadline: float | None = None,
    ssl_context: ssl.SSLContext | None = None,
    progress: Progress | None = None,
    attempts: int = ATTEMPTS,
    backoff_s: float = BACKOFF_S,
) -> None:
    """Bring the body of ``url`` into ``partial``, continuing what an earlier call left there.

    ``limit`` bounds the body in bytes, ``timeout`` each wait on the network and ``deadline``
    one attempt (default: :func:`default_deadline`). A connection that fails, is cut, times out
    or answers 5xx/429 is tried again up to ``attempts`` times in all, after ``backoff_s``,
    then twice that, and so on; each attempt resumes the partial file. Only https:// URLs are
    downloaded, and redirects are followed only to https:// URLs.
    """
    if not is_https(url):
        raise DownloadFailed(url, "not https://, the only kind downloaded")
    partial.parent.mkdir(parents=True, exist_ok=True)
    deadline = default_deadline(limit) if deadline is None else deadline
    with open(partial, "ab") as held:
        # Two processes fetching the same file (a job and `hybrid-ir data --download`) take
        # turns; the second finds the first one's complete file and only verifies it.
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            for attempt in range(attempts):
                try:
                    _attempt(url, partial, limit, timeout, deadline, ssl_context, progress)
                    return
                except _Transient as error:
                    if attempt + 1 == attempts:
                        kept = (
                            "; the partial file is kept to resume" if partial.stat().st_size else ""
                        )
                        raise DownloadFailed(url, f"{error}; {attempts} attempt(s){kept}") from None
                    time.sleep(backoff_s * 2**attempt)
        except DownloadFailed:
            if not partial.stat().st_size:
                partial.unlink()
            raise


class _Transient(Exception):
    """A failure that another attempt may not meet."""


def _attempt(
    url: str,
    partial: Path,
    limit: int,
    timeout: float,
    deadline: float,
    ssl_context: ssl.SSLContext | None,
    progress: Progress | None,
) -> None:
    clock = _Deadline(deadline)
    opener = urllib.request.build_opener(
        _HTTPSOnlyRedirects, _DeadlineHTTPSHandler(clock, ssl_context)
    )
    offset = partial.stat().st_size
    request = urllib.request.Request(url)
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    with clock:
        try:
            with opener.open(request, timeout=timeout) as response:
                if not (offset and _continues(response, offset)):
                    _start_over(partial, offset, progress)
                    offset = 0
                _append(response, partial, offset, limit, url, progress)
        except urllib.error.HTTPError as error:
            if error.code == 416 and offset:
                return  # the partial file is whole already: its checksum says whether it is right
            if clock.passed or error.code in _TRANSIENT_STATUS:
                raise _Transient(f"HTTP {error.code}") from None
            raise DownloadFailed(url, f"HTTP {error.code}") from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, str) and "not https://" in error.reason:
                raise DownloadFailed(url, error.reason) from None
            if isinstance(error.reason, ssl.SSLCertVerificationError):
                raise DownloadFailed(url, str(error.reason)) from None  # the same next time
            raise _Transient(_reason(error, clock, deadline)) from None
        except (http.client.HTTPException, OSError) as error:
            raise _Transient(_reason(error, clock, deadline)) from None
    # Cut at the deadline, a body without a declared length simply ends early.
    if clock.passed:
        raise _Transient(f"took longer than {deadline:g} s")


def _reason(error: BaseException, clock: _Deadline, deadline: float) -> str:
    if clock.passed:
        return f"took longer than {deadline:g} s"
    reason = getattr(error, "reason", None) or error
    return str(reason) or type(error).__name__


def _continues(response, offset: int) -> bool:
    """Whether ``response`` is the rest of the file from ``offset`` (206 with that range)."""
    if response.status != 206:
        return False
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    return match is not None and int(match.group(1)) == offset


def _start_over(partial: Path, offset: int, progress: Progress | None) -> None:
    with open(partial, "r+b") as out:
        out.truncate(0)
    if progress and offset:
        progress(-offset)


def _append(
    response, partial: Path, received: int, limit: int, url: str, progress: Progress | None
) -> None:
    with open(partial, "ab") as out:
        # read1 returns what one read of the socket brings, so a server that drips bytes
        # cannot keep a read waiting to fill a whole chunk.
        while chunk := response.read1(min(_CHUNK, limit + 1 - received)):
            received += len(chunk)
            if received > limit:
                out.truncate(0)
                raise DownloadFailed(url, f"sent more than {limit} bytes")
            out.write(chunk)
            out.flush()
            if progress:
                progress(len(chunk))
    declared = response.headers.get("Content-Length")
    if response.status == 200 and declared and declared.isdigit() and received < int(declared):
        raise _Transient(f"the connection closed after {received} of {declared} bytes")
    if response.status == 206:
        total = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if total and total.group(3).isdigit() and received < int(total.group(3)):
            raise _Transient(f"the connection closed after {received} of {total.group(3)} bytes")


class _Deadline:
    """Shuts a download's sockets once ``seconds`` have passed, wherever the download waits.

    The socket timeout bounds each wait only, so a server that sends a byte before every
    timeout could hold the TLS handshake, the headers or the body for ever; shutting the socket
    down from a timer thread ends any read blocked on it.
    """

    def __init__(self, seconds: float):
        self.passed = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        # An absurd manifest size gives a deadline no timer can wait for (OverflowError).
        self._timer = threading.Timer(min(seconds, threading.TIMEOUT_MAX), self._cut)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()
        with self._lock:
            for duplicate in self._sockets:
                duplicate.close()

    def create_connection(self, *args, **kwargs) -> socket.socket:
        connection = socket.create_connection(*args, **kwargs)
        with self._lock:
            # Wrapping for TLS takes the descriptor away from ``connection``; a duplicate
            # descriptor still reaches the socket to shut it down.
            self._sockets.append(connection.dup())
            if self.passed:
                connection.shutdown(socket.SHUT_RDWR)
        return connection

    def _cut(self) -> None:
        with self._lock:
            self.passed = True
            for duplicate in self._sockets:
                with contextlib.suppress(OSError):
                    duplicate.shutdown(socket.SHUT_RDWR)


class _DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        # http.client opens every socket of a connection, a proxy tunnel's too, through this.
        self._create_connection = deadline.create_connection


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, ssl_context: ssl.SSLContext | None):
        super().__init__()
        self._deadline = deadline
        self._ssl_context = ssl_context

    def https_open(self, request):
        connection = functools.partial(_DeadlineHTTPSConnection, deadline=self._deadline)
        return self.do_open(connection, request, context=self._ssl_context)


class _HTTPSOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to https:// URLs only, so that no redirect downgrades a download."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not is_https(newurl):
            fp.close()
            raise urllib.error.URLError(f"redirected to {quoted(newurl)}, which is not https://")
        return super().redirect_request(req, fp, code, msg, headers, newurl)
