#!/usr/bin/env python3
"""Every command the docs show runs as written after an install: README.md's and docs/*.md's fenced commands,
after one install route (the build tree, the Debian package, the wheel), checked against what the docs show.

    commands_test.py ROUTE ROOT BUILD DIST      ROUTE: build-tree | deb | wheel
    commands_test.py package ROOT BUILD DIST    the packages into DIST (scripts/package.sh), the routes' fixture

What is run: in a fenced block, each `$ ` line (with the lines it continues by a trailing backslash) is a
command on the host, run in the block's order in one shell per block; each `/ # ` line is a command in the
container (`docker exec`), run after every host command (a trial has put the helper there by then). A block in
which a person types (`run -t`, `-it`) is left to tests/e2e/terminal_test.sh, which types it through tmux. A host command runs
on a pseudo-terminal (script(1)), as the reader's.
What the docs show after a command is checked: `relay exit  N` is the exit status wanted (else 0, or non-zero
when the first line shown is the relay's error line); each line shown, up to a `…` or `←`, must begin a line
of the output by its first word (so a label, an exact one-word answer, a JSON prefix).

The placeholders a reader fills in are filled in by PLACEHOLDERS below, each with why. The install routes:
the build tree's relay on PATH through a symlink (as readme_test.sh); the .deb unpacked with `dpkg -x` (its
layout, /usr/bin and /usr/lib/maka-eval, without installing it into the machine that runs the tests); the
wheel `pip install`ed into a fresh venv, whose bin/ then holds maka-eval-relay. DIST holds the packages
(scripts/package.sh --from BUILD --dist DIST, the ctest fixture before this test).
Exit 0 passed, 1 failed (saying which command and why), 77 skipped (saying why).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from verdict import verdict

# What the reader puts where the docs leave a placeholder, and why it is not the docs' own text.
AGENT = """#!/bin/sh
# The reader's agent (`./agent`): works, prints a result frame, and with AGENT_HANGS set runs on.
echo working
"$MAKA_EVAL_HELPER" frame '{"status":"completed"}'
[ -z "$AGENT_HANGS" ] || exec sleep 600
"""
PLACEHOLDERS = [
    # a value the reader has (a key, a token): the docs write an ellipsis
    # (32 hex digits, so that it serves as a result token too)
    (re.compile(r"=…(?=\s|$)"), "=5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e"),
    # the reader's container: a fresh BusyBox one of this test's
    (re.compile(r"docker:task-1\b"), "docker:{container}"),
    # --timeout 30s: the same limit, shorter, on an agent that runs on past it
    (re.compile(r"--timeout 30s "), "--timeout 2s -e AGENT_HANGS=1 "),
    # where the reader keeps the signing key: this test's own folder (keygen never overwrites a key, and the
    # machine's /etc is not the test's to write)
    (re.compile(r"/etc/maka-eval\b"), "{work}/etc/maka-eval"),
]
INTERACTIVE = re.compile(r"maka-eval-relay run [^|;]*?(?<!\S)-(?:it|ti|t)\b")
TIMEOUT = 120


def blocks(root):
    """(doc, line number, host commands, container commands, shown output per command) for each fenced block."""
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for doc in docs:
        inside = False
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            if line.startswith("```"):
                inside = not inside
                if inside:
                    block = {"doc": doc.name, "line": number, "commands": [], "interactive": False}
                elif block["commands"]:
                    yield block
                continuing = False
                continue
            if not inside:
                continue
            if continuing:
                block["commands"][-1]["text"] += "\n" + line
                continuing = continues(block["commands"][-1]["text"])
            elif line.startswith("$ ") or line.startswith("/ # "):
                kind = "host" if line.startswith("$ ") else "container"
                text = line[2:] if kind == "host" else line[4:]
                if kind == "host" and INTERACTIVE.search(text):
                    block["interactive"] = True
                block["commands"].append({"kind": kind, "text": text, "shown": [], "line": number})
                continuing = continues(text)
            elif block["commands"] and not line.startswith("#"):
                block["commands"][-1]["shown"].append(line)


def continues(text):
    """Whether a command goes on to the next line: a trailing backslash, or a quote still open."""
    if text.endswith("\\"):
        return True
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return True
    return False


def wanted_status(shown):
    for line in shown:
        m = re.match(r"relay exit\s+(\d+)", line)
        if m:
            return int(m.group(1))
    if shown and shown[0].startswith("maka-eval-relay: "):
        return "non-zero"
    return 0


def expected_starts(shown):
    for line in shown:
        text = re.split(r"…|←", line)[0].strip()
        if text and not text.startswith("^"):
            yield text.split()[0]


def check(command, status, output):
    """What is wrong with a command's result, or None."""
    want = wanted_status(command["shown"])
    if (want == "non-zero" and status == 0) or (want != "non-zero" and status != want):
        return f"exited {status}, the docs show {want}"
    lines = [line.strip() for line in output.splitlines()]
    for start in expected_starts(command["shown"]):
        if not any(line.startswith(start) for line in lines):
            return f"the docs show a line beginning {start!r}, the output has none"
    return None


