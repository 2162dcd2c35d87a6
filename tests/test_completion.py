"""Shell completion generated from the parser, run in a real bash; and ``hybrid-ir --help``
listing every subcommand on one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_ir.cli.completion import command_table, completion_script
from hybrid_ir.cli.main import build_parser

HYBRID_IR = Path(sys.executable).with_name("hybrid-ir")


def _complete(script: str, *words: str, shell: str = "bash") -> list[str]:
    """What the completion offers after ``hybrid-ir WORDS`` (the last word being typed)."""
    probe = (
        f"{script}\nCOMP_WORDS=(hybrid-ir {' '.join(repr(w) for w in words)})\n"
        "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_hybrid_ir\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run([shell, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.fixture(scope="module")
def bash_script() -> str:
    return subprocess.run(
        [str(HYBRID_IR), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout


def test_subcommands_options_and_choices_come_from_the_parser(bash_script):
    commands = command_table(build_parser())[""][0]
    assert _complete(bash_script, "") == commands
    assert _complete(bash_script, "com") == ["compare", "completion"]
    assert _complete(bash_script, "manifest", "") == ["add", "members", "from-sources"]
    assert _complete(bash_script, "compare", "--ho") == ["--holm"]
    assert _complete(bash_script, "compare", "--format", "") == ["md", "csv", "latex", "json"]
    assert _complete(bash_script, "fuse", "--duplicates", "f") == ["first"]
    assert _complete(bash_script, "completion", "") == ["bash", "zsh"]
    assert _complete(bash_script, "tar") == ["targets"]
    assert _complete(bash_script, "targets", "--format", "") == ["text", "json"]
    assert _complete(bash_script, "--ver") == ["--version"]


def test_file_names_where_no_word_is_known(bash_script, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.trec").write_text("")
    assert _complete(bash_script, "evaluate", "ru") == ["run.trec"]


def test_every_subcommand_is_in_the_table():
    table = command_table(build_parser())
    assert {"", "manifest", "manifest add", "hub pin", "fuse", "compare"} <= set(table)
    assert {"--method", "--depth", "-o", "--output"} <= set(table["fuse"][1])
    assert table["compare"][2]["--format"] == ["md", "csv", "latex", "json"]


def test_zsh_loads_the_bash_function_through_bashcompinit(bash_script):
    script = completion_script(build_parser(), "zsh")
    assert script.endswith(bash_script)
    assert "bashcompinit" in script.splitlines()[2]
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed here: its script is checked as text only")
    assert _complete(script, "com", shell="zsh") == ["compare", "completion"]


def test_help_lists_every_subcommand_on_one_line():
    help_text = subprocess.run(
        [str(HYBRID_IR), "--help"], capture_output=True, text=True, check=True,
        env=os.environ | {"COLUMNS": "80"},
    ).stdout  # fmt: skip
    lines = help_text.splitlines()
    for name in command_table(build_parser())[""][0]:
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        assert len(line.split()) > 1, f"{name}'s summary wraps onto the next line"
        assert len(line) <= 80
