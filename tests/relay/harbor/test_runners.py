"""The adapter under the trial runners' OWN code: Harbor 0.20.0, Harbor 0.22.0 and Pier 0.3.0, each through
its own ``Trial.create(TrialConfig)`` + ``trial.run()``, ``DockerEnvironment`` (docker compose on the real
engine), ``AgentFactory``, verifier and ``result.json`` — the runners kit in ../shared/runners (its README
lists what it substitutes to run them here: Python 3.11 f-string rewrites, Debian's older pure-Python
dependencies, Compose v1 behind the v2 CLI).

    test_runners.py --list            the test names, one a line (CMake registers one ctest test each)
    test_runners.py NAME              runs one; exit 0 passed, 1 failed, 77 skipped (the reason printed)

A test is skipped (77) when no engine was prepared for this run (MAKA_EVAL_E2E is not 1), or when the kit's
``setup.sh`` says the machine cannot run the runner (no Python >= 3.11 with pydantic 2, as on a bare Debian 12).

Each trial runs a task made here from ``maka-eval-test-busybox:test`` (built by scripts/engine.sh, no
registry): ``[agent] user = "agent"`` (uid 1000), ``[environment] workdir``, ``[environment.env]``, and a
verifier (the runner runs it, as root, in the same container after the agent) that grants reward 1 only
when what the subject recorded in the container is what the runner should have given it; it also records
the container's process list, which shows whether anything the subject started outlived the agent phase.

Real: the runners, the engine, the relay, the helper, the orchestrator protocol (the kit's orchestrator).
Substituted: Pier's filtered-egress proxy service (tests/relay/harbor/agents/pier_proxied.py says why and
how); the moment a trial is cancelled (the kit's ``--trial-timeout-sec``, moved to the event "the subject
has started", tests/relay/harbor/runner_trial.py).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
KIT = Path(os.environ.get("MAKA_RUNNERS_KIT", ROOT.parent / "shared" / "runners")).resolve()
RELAY = os.environ.get("MAKA_EVAL_TEST_RELAY", "")
HELPER = os.environ.get("MAKA_EVAL_TEST_HELPER") or os.environ.get("MAKA_EVAL_TEST_HELPER_BINARY", "")
IMAGE = "maka-eval-test-busybox:test"
RUNNERS = {"harbor-0.20.0": "harbor", "harbor-0.22.0": "harbor", "pier-0.3.0": "pier"}
AGENT_IMPORT = {"harbor": "maka_eval_relay.harbor:RelayAgent", "pier": "pier_proxied:RelayAgent"}
PROXY_URL = "http://agent:kit-proxy-token@pier-egress-proxy:8080"  # agents/pier_proxied.py's
SECRET = "kit-secret-" + os.urandom(8).hex()
# The kit's --trial-timeout-sec value runner_trial.py reads as "cancel when the subject has started".
CANCEL_ON_START = "987654"
TIMEOUT_BUDGET_MS = 10000  # the teardown budget of the timeout and cancel trials (the settle fits in it)

SUBJECT_MARK = "kit-subject"
# The subject of a completing trial: says a line (the log callback test waits for it to reach the runner's
# callback, which creates /logs/agent/released), records what it was given, earns the reward, prints a frame.
COMPLETING = f"""# {SUBJECT_MARK}
echo "early-line $KIT_API_KEY"
if [ "${{WAIT_RELEASE:-0}}" = 1 ]; then
  i=0; while [ ! -e /logs/agent/released ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
fi
reach=no; kill -0 $PPID 2>/dev/null && reach=yes
released=no; [ -e /logs/agent/released ] && released=yes
{{ echo "uid=$(id -u)"; echo "cwd=$(pwd)"; echo "task=${{TASK_VAR-}}"; echo "agent=${{AGENT_VAR-}}"
   echo "proxy=${{HTTPS_PROXY-}}"; echo "lproxy=${{https_proxy-}}"; echo "noproxy=${{NO_PROXY-}}"
   echo "reach=$reach"; echo "released=$released"; }} > /tmp/kit-facts
echo hello > /tmp/kit-hello
echo "to stderr" >&2
"""
# A subject that ignores TERM and never ends (its children inherit the ignored TERM).
STUBBORN = f"""# {SUBJECT_MARK}
trap '' TERM
echo started > /tmp/kit-started
while :; do sleep 1; done
"""


class Failure(Exception):
    pass


def skip(reason: str) -> None:
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(77)


def check(condition: bool, what: str, evidence: object = None) -> None:
    if not condition:
        raise Failure(what + (f"\n  evidence: {json.dumps(evidence, default=str)[:6000]}" if evidence is not None
                              else ""))


def frame_snippet(payload: str) -> str:
    sys.path.insert(0, str(KIT))
    try:
        from orchestrator import frame_snippet as kit_snippet
    finally:
        sys.path.pop(0)
    return kit_snippet(payload)


def kit_environment(runner_id: str) -> dict[str, str]:
    """setup.sh's exports for the runner, or a skip with the kit's own reason."""
    if os.environ.get("MAKA_EVAL_E2E") != "1":
        skip("no docker engine was prepared for this run (MAKA_EVAL_E2E is not 1)")
    if not (KIT / "setup.sh").is_file():
        skip(f"the runners kit is not at {KIT} (set MAKA_RUNNERS_KIT)")
    # setup.sh prints shell (its PYTHONPATH line appends the caller's): evaluated by the shell, with no
    # PYTHONPATH of ours, and what it exported read back.
    script = ('out=$(bash "$1" "$2") || exit $?; unset PYTHONPATH; eval "$out" || exit 1; '
              'for name in $(printf "%s\\n" "$out" | sed -n "s/^export \\([A-Z_]*\\)=.*/\\1/p"); do '
              'printf "%s=%s\\0" "$name" "$(printenv "$name")"; done')
    done = subprocess.run(["bash", "-c", script, "setup", str(KIT / "setup.sh"), runner_id],
                          capture_output=True, text=True, timeout=900, check=False)
    if done.returncode == 77:
        reason = [line for line in done.stderr.splitlines() if "cannot run" in line] or done.stderr.splitlines()
        skip(f"the runners kit cannot run {runner_id} here: {reason[-1] if reason else 'exit 77'}")
    if done.returncode != 0:
        raise Failure(f"setup.sh {runner_id} failed (exit {done.returncode}): {done.stderr[-3000:]}")
    env = dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
    check("KIT_PYTHON" in env, "setup.sh printed no KIT_PYTHON", done.stdout)
    return env


def write_task(folder: Path, runner: str, verify: str) -> Path:
    """A task of the maka-eval-test-busybox image with a non-root agent user, a workdir, task variables, and
    ``verify`` (POSIX sh, run as the verifier: prints nothing, exits 0 when the reward is earned)."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text("""version = "1.0"

[verifier]
timeout_sec = 60.0

[agent]
timeout_sec = 300.0
user = "agent"

[environment]
build_timeout_sec = 300.0
workdir = "/srv/task"

[environment.env]
TASK_VAR = "task-value"
NO_PROXY = "task-no-proxy"
""")
    (folder / "instruction.md").write_text("Write hello to /tmp/kit-hello.\n")
    (folder / "environment" / "Dockerfile").write_text(
        f"FROM {IMAGE}\nRUN mkdir -p /srv/task && chown 1000:1000 /srv/task\nWORKDIR /srv/task\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/sh\necho hello > /tmp/kit-hello\n")
    (folder / "tests" / "test.sh").write_text(f"""#!/bin/sh
# The runner's verifier for this test ({runner}): reward 1 only when the subject did what it should, as
# what it should have been given.
mkdir -p /logs/verifier
ps -o pid,user,args > /logs/verifier/procs.txt 2>&1
cp /tmp/kit-facts /logs/verifier/facts.txt 2>/dev/null
why=$( {verify} )
printf '%s\\n' "$why" > /logs/verifier/why.txt
if [ -z "$why" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
""")
    for script in (folder / "tests" / "test.sh", folder / "solution" / "solve.sh"):
        script.chmod(0o755)
    return folder


def facts_verifier(expected: dict[str, str]) -> str:
    """Shell that prints one line per fact of /tmp/kit-facts that differs from ``expected``."""
    lines = ['[ "$(cat /tmp/kit-hello 2>/dev/null)" = hello ] || echo "no hello in /tmp/kit-hello"']
    for key, value in expected.items():
        lines.append(f'grep -qxF {shlex.quote(f"{key}={value}")} /tmp/kit-facts 2>/dev/null || '
                     f'echo {shlex.quote(f"{key}: expected {value!r}, got")} '
                     f'"$(grep "^{key}=" /tmp/kit-facts 2>/dev/null)"')
    return "; ".join(lines)


def find_file(folder: Path, name: str) -> Path | None:
    found = sorted(folder.rglob(name)) if folder.is_dir() else []
    return found[0] if found else None


def relay_processes(link: Path) -> list[str]:
    """Live (not zombie) processes started from the relay binary linked for this test alone."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv0 == str(link) and state not in ("Z", "X"):
            out.append(f"{entry.name} {state}")
    return out


class RunnerTrial:
    """One real trial of a runner with the adapter, through runner_trial.py and the kit's trial.py."""

    def __init__(self, runner_id: str, path: str, work: Path):
        self.runner_id, self.runner, self.path, self.work = runner_id, RUNNERS[runner_id], path, work
        self.kit_env = kit_environment(runner_id)
        check(bool(RELAY) and os.access(RELAY, os.X_OK), f"MAKA_EVAL_TEST_RELAY is not a relay: {RELAY!r}")
        # The relay through a link of this test's own: its processes are told from other tests' by argv[0].
        (work / "bin").mkdir()
        self.relay_link = work / "bin" / "maka-eval-relay"
        self.relay_link.symlink_to(RELAY)
        self.trials_dir = work / "trials"
        self.trial_name = f"kit-{path}-{os.getpid()}-{int(time.time() * 1000) % 100000}"
        self.trial_dir = self.trials_dir / self.trial_name
        self.entries = work / "log-entries.jsonl"

    def argv(self, task: Path, subject: str, *, timeout_sec: float | None = None, cancel_on_start: bool = False,
             teardown_ms: int = 110000, relay_env: dict[str, str] | None = None,
             sign_key: Path | None = None) -> list[str]:
        kwargs = {"teardown_timeout_ms": teardown_ms, "relay_binary": str(self.relay_link),
                  "docker_fast_path": self.path == "fast"}
        if sign_key is not None:
            kwargs["sign_key_file"] = str(sign_key)
        if HELPER:
            kwargs["helper_binary"] = HELPER
        argv = [self.kit_env["KIT_PYTHON"], str(HERE / "runner_trial.py"), "--kit", str(KIT),
                "--log-entries", str(self.entries), "--release-on", "early-line",
                "--release-file", str(self.trial_dir / "agent" / "released"), "--cancel-when",
                "/tmp/kit-started", "--",
                "--runner", self.runner, "--task", str(task), "--agent-import-path", AGENT_IMPORT[self.runner],
                "--trials-dir", str(self.trials_dir), "--trial-name", self.trial_name,
                "--serve-relay", subject,
                "--agent-env", "AGENT_VAR=agent-value", "--agent-env", "https_proxy=agent-choice",
                "--agent-env", f"KIT_API_KEY={SECRET}", "--path", str(HERE / "agents")]
        for key, value in kwargs.items():
            argv += ["--agent-kwarg", f"{key}={json.dumps(value)}"]
        for key, value in (relay_env or {}).items():
            argv += ["--relay-env", f"{key}={value}"]
        if timeout_sec is not None:
            argv += ["--timeout-sec", str(timeout_sec)]
        if cancel_on_start:
            argv += ["--trial-timeout-sec", CANCEL_ON_START]
        return argv

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.kit_env)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "relay" / "harbor")] + [p for p in (self.kit_env.get("PYTHONPATH", ""),) if p])
        return env

    def run(self, argv: list[str]) -> dict:
        started = time.monotonic()
        done = subprocess.run(argv, env=self.environment(), capture_output=True, text=True, timeout=1200,
                              check=False, cwd=self.work)
        self.stderr = done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        check(bool(lines), f"trial.py printed no result (exit {done.returncode})",
              {"stdout": done.stdout[-2000:], "stderr": done.stderr[-6000:]})
        out = json.loads(lines[-1])
        out["_seconds"] = round(time.monotonic() - started, 1)
        print(f"{self.runner_id} {self.path}: trial {out['trial_name']} in {out['_seconds']} s, reward "
              f"{out.get('reward')}, exception {(out.get('exception') or {}).get('exception_type')}", flush=True)
        return out

    def log_entries(self) -> list[dict]:
        if not self.entries.is_file():
            return []
        return [json.loads(line) for line in self.entries.read_text().splitlines() if line.strip()]

    def verifier_file(self, name: str) -> str:
        found = find_file(self.trial_dir, name)
        return found.read_text() if found else ""

    def relay_log(self) -> str:
        found = find_file(self.trial_dir, "maka-eval-relay.log")
        return found.read_text() if found else ""

    def evidence(self, out: dict) -> dict:
        return {"result": {k: v for k, v in out.items() if k not in ("relay",)},
                "executed": (out.get("relay") or {}).get("executed"),
                "why": self.verifier_file("why.txt"), "facts": self.verifier_file("facts.txt"),
                "relay_log": self.relay_log()[-3000:], "stderr": self.stderr[-3000:]}


