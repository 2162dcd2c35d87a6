"""The documentation's commands, run: every ``console`` block of a page under docs/ is executed
and what it prints is compared with what the page shows; and every relative link of the
documentation and the README resolves, anchors included.

How a page marks its runnable commands (docs/index.md says so for writers):

- the page names, in an HTML comment, the folder its commands run in:
  ``<!-- docs-test: toy-fresh -->`` (a toy checkout as ``python tests/toy_workflow.py DIR``
  makes it: the toy collection's mirror, manifest and ``config.yaml``, with links to this
  repository's Snakefile, workflow, profiles, src and virtual environments; nothing run yet),
  ``<!-- docs-test: toy -->`` (a copy of that checkout after the ``toy-fresh`` pages ran and the
  whole toy workflow finished), or ``<!-- docs-test: repo -->`` (a checkout of this repository
  without results/, its mirror ``$HYBRID_IR_MIRROR`` or ../shared/data; skipped without one);
- each ``console`` block holds ``$ command`` lines, each followed by what it prints (standard
  output and standard error together, as a terminal shows them). A line ending in ``\\``
  continues the command, and so does a here-document up to its delimiter. In the expected
  output ``…`` stands for any text within a line, and a line holding only ``…`` for any number
  of lines (none included);
- every command must exit with status 0: a page that shows a failing command writes
  ``command; echo "exit status $?"``;
- the commands of a page run one after the other in one folder, each in its own bash, with
  the working directory and the environment the previous one left (``cd``, ``export``).

Blocks in other languages (``bash``, ``text``, ``yaml``) are not run: commands that need a
cluster, a GPU, the network or hours go there, and the page says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from toy_workflow import REPO, make_toy_checkout, snakemake_environment

DOCS = REPO / "docs"
MARKER = re.compile(r"^<!-- docs-test: (toy-fresh|toy|repo) -->$", re.M)
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COMMAND_TIMEOUT = 300
MIRROR = Path(os.environ.get("HYBRID_IR_MIRROR") or REPO.parent / "shared" / "data")
REPO_SKIP = {"results", ".snakemake", ".git"}
"""Not linked into a repo checkout: its commands start from no results and record nothing here."""

JOURNEYS = {
    "guides/reproduce-a-table.md": ("snakemake --cores", "results/tables/"),
    "guides/evaluate-your-run.md": ("hybrid-ir evaluate", "hybrid-ir compare"),
    "guides/fuse-and-crossvalidate.md": ("hybrid-ir fuse --method rrf", "hybrid-ir crossval"),
    "guides/add-a-topic-set.md": ("qrels_", "snakemake --cores"),
    "explanations/claims.md": ("hybrid-ir claims", "snakemake --cores"),
    "guides/slurm.md": ("--profile profiles/slurm", "hybrid-ir data"),
    "getting-started.md": ("hybrid-ir --help", "hybrid-ir data"),
}
"""The journeys whose commands must run here, and text their commands must include."""


@dataclass
class Step:
    command: str
    expected: str
    line: int


@dataclass
class Outcome:
    step: Step
    output: str
    status: int
    seconds: float


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def page_name(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def workdir_kind(text: str) -> str | None:
    kinds = MARKER.findall(text)
    assert len(kinds) <= 1, "a page names one docs-test folder"
    return kinds[0] if kinds else None


def steps(text: str) -> list[Step]:
    """The ``$ command`` lines of the page's console blocks with the output shown after each."""
    found = []
    for fence in FENCE.finditer(text):
        if fence["info"].strip().split(" ")[0] != "console":
            continue
        indent = len(fence["indent"])
        lines = [line[indent:] for line in fence["body"].splitlines()]
        first_line = text.count("\n", 0, fence.start()) + 2
        index = 0
        assert lines and lines[0].startswith("$ "), f"line {first_line}: starts without '$ '"
        while index < len(lines):
            command_lines = [lines[index][2:]]
            line = first_line + index
            index += 1
            while command_lines[-1].endswith("\\") and index < len(lines):
                command_lines.append(lines[index])
                index += 1
            heredoc = HEREDOC.search("\n".join(command_lines))
            if heredoc:
                while index < len(lines) and lines[index - 1] != heredoc[2]:
                    command_lines.append(lines[index])
                    index += 1
            expected = []
            while index < len(lines) and not lines[index].startswith("$ "):
                expected.append(lines[index])
                index += 1
            found.append(Step("\n".join(command_lines), "\n".join(expected), line))
    return found


