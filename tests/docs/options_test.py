#!/usr/bin/env python3
"""Help and docs agree: every option a command's --help prints is named in README.md or docs/, and every
option the docs name as ours is one some --help prints.

    options_test.py RELAY HELPER ROOT

The options the docs name are those in backticked spans and code blocks that begin with `--` or mention
maka-eval-relay / maka-eval-helper; options of other programs the docs quote (docker, harbor, cmake, the
project's scripts) are listed below with their program, and are not ours to print."""
import re
import subprocess
import sys
from pathlib import Path

from verdict import verdict

OTHER_PROGRAMS = {
    "docker": {"--cap-add", "--cap-drop", "--privileged", "--init", "--read-only", "--network", "--tmpfs",
               "--tlsverify", "--security-opt", "--user", "--rm", "--name", "--bridge", "--data-root",
               "--unix-socket"},
    "podman": {"--root", "--runroot", "--tmpdir"},
    "harbor and pier": {"--agent", "--agent-import-path", "--agent-kwarg", "--dataset", "--trial-timeout-sec"},
    "cmake and ctest": {"--preset", "--build", "--install", "--prefix", "--target", "--output-on-failure"},
    "scripts/ and bench/": {"--check", "--ci-container", "--quick", "--only", "--against"},
    "valgrind": {"--tool", "--separate-threads", "--callgrind-out-file"},
}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def help_options(relay, helper):
    texts = [subprocess.run([relay, "--help"], capture_output=True, text=True).stdout]
    for command in ("connect", "run", "locate", "keygen", "verify"):
        texts.append(subprocess.run([relay, command, "--help"], capture_output=True, text=True).stdout)
    texts.append(subprocess.run([helper, "--help"], capture_output=True, text=True).stdout)
    found = set()
    for text in texts:
        if not text.strip():
            sys.exit(f"FAILED: a --help printed nothing")
        found |= set(OPTION.findall(text))
    return found


def doc_options(root):
    """Every option named in the docs, with where, and the subset the docs attribute to us."""
    named, ours = {}, {}
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = path.read_text()
        spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
        blocks = [line for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
                  for line in block.splitlines()]
        for piece in spans + blocks:
            for option in OPTION.findall(piece):
                named.setdefault(option, path.name)
                if piece.lstrip().startswith("--") or "maka-eval-" in piece:
                    ours.setdefault(option, path.name)
        for option in OPTION.findall(text):
            named.setdefault(option, path.name)
    return named, ours


def main():
    relay, helper, root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    printed = help_options(relay, helper)
    named, ours = doc_options(root)
    others = set().union(*OTHER_PROGRAMS.values())
    failures = []
    for option in sorted(printed - set(named)):
        failures.append(f"{option}: printed by --help, named in no doc")
    for option in sorted(set(ours) - printed - others):
        failures.append(f"{option}: named as ours in {ours[option]}, printed by no --help")
    if len(printed) < 40:
        failures.append(f"only {len(printed)} options in the help texts: the parse is wrong")
    return verdict(failures, f"{len(printed)} options, each in the docs; {len(set(ours) - others)} named as "
                             "ours, each in a --help")


if __name__ == "__main__":
    sys.exit(main())