def expected_facts(runner: str, released: bool) -> dict[str, str]:
    facts = {"uid": "1000", "cwd": "/srv/task", "task": "task-value", "agent": "agent-value", "reach": "no",
             "lproxy": "agent-choice"}
    if runner == "pier":
        # pier/environments/docker/docker.py:410 puts the proxy's variables over the task's (NO_PROXY) and
        # the agent's own (https_proxy) over them; _merge_env puts them over the task's persistent env.
        facts.update(proxy=PROXY_URL, noproxy="localhost,127.0.0.1")
    else:
        facts.update(proxy="", noproxy="task-no-proxy")
    if released:
        facts["released"] = "yes"
    return facts


def test_completes(runner_id: str, path: str, work: Path) -> None:
    """The trial completes; the runner's verifier grants the reward from what the subject did, as the user
    and in the workdir the task names, with the task's and the agent's variables (and Pier's proxy ones); the
    frame is decoded. Harbor: the subject's output reaches the trial's log callbacks live on the fast path
    (the subject waits for its first line to arrive there), masked; on the bridge none of the helper's
    protocol does."""
    trial = RunnerTrial(runner_id, path, work)
    runner = trial.runner
    live = runner == "harbor" and path == "fast"
    task = write_task(work / "task", runner, facts_verifier(expected_facts(runner, live)))
    payload = '{"status":"completed","runner":"' + runner_id + '"}'
    subject = COMPLETING + frame_snippet(payload) + "\n"
    # Signed (sign_key_file): the envelope lands in the trial's agent folder and verifies three ways.
    keys = subprocess.run([RELAY, "keygen", "--out", str(work / "sign")], capture_output=True, text=True)
    check(keys.returncode == 0, "keygen failed", keys.stderr)
    out = trial.run(trial.argv(task, subject, relay_env={"WAIT_RELEASE": "1" if live else "0"},
                               sign_key=work / "sign.key"))
    evidence = trial.evidence(out)
    check_signed(trial, work / "sign.pub", payload, evidence)
    check(out.get("exception") is None, "the runner recorded an exception", evidence)
    check(out.get("reward") == 1.0, "the runner's verifier did not grant the reward", evidence)
    executed = (out.get("relay") or {}).get("executed") or {}
    check(executed.get("termination") == "exited" and executed.get("exitCode") == 0,
          "the orchestrator was not told the subject exited 0", evidence)
    check(executed.get("stdout") == payload, "the result frame was not decoded into executed.stdout", evidence)
    check(out.get("containers_left") == [], "the runner left containers", evidence)
    check(relay_processes(trial.relay_link) == [], "a relay process outlived the trial",
          relay_processes(trial.relay_link))
    entries = trial.log_entries()
    if runner == "harbor":
        agent = [e for e in entries if e["phase"] == "agent"]
        text = "".join(e["text"] for e in agent)
        check(SECRET not in "".join(e["text"] for e in entries), "a secret reached the log callbacks", entries)
        check(not any('"kind"' in e["text"] or '"op"' in e["text"] for e in entries),
              "the helper's protocol reached the log callbacks", entries)
        if live:
            # All the subject printed, masked: its frame line too, as the artifacts have it. stdout and stderr
            # are two pipes here (Harbor's exec has one), so only each stream's own order is kept.
            lines = text.splitlines()
            stdout_lines = [line for line in lines if line != "to stderr"]
            check(len(stdout_lines) == 2 and stdout_lines[0] == "early-line ***" and
                  stdout_lines[1].startswith("MAKA-EVAL-RESULT-V1 ") and lines.count("to stderr") == 1,
                  "the subject's output (masked, stderr merged) did not reach the log callbacks", entries)
            check(all(e["stream"] == "stdout" and e["trial_id"] for e in agent),
                  "entries not labelled as Harbor labels an exec's merged output", entries)
        else:
            check(agent == [], "the bridge handed output to the log callbacks", entries)
    else:
        check(entries == [], "Pier has no log callbacks, yet entries were recorded", entries)