def pattern(expected: str) -> re.Pattern:
    """``…`` alone on a line: any lines (or none); ``…`` in a line: any text within it."""
    parts = []
    for line in normalized(expected).split("\n") if expected.strip() else []:
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("…")) + r"\n")
    return re.compile("".join(parts))


def normalized(output: str) -> str:
    lines = [line.rstrip() for line in ANSI.sub("", output).replace("\r", "").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def matches(expected: str, output: str) -> bool:
    text = normalized(output)
    return bool(pattern(expected).fullmatch(text + "\n" if text else ""))


def run_steps(page: Path, folder: Path, env: dict[str, str]) -> list[Outcome]:
    """Run a page's commands in ``folder``, carrying the working directory and environment."""
    outcomes = []
    state = folder.resolve() / ".docs-test-state"
    cwd, environment = folder.resolve(), {**env, "PYTHONUNBUFFERED": "1", "COLUMNS": "80"}
    for step in steps(page.read_text(encoding="utf-8")):
        script = (
            f"{step.command}\n__status=$?\n"
            f"{{ printf '%s\\0' \"$PWD\"; env -0; }} > '{state}'\nexit $__status\n"
        )
        start = time.perf_counter()
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=COMMAND_TIMEOUT,
        )
        outcomes.append(Outcome(step, done.stdout, done.returncode, time.perf_counter() - start))
        if state.exists():
            cwd_text, *pairs = state.read_text(errors="replace").split("\0")
            state.unlink()
            cwd = Path(cwd_text)
            environment = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
            for name in ("_", "SHLVL", "PWD", "OLDPWD"):
                environment.pop(name, None)
    return outcomes


def check(page: Path, outcomes: list[Outcome]) -> None:
    failures = []
    for outcome in outcomes:
        step = outcome.step
        if outcome.status != 0 or not matches(step.expected, outcome.output):
            failures.append(
                f"{page_name(page)}:{step.line}: $ {step.command}\n"
                f"exit status {outcome.status} after {outcome.seconds:.1f} s; the page shows:\n"
                f"{step.expected}\n--- it printed:\n{normalized(outcome.output)[-6000:]}"
            )
    assert not failures, "\n\n".join(failures)


def pages_in(kind: str) -> list[Path]:
    return [page for page in pages() if workdir_kind(page.read_text(encoding="utf-8")) == kind]