def must(argv, **kwargs):
    """Runs a step of the test's own set-up; one that fails ends the test naming it and what it printed."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAILED: set-up step `{shlex.join(argv)}` exited {result.returncode}: {result.stderr.strip()}")
    return result


def install(route, work, build, dist):
    """The folder holding maka-eval-relay after this route's install, or a reason to skip."""
    bin_dir = work / "bin"
    if route == "build-tree":
        bin_dir.mkdir()
        (bin_dir / "maka-eval-relay").symlink_to((build / "relay" / "maka-eval-relay").resolve())
        return bin_dir
    if route == "deb":
        debs = list(dist.glob("maka-eval-relay_*.deb"))
        if len(debs) != 1:
            sys.exit(f"FAILED: {dist} holds {len(debs)} .deb files, not one")
        must(["dpkg", "-x", str(debs[0]), str(work / "root")])
        return work / "root" / "usr" / "bin"
    wheels = list(dist.glob("maka_eval_relay-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"FAILED: {dist} holds {len(wheels)} wheels, not one")
    must(["/usr/bin/python3", "-m", "venv", str(work / "venv")])
    must([str(work / "venv" / "bin" / "pip"), "install", "--quiet", "--no-index", str(wheels[0])])
    return work / "venv" / "bin"


def fill(text, container, work):
    for pattern, value in PLACEHOLDERS:
        text = pattern.sub(value.format(container=container, work=work), text)
    return text


def main():
    route, root, build, dist = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    helper = build / "in_container" / "maka-eval-helper"
    linked = subprocess.run(["file", "-L", str(helper)], capture_output=True, text=True).stdout
    if "statically linked" not in linked:
        print(f"skipped: this build's helper is not static (a sanitizer build): the packages carry the release one")
        return 77
    if route == "package":
        for module in ("build", "setuptools", "wheel", "venv"):
            if subprocess.run(["/usr/bin/python3", "-I", "-c", f"import {module}"], capture_output=True).returncode:
                print(f"skipped: Debian's python3 has no `{module}` here to build the wheel "
                      "(scripts/test.sh installs python3-build, -setuptools, -wheel and -venv)")
                return 77
        status = subprocess.run(["bash", str(root / "scripts" / "package.sh"), "--from", str(build), "--dist",
                                 str(dist)]).returncode
        return verdict([f"scripts/package.sh exited {status}"] if status else [], f"the packages are in {dist}")
    if os.environ.get("MAKA_EVAL_E2E") != "1":
        print("skipped: MAKA_EVAL_E2E is not 1: no engine for the docs' docker commands")
        return 77
    all_blocks = list(blocks(root))
    work = Path(tempfile.mkdtemp(prefix="maka-docs-"))
    container = f"maka-docs-{route}-{os.getpid()}"
    failures, ran = [], 0
    try:
        bin_dir = install(route, work, build, dist)
        must(["docker", "run", "-d", "--name", container, "maka-eval-test-busybox:test", "sleep", "900"])
        (work / "agent").write_text(AGENT)
        (work / "agent").chmod(0o755)
        must(["docker", "cp", str(work / "agent"), f"{container}:/agent"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_EVAL_")}
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        env["HOME"] = str(work / "home")
        later = []
        for block in all_blocks:
            if block["interactive"]:
                print(f"{block['doc']}:{block['line']}: typed by a person: run by tests/e2e/terminal_test.sh")
                continue
            # One shell per block: what a command sets (an export) holds for the block's later commands.
            script = ""
            for command in block["commands"]:
                if command["kind"] == "container":
                    later.append((block["doc"], command))
                    continue
                script_so_far = script + fill(command["text"], container, work) + "\n"
                # On a terminal, as the reader runs it (what `run` shows by default depends on it): script(1)
                # gives the command a pseudo-terminal and returns its exit status.
                result = subprocess.run(["script", "-qec", "bash -c " + shlex.quote(script_so_far), "/dev/null"],
                                        cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                        text=True, timeout=TIMEOUT)
                result.stdout = result.stdout.replace("\r\n", "\n")
                # The block's earlier exports run again before each command (its output and status are
                # the last command's); anything else a command leaves, it leaves on disk in `work`.
                ran += 1
                problem = check(command, result.returncode, result.stdout + result.stderr)
                if problem:
                    failures.append(f"{block['doc']}:{command['line']}: `{command['text']}`: {problem}\n"
                                    f"{result.stdout}{result.stderr}")
                script = script_so_far if command["text"].startswith("export ") else script
        for doc, command in later:
            text = fill(command["text"], container, work)
            result = subprocess.run(["docker", "exec", "-i", container, "sh", "-c", text], capture_output=True,
                                    text=True, timeout=TIMEOUT)
            ran += 1
            problem = check(command, result.returncode, result.stdout + result.stderr)
            if problem:
                failures.append(f"{doc}:{command['line']}: `{command['text']}` in the container: {problem}\n"
                                f"{result.stdout}{result.stderr}")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    if ran == 0:
        failures.append("the docs hold no command to run: the extraction found none")
    return verdict(failures, f"{ran} commands of the docs ran as written after the {route} install")


if __name__ == "__main__":
    sys.exit(main())