def check_signed(trial: "RunnerTrial", pub: Path, payload: str, evidence: dict) -> None:
    """The trial's signed result: in the agent's log folder, verified by our verify and by openssl and
    @sigstore/core (tests/e2e/attestation_test.sh), its statement naming this backend and this frame."""
    envelope = find_file(trial.trial_dir, "maka-eval-attestation.dsse.json")
    check(envelope is not None, "no signed result in the trial's folder", evidence)
    build = Path(RELAY).resolve().parent.parent
    three = subprocess.run(["bash", str(ROOT / "tests" / "e2e" / "attestation_test.sh"), RELAY, str(build),
                            "envelope", str(pub), str(envelope)], capture_output=True, text=True)
    check(three.returncode == 0, "the signed result did not verify three ways", three.stdout + three.stderr)
    shown = subprocess.run([RELAY, "verify", "--json", "--key", str(pub), str(envelope)], capture_output=True,
                           text=True)
    statement = json.loads(shown.stdout)
    predicate = statement["predicate"]
    backend = "docker" if trial.path == "fast" else "bridge"
    check(predicate["environment"]["backend"] == backend, f"the statement does not say {backend}", predicate)
    check(predicate["executed"]["stdout"] == payload, "the statement's executed is not the trial's", predicate)
    check(SECRET not in envelope.read_text(), "a secret is in the signed result")


