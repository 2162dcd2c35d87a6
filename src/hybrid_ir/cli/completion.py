"""Shell completion for ``hybrid-ir``, generated from its argument parser, so that it follows
every subcommand, option and choice the parser has: subcommands where one is expected, options
after a ``-``, an option's choices after it (``--format`` offers ``md csv latex json``), and
file names elsewhere. ``hybrid-ir completion bash`` prints the script for bash; ``zsh`` the same
script loaded through zsh's ``bashcompinit``."""

from __future__ import annotations

import argparse
import shlex

SHELLS = ("bash", "zsh")


def command_table(
    parser: argparse.ArgumentParser, path: str = ""
) -> dict[str, tuple[list[str], list[str], dict[str, list[str]]]]:
    """Command path (``""``, ``"manifest"``, ``"manifest add"``) -> the words where a
    positional argument is expected (its subcommands, or a positional's choices), its options,
    and each option's choices."""
    subcommands: list[str] = []
    options: list[str] = []
    choices: dict[str, list[str]] = {}
    table: dict[str, tuple[list[str], list[str], dict[str, list[str]]]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                subcommands.append(name)
                table |= command_table(subparser, f"{path} {name}".strip())
            continue
        options += action.option_strings
        if not action.option_strings and action.choices:
            subcommands += [str(choice) for choice in action.choices]
        if action.option_strings and action.choices:
            for option in action.option_strings:
                choices[option] = [str(choice) for choice in action.choices]
    return {path: (subcommands, options, choices)} | table


def _case(name: str, entries: dict[str, list[str]]) -> list[str]:
    """A bash function printing the words of its argument's key (nothing for another key)."""
    lines = [f"{name}() {{", '  case "$1" in']
    for key, words in entries.items():
        if words:
            pattern = shlex.quote(key) if key else '""'
            lines.append(f"    {pattern}) echo {shlex.quote(' '.join(words))};;")
    return [*lines, "  esac", "}"]


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion function of ``parser``'s program and its ``complete`` line."""
    table = command_table(parser)
    program = parser.prog
    function = "_" + program.replace("-", "_")
    commands = {path: subcommands for path, (subcommands, _, _) in table.items()}
    options = {path: flags for path, (_, flags, _) in table.items()}
    choices = {
        f"{path} {option}".strip(): values
        for path, (_, _, by_option) in table.items()
        for option, values in by_option.items()
    }
    lines = [
        f"# {program} completion for bash, generated from its parser by `{program} completion`.",
        *_case(f"{function}_commands", commands),
        *_case(f"{function}_options", options),
        *_case(f"{function}_choices", choices),
        f"{function}() {{",
        '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path="" word i',
        "  for ((i = 1; i < COMP_CWORD; i++)); do",
        "    word=${COMP_WORDS[i]}",
        f'    if [[ $word != -* && " $({function}_commands "$path") " == *" $word "* ]]; then',
        "      path=${path:+$path }$word",
        "    fi",
        "  done",
        "  COMPREPLY=()",
        "  local choices",
        f'  choices=$({function}_choices "${{path:+$path }}$prev")',
        "  if [[ -n $choices ]]; then",
        '    COMPREPLY=($(compgen -W "$choices" -- "$cur"))',
        "  elif [[ $cur == -* ]]; then",
        f'    COMPREPLY=($(compgen -W "$({function}_options "$path")" -- "$cur"))',
        f'  elif [[ -n $({function}_commands "$path") ]]; then',
        f'    COMPREPLY=($(compgen -W "$({function}_commands "$path")" -- "$cur"))',
        "  else",
        '    COMPREPLY=($(compgen -f -- "$cur"))',
        "  fi",
        "}",
        f"complete -o filenames -F {function} {program}",
    ]
    return "\n".join(lines) + "\n"


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (:data:`SHELLS`)."""
    script = bash_script(parser)
    if shell == "bash":
        return script
    return (
        f"# {parser.prog} completion for zsh: the bash script through bashcompinit.\n"
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + script
    )
