"""A local stand-in for the model hub: the part of its HTTP API that huggingface_hub's
``model_info`` and ``hf_hub_download`` use, serving repositories the test writes.

- ``GET /api/models/<id>`` and ``GET /api/models/<id>/revision/<commit>``: the model's commit
  and file list (404 with ``X-Error-Code: RevisionNotFound`` for an unknown commit, and
  ``RepoNotFound`` for an unknown id);
- ``HEAD`` and ``GET /<id>/resolve/<commit>/<file>``: the file, with the commit, ETag and size
  headers the client checks.

Point the client at it with ``HF_ENDPOINT=<server.url>``; ``requests`` counts what was served.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class LocalHub:
    """Repositories ``{id: {commit: directory}}``; the last commit of an id is its main."""

    def __init__(self, repositories: dict[str, dict[str, Path]]):
        self.repositories = repositories
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub._answer(self, body=True)

            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LocalHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _files(self, directory: Path) -> list[str]:
        return sorted(
            p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()
        )

    def _answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        self.requests.append(f"{handler.command} {path}")
        if path.startswith("/api/models/"):
            model, _, commit = path.removeprefix("/api/models/").partition("/revision/")
            self._info(handler, model, commit or None)
        elif "/resolve/" in path:
            model, _, rest = path.lstrip("/").partition("/resolve/")
            commit, _, name = rest.partition("/")
            self._file(handler, model, commit, name, body)
        else:
            self._error(handler, 404, "EntryNotFound")

    def _error(self, handler: BaseHTTPRequestHandler, status: int, code: str) -> None:
        payload = json.dumps({"error": code}).encode()
        handler.send_response(status)
        handler.send_header("X-Error-Code", code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _info(self, handler: BaseHTTPRequestHandler, model: str, commit: str | None) -> None:
        commits = self.repositories.get(model)
        if commits is None:
            return self._error(handler, 404, "RepoNotFound")
        commit = commit or list(commits)[-1]
        if commit not in commits:
            return self._error(handler, 404, "RevisionNotFound")
        siblings = [{"rfilename": name} for name in self._files(commits[commit])]
        payload = json.dumps({"id": model, "modelId": model, "sha": commit, "siblings": siblings})
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload.encode())))
        handler.end_headers()
        handler.wfile.write(payload.encode())

    def _file(self, handler, model: str, commit: str, name: str, body: bool) -> None:
        directory = self.repositories.get(model, {}).get(commit)
        if directory is None:
            return self._error(handler, 404, "RevisionNotFound")
        file = directory / name
        if not file.is_file():
            return self._error(handler, 404, "EntryNotFound")
        content = file.read_bytes()
        handler.send_response(200)
        handler.send_header("X-Repo-Commit", commit)
        handler.send_header("ETag", f'"{hashlib.sha256(content).hexdigest()}"')
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        if body:
            handler.wfile.write(content)