def stubborn_verifier() -> str:
    # The subject's processes are gone when the verifier runs (procs.txt, checked by the test too).
    return (f'ps -o args | grep -v grep | grep -q -e "{SUBJECT_MARK}" -e "^sleep 1$" && '
            'echo "the subject is still running"; echo "reward withheld: the subject was timed out"')


def leftovers(procs: str) -> list[str]:
    return [line for line in procs.splitlines() if SUBJECT_MARK in line or line.rstrip().endswith(" sleep 1")]


def test_agent_timeout(runner_id: str, path: str, work: Path) -> None:
    """The runner's agent timeout, with a subject that ignores TERM: the runner records its timeout, the relay
    reports framework_timeout, the subject's whole tree is gone when the verifier runs in the same container
    (so the relay settled it and destroyed nothing), and no relay process is left."""
    trial = RunnerTrial(runner_id, path, work)
    task = write_task(work / "task", trial.runner, stubborn_verifier())
    out = trial.run(trial.argv(task, STUBBORN, timeout_sec=8, teardown_ms=TIMEOUT_BUDGET_MS))
    evidence = trial.evidence(out)
    exception = out.get("exception") or {}
    check(exception.get("exception_type") == "AgentTimeoutError", "the runner did not record its timeout",
          evidence)
    executed = (out.get("relay") or {}).get("executed") or {}
    check((executed.get("termination"), executed.get("exitCode")) == ("framework_timeout", 124),
          "the relay did not report framework_timeout", evidence)
    procs = trial.verifier_file("procs.txt")
    check(bool(procs), "the verifier did not run in the trial's container after the timeout", evidence)
    check(leftovers(procs) == [], "the subject outlived the agent phase", procs)
    log = trial.relay_log()
    check("destroy" not in log.lower(), "the relay destroyed the environment", log[-3000:])
    check(relay_processes(trial.relay_link) == [], "a relay process outlived the trial",
          relay_processes(trial.relay_link))
    check(out.get("containers_left") == [], "the runner left containers", evidence)