def toy_environment() -> dict[str, str]:
    # The toy configuration names its own mirror (snakemake_environment drops the caller's).
    return snakemake_environment()


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> tuple[Path, dict[Path, list[Outcome]]]:
    """The toy checkout after the ``toy-fresh`` pages ran in it, with the whole toy workflow
    finished; and those pages' outcomes."""
    root = make_toy_checkout(tmp_path_factory.mktemp("docs") / "toy")
    outcomes = {page: run_steps(page, root, toy_environment()) for page in pages_in("toy-fresh")}
    finished = subprocess.run(
        [".venv/bin/snakemake", "--cores", "2"],
        cwd=root,
        env=toy_environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    return root, outcomes


def repo_checkout(folder: Path) -> Path:
    folder.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in REPO_SKIP:
            (folder / entry.name).symlink_to(entry)
    return folder


def _param(page: Path):
    return pytest.param(page, id=page_name(page))


@pytest.mark.lucene
@pytest.mark.parametrize("page", [_param(page) for page in pages_in("toy-fresh")])
def test_a_guide_on_a_fresh_toy_checkout_prints_what_it_shows(toy, page):
    check(page, toy[1][page])


@pytest.mark.lucene
@pytest.mark.parametrize("page", [_param(page) for page in pages_in("toy")])
def test_a_guide_on_the_finished_toy_prints_what_it_shows(toy, page, tmp_path):
    folder = tmp_path / "toy"
    shutil.copytree(toy[0], folder, symlinks=True)
    check(page, run_steps(page, folder, toy_environment()))


@pytest.mark.parametrize("page", [_param(page) for page in pages_in("repo")])
def test_a_guide_in_the_repository_prints_what_it_shows(page, tmp_path):
    if not MIRROR.is_dir():
        pytest.skip(f"no data mirror at {MIRROR} (set HYBRID_IR_MIRROR)")
    folder = repo_checkout(tmp_path / "repo")
    environment = {**os.environ, "HYBRID_IR_MIRROR": str(MIRROR)}
    check(page, run_steps(page, folder, environment))


def test_every_console_block_is_on_a_tested_page_and_every_journey_has_commands():
    untested = [
        page_name(page)
        for page in pages()
        if steps(text := page.read_text(encoding="utf-8")) and workdir_kind(text) is None
    ]
    assert not untested, f"console blocks on pages without a docs-test folder: {untested}"
    for name, needed in JOURNEYS.items():
        text = (DOCS / name).read_text(encoding="utf-8")
        assert workdir_kind(text), f"{name}: no docs-test folder"
        commands = "\n".join(step.command for step in steps(text))
        missing = [piece for piece in needed if piece not in commands]
        assert not missing, f"{name}: no runnable command with {missing}"


def test_the_matcher_reads_ellipses_and_continuations():
    text = (
        "```console\n$ printf 'a\\nb\\nc\\n' \\\n  | cat\na\n…\n$ cat <<'EOF'\nx y\nEOF\nx …\n```\n"
    )
    first, second = steps(text)
    assert first.command == "printf 'a\\nb\\nc\\n' \\\n  | cat" and first.expected == "a\n…"
    assert second.command == "cat <<'EOF'\nx y\nEOF" and second.expected == "x …"
    assert matches(first.expected, "a\nb\nc\n") and matches(first.expected, "a\n")
    assert not matches(first.expected, "b\na\n")
    assert matches(second.expected, "x y\n") and not matches(second.expected, "y x\n")
    assert matches("", "") and not matches("", "something\n")


# Links --------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """Python-Markdown's toc slug (MkDocs' anchors) of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    # HTML tags count for nothing, except inside code spans, where they are text.
    parts = text.split("`")
    text = "".join(part if i % 2 else re.sub(r"<[^>]+>", "", part) for i, part in enumerate(parts))
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def generated_pages() -> set[Path]:
    """The pages the site generates when it is built (docs/hooks/reference.py), not in docs/."""
    try:
        from hybrid_ir.cli.docs_reference import reference_pages

        names = set(reference_pages(REPO))
    except (ImportError, OSError):
        names = {"changelog.md", *(f"reference/{n}.md" for n in ("cli", "configuration"))}
        names |= {"reference/measures.md", "reference/outputs.md"}
    return {(DOCS / name).resolve() for name in names}


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in HEADING.findall(text):
        base, number = slug(heading), 1
        name = base
        while name in found:  # a repeated heading gets _1, _2, ... as in toc
            name, number = f"{base}_{number}", number + 1
        found.add(name)
    return found


@pytest.mark.parametrize(
    "page", [_param(page) for page in pages()] + [pytest.param(REPO / "README.md", id="README")]
)
def test_relative_links_resolve_with_their_anchors(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    generated = generated_pages()
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if page.is_relative_to(DOCS) and not path.is_relative_to(DOCS):
            broken.append(f"{target}: outside docs/, which the site cannot link to")
        elif path in generated:
            continue  # its anchors are the site build's to check (tests/test_docs_site.py)
        elif not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page.name}: " + "; ".join(broken)