def test_cancelled(runner_id: str, path: str, work: Path) -> None:
    """The whole trial cancelled while the subject runs (as trial.py's --trial-timeout-sec, a job's Ctrl-C):
    the runner tears its environment down, the relay reports framework_timeout, nothing of the trial is left
    (no container, no relay process)."""
    trial = RunnerTrial(runner_id, path, work)
    task = write_task(work / "task", trial.runner, stubborn_verifier())
    out = trial.run(trial.argv(task, STUBBORN, cancel_on_start=True, teardown_ms=TIMEOUT_BUDGET_MS))
    evidence = trial.evidence(out)
    # trial.py's own words when its whole-trial timeout cancelled the run (not the agent's timeout).
    check("trial cancelled after --trial-timeout-sec" in str(out.get("raised")) and
          (out.get("exception") or {}).get("exception_type") in (None, "CancelledError"),
          "the trial was not cancelled while the subject ran", evidence)
    executed = (out.get("relay") or {}).get("executed") or {}
    check(executed.get("termination") == "framework_timeout", "the relay did not report framework_timeout",
          evidence)
    check(out.get("containers_left") == [], "the cancelled trial left containers", evidence)
    check(relay_processes(trial.relay_link) == [], "a relay process outlived the trial",
          relay_processes(trial.relay_link))


REFERENCE = Path(os.environ.get("MAKA_REFERENCE", ROOT.parent / "shared" / "reference")).resolve()


class MakaTrial:
    """apache/maka's own way in: its ``run_trial.py`` and ``eval_framework.py`` (../shared/reference) with this
    project's ``relay_agent.py`` in their bundled folder, first on PYTHONPATH, on Harbor 0.20.0 with a
    TrialConfig naming ``relay_agent:RelayAgent``, as maka's TypeScript executor writes it; the kit's
    orchestrator as the relay's orchestrator."""

    def __init__(self, work: Path, subject: str):
        for name in ("run_trial.py", "eval_framework.py"):
            if not (REFERENCE / name).is_file():
                skip(f"maka's {name} is not at {REFERENCE} (set MAKA_REFERENCE)")
        self.trial = RunnerTrial("harbor-0.20.0", "fast", work)
        bundle = work / "bundle"
        bundle.mkdir()
        # Copies, not links: Python puts the script's real folder first on sys.path, and the reference
        # folder holds the original relay_agent.py.
        for source in (REFERENCE / "run_trial.py", REFERENCE / "eval_framework.py",
                       ROOT / "relay" / "harbor" / "relay_agent.py"):
            shutil.copyfile(source, bundle / source.name)
        self.bundle = bundle
        self.orchestrator = subprocess.Popen(
            [self.trial.kit_env["KIT_PYTHON"], str(KIT / "orchestrator.py"), "--timeout-sec", "600", "--", "sh",
             "-c", subject], stdout=subprocess.PIPE, text=True)
        conf = json.loads(self.orchestrator.stdout.readline())
        kwargs = {"relay_host": conf["host"], "relay_port": conf["port"], "relay_token": conf["token"],
                  "teardown_timeout_ms": TIMEOUT_BUDGET_MS, "relay_binary": str(self.trial.relay_link)}
        if HELPER:
            kwargs["helper_binary"] = HELPER
        # maka's run_trial.py caches a task it downloads (its namespace under Harbor's task cache) and
        # refuses one that is not there: the task comes from a git repository, as maka's tasks do, here a
        # local one (file://).
        repo = work / "task-repo"
        write_task(repo / "task", "harbor", facts_verifier(expected_facts("harbor", False)))
        for command in (["init", "-q"], ["add", "-A"],
                        ["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "task"]):
            subprocess.run(["git", "-C", str(repo), *command], check=True, capture_output=True)
        self.config = work / "trial-config.json"
        self.config.write_text(json.dumps({
            "task": {"git_url": repo.as_uri(), "path": "task"}, "trial_name": self.trial.trial_name,
            "trials_dir": str(self.trial.trials_dir),
            "agent": {"import_path": "relay_agent:RelayAgent", "kwargs": kwargs,
                      "env": {"AGENT_VAR": "agent-value", "https_proxy": "agent-choice",
                              "KIT_API_KEY": SECRET}},
            "environment": {"type": "docker", "delete": True}}))
        self.home = work / "home"
        self.home.mkdir()

    def start(self) -> subprocess.Popen:
        env = self.trial.environment()
        env["PYTHONPATH"] = os.pathsep.join([str(self.bundle), env["PYTHONPATH"]])
        env["HOME"] = str(self.home)  # Harbor's task cache (~/.cache/harbor) stays in this test's folder
        return subprocess.Popen([self.trial.kit_env["KIT_PYTHON"], str(self.bundle / "run_trial.py"), "harbor",
                                 "0.20.0", str(self.config)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.trial.work)

    def finish(self, process: subprocess.Popen) -> dict:
        stdout, stderr = process.communicate(timeout=900)
        try:
            self.orchestrator.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.orchestrator.kill()
            self.orchestrator.wait()
        record_lines = [line for line in self.orchestrator.stdout.read().splitlines() if line.startswith("{")]
        result = find_file(self.trial.trial_dir, "result.json")
        return {"exit": process.returncode, "stderr": stderr[-4000:], "stdout": stdout[-2000:],
                "relay": json.loads(record_lines[-1]) if record_lines else None,
                "result": json.loads(result.read_text()) if result else None,
                "containers": containers_of(self.trial.trial_name), "why": self.trial.verifier_file("why.txt"),
                "relay_log": self.trial.relay_log()[-3000:]}


def containers_of(trial_name: str) -> list[str]:
    sys.path.insert(0, str(KIT))
    try:
        from trial import trial_containers, remove_trial_leftovers
    finally:
        sys.path.pop(0)
    found = trial_containers(trial_name)
    if found:
        remove_trial_leftovers(trial_name, found)
    return [c["name"] for c in found]


def test_maka_completes(work: Path) -> None:
    """maka's run_trial.py completes a trial through the drop-in relay_agent: the verifier's reward, the
    frame decoded for the orchestrator, nothing left."""
    payload = '{"status":"completed","via":"maka"}'
    maka = MakaTrial(work, COMPLETING + frame_snippet(payload) + "\n")
    out = maka.finish(maka.start())
    check(out["exit"] == 0, "run_trial.py failed", out)
    rewards = ((out["result"] or {}).get("verifier_result") or {}).get("rewards") or {}
    check(rewards.get("reward") == 1.0, "the verifier did not grant the reward", out)
    executed = (out["relay"] or {}).get("executed") or {}
    check(executed.get("termination") == "exited" and executed.get("stdout") == payload,
          "the orchestrator did not get the completed run with its frame", out)
    check(out["containers"] == [], "the trial left containers", out)
    check(relay_processes(maka.trial.relay_link) == [], "a relay process outlived the trial")


def test_maka_host_teardown(work: Path) -> None:
    """SIGTERM to maka's run_trial.py while a TERM-ignoring subject runs: run_trial calls
    relay_agent.request_host_teardown() and cancels the trial; the relay settles the subject and, as the
    original, reports nothing; run_trial.py ends normally, the runner removes the environment, no relay
    process is left."""
    maka = MakaTrial(work, STUBBORN)
    process = maka.start()
    sys.path.insert(0, str(HERE))
    from runner_trial import marker_in_container
    sys.path.insert(0, str(KIT))
    import trial as kit_trial
    deadline = time.monotonic() + 600
    started = False
    while not started and process.poll() is None and time.monotonic() < deadline:
        # The subject's marker in its container (the event); each look is a docker exec, bounded overall,
        # and the looks are spaced so that they do not load the machine the trial runs on.
        started = marker_in_container(kit_trial, maka.trial.trial_name, "/tmp/kit-started")
        if not started:
            time.sleep(0.2)
    if not started:
        process.kill()
        raise Failure(f"the subject never started\n  evidence: {json.dumps(maka.finish(process))[:6000]}")
    process.send_signal(signal.SIGTERM)
    out = maka.finish(process)
    check(out["exit"] == 0, "run_trial.py did not end normally after host teardown", out)
    relay = out["relay"] or {}
    check(relay.get("ready") is not None, "the orchestrator's record is missing (no ready)", out)
    check(relay.get("executed") is None, "the orchestrator was sent executed on host teardown", out)
    # Host teardown, not the agent's timeout: the relay said so, and it took the teardown budget, not 300 s.
    check('"signal":"SIGINT"' in out["relay_log"] or "signal=SIGINT" in out["relay_log"],
          "the relay was not told host teardown (SIGINT)", out)
    check(out["containers"] == [], "the trial left containers", out)
    check(relay_processes(maka.trial.relay_link) == [], "a relay process outlived the trial")


TESTS = {}
for _runner_id in RUNNERS:
    for _path in ("fast", "bridge"):
        TESTS[f"{_runner_id}.{_path}.completes"] = (test_completes, _runner_id, _path)
        TESTS[f"{_runner_id}.{_path}.agent_timeout"] = (test_agent_timeout, _runner_id, _path)
    TESTS[f"{_runner_id}.fast.cancelled"] = (test_cancelled, _runner_id, "fast")
    TESTS[f"{_runner_id}.bridge.cancelled"] = (test_cancelled, _runner_id, "bridge")
TESTS["harbor-0.20.0.maka.completes"] = (lambda _r, _p, work: test_maka_completes(work), "harbor-0.20.0", "")
TESTS["harbor-0.20.0.maka.host_teardown"] = (lambda _r, _p, work: test_maka_host_teardown(work),
                                             "harbor-0.20.0", "")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        print("\n".join(TESTS))
        return 0
    if len(argv) != 1 or argv[0] not in TESTS:
        print(f"usage: test_runners.py --list | NAME (one of: {', '.join(TESTS)})", file=sys.stderr)
        return 2
    function, runner_id, path = TESTS[argv[0]]
    work = Path(tempfile.mkdtemp(prefix="maka-runners-"))
    try:
        function(runner_id, path, work)
    except Failure as failure:
        print(f"FAILED {argv[0]}: {failure}", flush=True)
        print(f"(kept: {work})")
        return 1
    print(f"passed {argv[0]}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
