#!/usr/bin/env python3
"""The benchmark driver behind bench/run.sh: runs each measurement, prints one table.

Every figure is a median with min/max over repeated runs; every ratio is against a baseline measured in
the same run. Measurements (issue targets in brackets):
  1. per-trial overhead: `maka-eval-relay run --env docker:C -- true` wall time (relay start to exit, which
     includes executed and verify) against a bare engine exec of `true` in the same container through the
     same Engine API client [<= 1.5x]; engine calls per trial [<= 3]
  2. cancel-to-quiet beyond the TERM grace, for a TERM-respecting subject, a TERM-ignoring one and one with a
     setsid'd daemon [<= 150 ms]: the helper's settleMs (cancel received -> no descendant alive) less the grace,
     and SIGTERM-to-relay-exit wall time less the grace
  3. peak RSS of the relay and of the helper while the subject prints 1 MiB, 100 MiB, 1 GiB [<= 16 MiB]
  3b. capture: 512 MiB of stdout through a trial against `head | cat > file; sync` in the same container
     [<= 1.25x]; --follow of 100 MiB against a bare `docker exec` streaming it, each to the same reader (a
     pipe read here, and /dev/null) [<= 1.3x]
  3c. 200 credentials of 4 KiB: the helper's peak RSS [<= 16 MiB] and the subject's start (execute ->
     started) against none [<= +20 ms]
  4. 128 concurrent trials in 128 containers (--concurrent N): wall time, relay CPU per trial, the relays'
     summed PSS at its peak, lost results [0]
  4b. the static helper's size [<= 1 MiB]
  5. frame projection on a 64 KiB carrier (for the record)
  1b. the cold trial (one container per trial, the normal case): a trial in a fresh container against a
     bare CLI `docker exec … true` in another fresh container [<= 1.5x]; engine calls [<= 4]
  7. a remote engine over mutual TLS (tests/e2e/tls_engine.sh's second dockerd, on loopback): the same
     engine's unix socket against its TLS port, warm and cold, for a trial and for a bare exec through the
     same Engine API client (so the TLS figure is the transport's cost, not another engine's)
  6. per-trial overhead through the Harbor/Pier adapter and the bridge backend, with the Harbor-shaped
     stand-in environment (one `docker` CLI process per call), warm and cold, against a bare
     `docker exec … true` through the same CLI; calls on the environment object per trial [3 warm, <= 4 cold]
  9. Podman's Docker-compatible API, rootful and rootless (tests/e2e/podman_service.sh's services), beside
     Docker in the same run: cold and warm trials against a bare exec through each engine's API; engine calls
  1c. the cold trial as production runs it: `connect` driven over TCP by an orchestrator here, a frame-printing
     subject, a fresh container per trial, >= 41 rounds, each round a bare exec of the same subject, a trial of
     this build and (--against BUILD) one of another build, in rotating order [<= 1.1x the bare exec, <= 1.0x
     the other build]; the phase log's timings of this build (medians)
  3d. stdin: 100 MiB forwarded to a subject (`run -i`, the subject `wc -c`) against a bare `docker exec -i` of
     the same subject in the same container, both reading the same file, interleaved [>= 0.8x its rate,
     i.e. <= 1.25x its time]
  3e. signed results: a warm trial with --sign-key/--attestation against the same trial unsigned, interleaved
     [<= +1 ms]; `verify --artifacts` over a 1 GiB artifact against `sha256sum` of the same files [<= 1.1x]
  8. with --against BUILD (`--only versus`): warm and cold trials of this build against another build's relay,
     alternated in one run (a change's cost, e.g. against a worktree of the commit before it)
"""
import argparse
import asyncio
import json
import os
import random
import resource
import signal
import socket
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOKEN_FRAME = "/.maka-eval/maka-eval-helper frame"


def docker(*args, check=True):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


class Container:
    def __init__(self, name, *run_args):
        self.name = name
        docker("rm", "-f", name, check=False)
        docker("run", "-d", "--name", name, *run_args, "maka-eval-test-busybox:test")

    def remove(self):
        docker("rm", "-f", self.name, check=False)


def phases(stderr):
    """The relay's --log-format json lines, by phase name (the last of each)."""
    out = {}
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        out[entry.get("phase")] = entry
    return out


def run_trial(relay, container, script, extra=(), env=None, prefix=()):
    """One trial through `maka-eval-relay run` (`prefix`: a command it runs under, such as setpriv); returns
    (wall seconds, result json, phases)."""
    argv = [*prefix, relay, "run", "--env", f"docker:{container}", "--json", "--log-format", "json", *extra, "--",
            "sh", "-c", script]
    begun = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = proc.communicate()
    wall = time.monotonic() - begun
    return wall, json.loads(out.strip().splitlines()[-1]), phases(err)


def delivered(argv, sink):
    """Runs `argv` with its stdout and stderr delivered to `sink`: "pipe" (read here, binary, as fast as they
    come) or "null" (/dev/null). Returns (wall ms, stderr bytes or None)."""
    begun = time.monotonic()
    if sink == "pipe":
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = proc.communicate()
    else:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.wait()
        err = None
    wall = (time.monotonic() - begun) * 1000
    assert proc.returncode == 0, (argv, proc.returncode)
    return wall, err


def stats(values):
    return statistics.median(values), min(values), max(values)


def fmt(values, unit, digits=1):
    med, lo, hi = stats(values)
    return f"{med:.{digits}f} {unit} ({lo:.{digits}f}–{hi:.{digits}f})"


def bench_tool(build, command, container, n):
    return json.loads(subprocess.run([f"{build}/bench/maka-eval-bench", command, container, str(n)],
                                     capture_output=True, text=True, check=True).stdout)


def overhead(build, relay, repeats, rows):
    """The warm trial against a bare engine exec and against the least exchange a trial's exec makes, the
    three interleaved round by round so that all see the same engine."""
    c = Container("maka-bench-overhead")
    try:
        run_trial(relay, c.name, "true")  # the one-time helper upload
        baseline, exchange, walls, calls = [], [], [], []
        for _ in range(repeats):
            baseline += bench_tool(build, "bare-exec", c.name, 1)
            exchange += bench_tool(build, "exchange-exec", c.name, 1)
            wall, result, ph = run_trial(relay, c.name, "true")
            assert result["executed"]["exitCode"] == 0, result
            walls.append(wall * 1000)
            calls.append(int(ph["done"]["engineCalls"]))
        base = statistics.median(baseline)
        rows.append(("bare engine exec of `true` (baseline)", fmt(baseline, "ms"), ""))
        rows.append(("one exchange through an exec's stream (a line out, one in, the answer out)",
                     fmt(exchange, "ms"), f"{statistics.median(exchange) / base:.2f}× baseline: the floor of the "
                     f"protocol's hello → run → report, with no relay process"))
        rows.append(("per-trial: relay start → exit, no-op subject", fmt(walls, "ms"),
                     f"{statistics.median(walls) / base:.2f}× baseline (target ≤ 1.1×), "
                     f"{statistics.median(walls) / statistics.median(exchange):.2f}× the exchange"))
        rows.append(("engine calls per warm trial (no egress)", f"{statistics.median(calls):.0f}", "target ≤ 3"))
    finally:
        c.remove()


def cancel(relay, repeats, rows):
    grace_ms = 500
    variants = [
        ("TERM-respecting subject", "trap 'exit 0' TERM; sleep 3600 & wait", 0),
        ("TERM-ignoring subject", "trap '' TERM; sleep 3600", grace_ms),
        ("subject with a setsid'd daemon", "setsid sleep 3600 & sleep 3600", 0),
    ]
    c = Container("maka-bench-cancel")
    try:
        run_trial(relay, c.name, "true")
        for label, script, grace in variants:
            helper_side, wall_side = [], []
            for _ in range(repeats):
                argv = [relay, "run", "--env", f"docker:{c.name}", "--json", "--log-format", "json",
                        "--term-grace-ms", str(grace_ms), "--", "sh", "-c", script]
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(1.0)  # the subject is running by now (a trial starts in well under 200 ms)
                sent = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                out, err = proc.communicate()
                wall_ms = (time.monotonic() - sent) * 1000
                ph = phases(err)
                settled = ph.get("settled")
                assert settled is not None, err
                assert json.loads(out.strip().splitlines()[-1])["executed"]["exitCode"] == 124
                left = docker("exec", c.name, "ps", "-o", "args").stdout
                assert "sleep 3600" not in left, left
                helper_side.append(int(settled["settleMs"]) - grace)
                wall_side.append(wall_ms - grace)
            rows.append((f"cancel-to-quiet beyond grace, {label}", fmt(helper_side, "ms", 0),
                         f"SIGTERM → relay exit {fmt(wall_side, 'ms', 0)}; target ≤ 150 ms"))
    finally:
        c.remove()


def memory(relay, rows):
    c = Container("maka-bench-memory")
    try:
        run_trial(relay, c.name, "true")
        for label, size, reps in (("1 MiB", 1 << 20, 3), ("100 MiB", 100 << 20, 3), ("1 GiB", 1 << 30, 1)):
            relay_rss, helper_rss = [], []
            for _ in range(reps):
                _, result, ph = run_trial(relay, c.name, f"head -c {size} /dev/zero")
                assert result["executed"]["diagnostic"]["category"] in ("result-frame-missing", "result-frame-oversize")
                relay_rss.append(int(ph["done"]["peakRssKiB"]) / 1024)
                helper_rss.append(int(ph["exited"]["helperPeakRssKiB"]) / 1024)
            rows.append((f"peak RSS, subject prints {label}",
                         f"relay {fmt(relay_rss, 'MiB')}, helper {fmt(helper_rss, 'MiB')}", "target ≤ 16 MiB"))
        # run --follow: the same 100 MiB shown live, against the same trial without following and against a bare
        # `docker exec` streaming the bytes out, each of the two delivering them to the same reader: a pipe this
        # script reads (binary, as fast as it comes), then /dev/null. (Until 2026-12-06 the followed trial's
        # bytes went through a pipe into a text decode here and the bare exec's to /dev/null: 1.76x.)
        megs = 100 << 20
        follow = [relay, "run", "--env", f"docker:{c.name}", "--json", "--log-format", "json", "--follow", "--",
                  "sh", "-c", f"head -c {megs} /dev/zero"]
        bare = ["docker", "exec", c.name, "head", "-c", str(megs), "/dev/zero"]
        plain, relay_rss, shown = [], [], []
        followed, streamed = {"pipe": [], "null": []}, {"pipe": [], "null": []}
        for _ in range(3):
            wall, _, _ = run_trial(relay, c.name, f"head -c {megs} /dev/zero")
            plain.append(wall * 1000)
            for sink in ("pipe", "null"):
                wall, err = delivered(follow, sink)
                followed[sink].append(wall)
                if err is not None:
                    ph = phases(err.decode(errors="replace"))
                    relay_rss.append(int(ph["done"]["peakRssKiB"]) / 1024)
                    shown.append(int(ph["follow"]["shownBytes"]) / (1 << 20))
                streamed[sink].append(delivered(bare, sink)[0])
        ratio = {sink: statistics.median(followed[sink]) / statistics.median(streamed[sink]) for sink in followed}
        rows.append(("subject prints 100 MiB with --follow, read through a pipe | to /dev/null: wall; relay peak "
                     "RSS; shown live",
                     f"{fmt(followed['pipe'], 'ms')} | {fmt(followed['null'], 'ms')}; relay {fmt(relay_rss, 'MiB')}; "
                     f"{fmt(shown, 'MiB', 0)}",
                     f"{ratio['pipe']:.2f}× | {ratio['null']:.2f}× a bare `docker exec` streaming the 100 MiB out to "
                     f"the same reader ({fmt(streamed['pipe'], 'ms')} | {fmt(streamed['null'], 'ms')}); target ≤ 1.3×; "
                     f"{statistics.median(followed['pipe']) / statistics.median(plain):.2f}× the trial without "
                     f"--follow ({fmt(plain, 'ms')})"))
    finally:
        c.remove()


def masking(relay, rows):
    """1 GiB of agent-like text through a trial, with 16 credentials masked and without: the cost of masking
    (the subject echoes one of them every so often, so there is something to mask) and the helper's memory."""
    c = Container("maka-bench-masking")
    try:
        run_trial(relay, c.name, "true")
        rng = random.Random(20261203)
        alphabet = string.ascii_letters + string.digits
        values = {f"BENCH_KEY_{i}": "".join(rng.choice(alphabet) for _ in range(40)) for i in range(16)}
        env = {**os.environ, **values}
        script = ("yes '2026-12-03T20:00:00Z INFO step 12: called tool read_file {\"path\": \"src/main.py\"} "
                  "-> 200 OK (1543 bytes)' | head -c 1073741824; echo \"$BENCH_KEY_3\"")
        # The container is reused (its subject runs as root): the bench accepts that, as an operator would.
        credentials = ["--trust-reused-container", *(a for name in values for a in ("--credential", name))]
        plain, masked, helper_rss, counts = [], [], [], []
        for _ in range(3):
            wall, _, _ = run_trial(relay, c.name, script, env=env)
            plain.append(wall * 1000)
            wall, _, ph = run_trial(relay, c.name, script, extra=credentials, env=env)
            masked.append(wall * 1000)
            helper_rss.append(int(ph["exited"]["helperPeakRssKiB"]) / 1024)
            counts.append(int(ph.get("masked", {}).get("stdout", 0)))
        assert all(n == 1 for n in counts), counts
        ratio = statistics.median(masked) / statistics.median(plain)
        rows.append(("subject prints 1 GiB with 16 credentials masked (40 bytes each: 64 forms)",
                     f"{fmt(masked, 'ms')}, helper peak RSS {fmt(helper_rss, 'MiB')}",
                     f"{ratio:.2f}× the same trial without credentials ({fmt(plain, 'ms')}); target ≤ 1.10×"))
    finally:
        c.remove()


def capture(relay, repeats, rows):
    """512 MiB of stdout through a trial (counted, hashed, kept, receipted and synced before `executed`)
    against the floor in the same container: the same bytes piped through `cat` into a file on the same
    filesystem and synced, through the CLI, interleaved round by round."""
    c = Container("maka-bench-capture")
    size = 512 << 20
    try:
        run_trial(relay, c.name, "true")
        floor, trial = [], []
        for _ in range(repeats):
            begun = time.monotonic()
            docker("exec", c.name, "sh", "-c",
                   f"head -c {size} /dev/zero | cat > /logs/floor.bin; sync /logs/floor.bin; rm /logs/floor.bin")
            floor.append((time.monotonic() - begun) * 1000)
            wall, result, ph = run_trial(relay, c.name, f"head -c {size} /dev/zero")
            assert result["executed"]["diagnostic"]["bytes"] == size, result
            trial.append(wall * 1000)
        ratio = statistics.median(trial) / statistics.median(floor)
        rows.append(("subject prints 512 MiB: a trial (hashed, kept, receipted, synced) against "
                     "`head | cat > file; sync` in the same container", fmt(trial, "ms"),
                     f"**{ratio:.2f}×** the floor ({fmt(floor, 'ms')}); target ≤ 1.25×"))
    finally:
        c.remove()


def stdin_forwarding(relay, repeats, rows):
    """100 MiB on the relay's stdin forwarded to the subject (run -i) against a bare `docker exec -i` of the
    same subject, each reading the same file, interleaved round by round; the subject counts what came."""
    c = Container("maka-bench-stdin")
    size = 100 << 20
    with tempfile.NamedTemporaryFile(prefix="maka-bench-stdin-") as data:
        data.write(os.urandom(size))
        data.flush()
        try:
            run_trial(relay, c.name, "true")
            bare, trial = [], []
            for _ in range(repeats):
                with open(data.name, "rb") as stdin:
                    begun = time.monotonic()
                    out = subprocess.run(["docker", "exec", "-i", c.name, "wc", "-c"], stdin=stdin,
                                         capture_output=True, text=True, check=True).stdout
                    bare.append((time.monotonic() - begun) * 1000)
                assert int(out.split()[0]) == size, out
                with open(data.name, "rb") as stdin:
                    begun = time.monotonic()
                    proc = subprocess.run([relay, "run", "-i", "--env", f"docker:{c.name}", "--json", "--",
                                           "wc", "-c"], stdin=stdin, capture_output=True, text=True)
                    trial.append((time.monotonic() - begun) * 1000)
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                assert result["executed"]["diagnostic"]["bytes"] == len(f"{size}\n"), result
            ratio = statistics.median(bare) / statistics.median(trial)
            rows.append(("stdin: 100 MiB forwarded to `wc -c` (run -i) against a bare `docker exec -i` of it",
                         fmt(trial, "ms"),
                         f"**{ratio:.2f}×** its rate ({fmt(bare, 'ms')}); target ≥ 0.8×"))
        finally:
            c.remove()


def signing(relay, repeats, rows):
    """What signing a trial's result costs: warm trials with and without --sign-key, interleaved in one
    container; and `verify --artifacts` over a trial's 1 GiB stdout against sha256sum of the same files."""
    c = Container("maka-bench-signing")
    with tempfile.TemporaryDirectory(prefix="maka-bench-sign-") as work:
        subprocess.run([relay, "keygen", "--out", f"{work}/k"], check=True, capture_output=True)
        signed = ("--sign-key", f"{work}/k.key", "--attestation", f"{work}/a.json")
        try:
            run_trial(relay, c.name, "true", extra=signed)  # the relay's own digest remembered, as on a host
            # Pairs next to each other in time, in alternating order: a pair's difference cancels the engine's
            # drift, which moves a trial's wall time by more than signing costs. The relay's CPU time (user +
            # system, from the kernel's exact run time) is its own cost, free of the engine's noise.
            plain, sign, wall_deltas, cpu_deltas = [], [], [], []
            for i in range(repeats * 2):
                pair = {}
                for name, extra in (("plain", ()), ("sign", signed)) if i % 2 == 0 else (("sign", signed),
                                                                                           ("plain", ())):
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    wall, result, _ = run_trial(relay, c.name, "true", extra=extra)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    assert result["exit"] == 0, result
                    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
                    pair[name] = (wall * 1000, cpu)
                plain.append(pair["plain"][0])
                sign.append(pair["sign"][0])
                wall_deltas.append(pair["sign"][0] - pair["plain"][0])
                cpu_deltas.append(pair["sign"][1] - pair["plain"][1])
            rows.append(("signed result: a warm trial with --sign-key (DSSE over the in-toto statement, written "
                         "0600)", fmt(sign, "ms"),
                         f"**{statistics.median(wall_deltas):+.1f} ms** wall, **{statistics.median(cpu_deltas):+.1f} "
                         f"ms** relay CPU (medians of {len(wall_deltas)} paired differences) against unsigned "
                         f"({fmt(plain, 'ms')}); target ≤ +1 ms"))
        finally:
            c.remove()
        run = subprocess.run([relay, "run", "--quiet", "--json", *signed, "--", "head", "-c", "1G", "/dev/zero"],
                             capture_output=True, text=True, check=True)
        artifacts = json.loads(run.stdout.strip().splitlines()[-1])["artifacts"]
        files = sorted(os.path.join(artifacts, name) for name in os.listdir(artifacts))
        ours, theirs = [], []
        for _ in range(3):
            begun = time.monotonic()
            subprocess.run([relay, "verify", "--key", f"{work}/k.pub", "--artifacts", artifacts, f"{work}/a.json"],
                           check=True, capture_output=True)
            ours.append((time.monotonic() - begun) * 1000)
            begun = time.monotonic()
            subprocess.run(["sha256sum", *files], check=True, capture_output=True)
            theirs.append((time.monotonic() - begun) * 1000)
        shutil.rmtree(os.path.dirname(artifacts), ignore_errors=True)
        ratio = statistics.median(ours) / statistics.median(theirs)
        rows.append(("`verify --artifacts` over 1 GiB of artifacts", fmt(ours, "ms"),
                     f"**{ratio:.2f}×** `sha256sum` of the same files ({fmt(theirs, 'ms')}); target ≤ 1.1×"))


def many_credentials(count=200, size=4096, seed=20261206):
    """`count` credentials of `size` bytes, with characters that URL encoding changes, so every form the
    masker covers (the value, base64 at three alignments, percent-encoding in both cases) is distinct."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "+/=-_.~:@"
    return {f"BENCH_CRED_{i}": "".join(rng.choice(alphabet) for _ in range(size)) for i in range(count)}


def credentials_at_scale(relay, repeats, rows):
    """200 credentials of 4 KiB (JWTs, PEM keys, service-account JSON are this size): the helper's peak RSS
    and the subject's start (the relay's `execute` to the helper's `started`) against the same trial with
    none, interleaved in one container."""
    c = Container("maka-bench-credentials")
    try:
        run_trial(relay, c.name, "true")
        values = many_credentials()
        env = {**os.environ, **values}
        credentials = ["--trust-reused-container", *(a for name in values for a in ("--credential", name))]
        script = 'echo "$BENCH_CRED_7"'
        plain_start, start, plain_rss, rss, counts = [], [], [], [], []
        def execute_to_started(argv_extra):
            """A trial's log, summed from the relay's `execute` (exclusive) to the helper's `started`."""
            argv = [relay, "run", "--env", f"docker:{c.name}", "--json", "--log-format", "json", *argv_extra,
                    "--", "sh", "-c", script]
            proc = subprocess.run(argv, capture_output=True, text=True, env=env)
            total, counting, ph = 0, False, phases(proc.stderr)
            for line in proc.stderr.splitlines():
                entry = json.loads(line) if line.startswith("{") else {}
                if counting:
                    total += int(entry.get("ms", 0))
                if entry.get("phase") == "execute":
                    counting = True
                if entry.get("phase") == "started":
                    break
            return total, json.loads(proc.stdout.strip().splitlines()[-1]), ph

        for _ in range(repeats):
            ms, _, ph = execute_to_started(("--trust-reused-container",))
            plain_start.append(ms)
            plain_rss.append(int(ph["exited"]["helperPeakRssKiB"]) / 1024)
            ms, result, ph = execute_to_started(credentials)
            start.append(ms)
            rss.append(int(ph["exited"]["helperPeakRssKiB"]) / 1024)
            counts.append(int(ph.get("masked", {}).get("stdout", 0)))
            assert values["BENCH_CRED_7"] not in json.dumps(result), "a credential reached the result"
        assert all(n == 1 for n in counts), counts
        forms = sum(len(v) + 3 * (4 * len(v) // 3) + 2 * len(v) for v in values.values())
        rows.append(("200 credentials of 4 KiB masked (1,200 forms, ~%.1f MiB of them): helper peak RSS" % (forms / (1 << 20)),
                     fmt(rss, "MiB"), f"target ≤ 16 MiB; {fmt(plain_rss, 'MiB')} with none"))
        delay = statistics.median(start) - statistics.median(plain_start)
        rows.append(("  … the subject's start (relay's execute → helper's started)", fmt(start, "ms", 0),
                     f"{delay:+.0f} ms against none ({fmt(plain_start, 'ms', 0)}); target ≤ +20 ms"))
    finally:
        c.remove()


def pss_kib(pid):
    """A process's proportional set size (shared pages divided among their users), or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def concurrent(relay, n, rows):
    """n trials at once, one container each (warm: the helper is in). Relay CPU from wait4; the relays'
    summed PSS sampled every 10 ms while they run (its peak: what n relays cost the host together)."""
    containers = [Container(f"maka-bench-c{i}") for i in range(n)]
    try:
        for c in containers:
            run_trial(relay, c.name, "true")
        begun = time.monotonic()
        procs = []
        for i, c in enumerate(containers):
            argv = [relay, "run", "--env", f"docker:{c.name}", "--json", "--quiet", "--",
                    "sh", "-c", f"{TOKEN_FRAME} '{{\"trial\":{i}}}'"]
            procs.append((i, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)))
        peak_pss, peak_live = 0, 0
        ended = {}  # pid -> (exit status, CPU seconds), reaped here with wait4 for each relay's own rusage
        while len(ended) < len(procs):
            live = []
            for _, proc in procs:
                if proc.pid in ended:
                    continue
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    ended[pid] = (os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
                else:
                    live.append(proc.pid)
            total = sum(pss_kib(pid) for pid in live)
            if total > peak_pss:
                peak_pss, peak_live = total, len(live)
            time.sleep(0.01)
        lost, cpu = 0, []
        for i, proc in procs:
            out = proc.stdout.read()
            code, seconds = ended[proc.pid]
            cpu.append(seconds)
            try:
                ok = json.loads(out.strip().splitlines()[-1])["executed"]["stdout"] == f'{{"trial":{i}}}'
            except (ValueError, KeyError, TypeError, IndexError):
                ok = False
            lost += 0 if ok and code == 0 else 1
        wall = time.monotonic() - begun
        rows.append((f"{n} concurrent trials (one container each)", f"{wall:.2f} s wall",
                     f"relay CPU {statistics.median(cpu) * 1000:.1f} ms/trial; summed PSS of the relays at its "
                     f"peak {peak_pss / 1024:.1f} MiB ({peak_live} running, {peak_pss / max(peak_live, 1):.0f} KiB "
                     f"each); lost results: {lost} (target 0)"))
    finally:
        for c in containers:
            c.remove()


def helper_size(build, rows):
    """What goes into every container on a cold trial (through the session's stdin)."""
    size = os.path.getsize(f"{build}/in_container/maka-eval-helper")
    rows.append(("the static helper binary (what a cold trial puts into the container)",
                 f"{size:,} bytes ({size / (1 << 20):.2f} MiB)", "target ≤ 1 MiB"))


def projection(build, rows):
    out = json.loads(subprocess.run([f"{build}/bench/maka-eval-bench", "projection", "5000"],
                                    capture_output=True, text=True, check=True).stdout)
    rows.append(("frame projection, 64 KiB carrier", f"{out['usPerProjection']:.0f} µs",
                 f"{out['mibPerSecond']:.0f} MiB/s"))


def cli_exec_ms(container):
    begun = time.monotonic()
    docker("exec", container, "sh", "-c", "true")
    return (time.monotonic() - begun) * 1000


def cold(relay, repeats, rows):
    """One container per trial, the normal case: the first trial's cost is the per-trial cost. Each repeat
    starts fresh containers (not timed): one for the baseline, one per trial variant. Variants: the helper
    installed by the relay (through the session exec's stdin), and the helper mounted read-only (as Harbor's
    mounts can do: nothing to install). The archive PUT row says what the engine's own upload would cost."""
    helper = os.path.join(os.path.dirname(os.path.dirname(relay)), "in_container", "maka-eval-helper")
    mounted = ("-v", f"{helper}:/maka-eval/maka-eval-helper:ro")
    baseline, put = [], []
    variants = {"installed by the relay": ([], [], (), ()),
                "mounted": ([], [], mounted, ("--helper-in-container", "/maka-eval/maka-eval-helper"))}
    for i in range(repeats):
        a = Container(f"maka-bench-cold-a{i}")
        try:
            baseline.append(cli_exec_ms(a.name))
        finally:
            a.remove()
        for label, (walls, calls, run_args, extra) in variants.items():
            b = Container(f"maka-bench-cold-{label.split()[0]}{i}", *run_args)
            try:
                wall, result, ph = run_trial(relay, b.name, "true", extra)
                assert result["executed"]["exitCode"] == 0, result
                walls.append(wall * 1000)
                calls.append(int(ph["done"]["engineCalls"]))
            finally:
                b.remove()
        # What one archive upload costs the engine by itself, in another fresh container: a tiny file.
        c = Container(f"maka-bench-cold-put{i}")
        try:
            put.append(put_archive_ms(c.name, tiny_tar()))
        finally:
            c.remove()
    base = statistics.median(baseline)
    rows.append(("bare `docker exec … true` via the CLI, fresh container (cold baseline)", fmt(baseline, "ms"), ""))
    rows.append(("one archive PUT of a 6-byte file, fresh container (the engine's own upload cost)", fmt(put, "ms"),
                 f"{statistics.median(put) / base:.2f}× cold baseline"))
    for label, (walls, calls, _, _) in variants.items():
        rows.append((f"cold trial, helper {label}: relay start → exit in a fresh container", fmt(walls, "ms"),
                     f"{statistics.median(walls) / base:.2f}× cold baseline (target ≤ 1.1×); "
                     f"{statistics.median(calls):.0f} engine calls (target ≤ 4)"))


RESULT_TOKEN = "0123456789abcdef0123456789abcdef"


def frame_line(build, payload):
    """A result frame for `payload`, made by the helper's own `frame` command (the subject prints it)."""
    return subprocess.run([f"{build}/in_container/maka-eval-helper", "frame", payload], capture_output=True,
                          text=True, check=True, env={"MAKA_EVAL_RESULT_TOKEN": RESULT_TOKEN}).stdout.strip()


def connect_trial(relay, container, script, payload):
    """One trial as production runs it: `maka-eval-relay connect` to an orchestrator listening here on TCP
    (ready → execute → executed → verify). Returns (wall ms from the relay's start to its exit, the relay's
    phases)."""
    token = "bench-" + uuid.uuid4().hex
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(60)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MAKA_EVAL_RELAY_TOKEN": token}
        begun = time.monotonic()
        proc = subprocess.Popen([relay, "connect", "--host", "127.0.0.1", "--port", str(server.getsockname()[1]),
                                 "--env", f"docker:{container}", "--log-format", "json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        conn, _ = server.accept()
        with conn, conn.makefile("rwb") as wire:
            ready = json.loads(wire.readline())
            assert ready["kind"] == "ready", ready
            wire.write(json.dumps({"token": token, "kind": "execute", "command": "sh", "args": ["-c", script],
                                   "environment": {}, "credentials": {}, "resultToken": RESULT_TOKEN,
                                   "captureStdout": True}, separators=(",", ":")).encode() + b"\n")
            wire.flush()
            executed = json.loads(wire.readline())
            assert executed["exitCode"] == 0 and executed["stdout"] == payload, executed
            wire.write(json.dumps({"token": token, "kind": "verify"}, separators=(",", ":")).encode() + b"\n")
            wire.flush()
            _, err = proc.communicate()
    wall = (time.monotonic() - begun) * 1000
    assert proc.returncode == 0, (proc.returncode, err[-2000:])
    return wall, phases(err)


def cold_connect(build, relay, other, rounds, rows):
    """The cold trial as production runs it (issue 52's measure): `connect` driven by an orchestrator over
    TCP, a fresh container per trial with the helper installed by the relay, the subject printing a result
    frame; paired round by round with a bare CLI `docker exec` of the same subject in a fresh container and,
    when given (--against), with another build's relay; the order of the three rotates each round."""
    payload = '{"status":"completed","score":1}'
    script = "printf '%s\\n' '" + frame_line(build, payload) + "'"
    relays = {"this build": relay}
    if other:
        relays[f"the other build ({os.path.dirname(os.path.dirname(other))})"] = other
    walls = {label: [] for label in relays}
    bare, spans = [], {label: {} for label in relays}

    def bare_exec(i):
        c = Container(f"maka-bench-coldc-bare{i}")
        try:
            begun = time.monotonic()
            out = docker("exec", c.name, "sh", "-c", script).stdout
            bare.append((time.monotonic() - begun) * 1000)
            assert "MAKA-EVAL-RESULT-V1" in out, out
        finally:
            c.remove()

    def trial(label, r, i):
        c = Container(f"maka-bench-coldc-{len(walls[label])}-{i}-{uuid.uuid4().hex[:6]}")
        try:
            wall, ph = connect_trial(r, c.name, script, payload)
            walls[label].append(wall)
            for name, entry in ph.items():
                if "ms" in entry:
                    spans[label].setdefault(name, []).append(float(entry["ms"]))
        finally:
            c.remove()

    steps = [lambda i: bare_exec(i)] + [lambda i, l=l, r=r: trial(l, r, i) for l, r in relays.items()]
    for i in range(rounds):
        for k in range(len(steps)):
            steps[(i + k) % len(steps)](i)
    base = statistics.median(bare)
    rows.append(("bare `docker exec` of a frame-printing subject, fresh container (connect baseline)",
                 fmt(bare, "ms"), f"{rounds} rounds"))
    def paired(ours, theirs):
        # Round by round (the three of a round run back to back): the engine's drift, which moves a cold
        # trial by more than the builds differ, cancels within a round. The median ratio and its quartiles.
        ratios = sorted(a / b for a, b in zip(ours, theirs))
        q = statistics.quantiles(ratios, n=4)
        return f"{statistics.median(ratios):.3f}× paired by round (quartiles {q[0]:.3f}–{q[2]:.3f})"

    for label, w in walls.items():
        note = (f"{statistics.median(w) / base:.2f}× the bare exec, {paired(w, bare)} (target ≤ 1.1×)")
        if label != "this build":
            note += "; this build: " + \
                f"{statistics.median(walls['this build']) / statistics.median(w):.3f}× it, " + \
                f"{paired(walls['this build'], w)} (target ≤ 1.0×)"
        rows.append((f"cold trial through `connect`, frame-printing subject, {label}", fmt(w, "ms"), note))
    for label, by_phase in spans.items():
        if by_phase:
            shown = ", ".join(f"{n} {statistics.median(v):.1f}" for n, v in by_phase.items())
            rows.append((f"… {label}'s phase log (ms since the phase before, medians)", shown, ""))


def versus(relay, other, repeats, rows):
    """This build against another (--against BUILD, e.g. a worktree of the previous commit), alternated in
    one run so both see the same engine: a warm trial in one container (each relay's helper installed
    first) and a cold trial in a fresh container per repeat."""
    warm = {relay: [], other: []}
    cold_walls = {relay: [], other: []}
    c = Container("maka-bench-versus")
    try:
        for r in warm:
            run_trial(r, c.name, "true")  # each build's helper goes in once
        for _ in range(repeats):
            for r, walls in warm.items():
                wall, result, _ = run_trial(r, c.name, "true")
                assert result["executed"]["exitCode"] == 0, result
                walls.append(wall * 1000)
    finally:
        c.remove()
    for i in range(repeats):
        for n, (r, walls) in enumerate(cold_walls.items()):
            f = Container(f"maka-bench-versus-cold{n}-{i}")
            try:
                wall, result, _ = run_trial(r, f.name, "true")
                assert result["executed"]["exitCode"] == 0, result
                walls.append(wall * 1000)
            finally:
                f.remove()
    for label, walls in (("warm", warm), ("cold", cold_walls)):
        base = statistics.median(walls[other])
        rows.append((f"{label} trial, the other build ({other})", fmt(walls[other], "ms"), ""))
        rows.append((f"{label} trial, this build", fmt(walls[relay], "ms"),
                     f"{statistics.median(walls[relay]) / base:.3f}× the other build"))


def put_archive_ms(container, tar_path):
    """One PUT /containers/{id}/archive on the engine's socket, timed (connection included, as the relay's)."""
    import http.client
    import socket

    class UnixConnection(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect("/var/run/docker.sock")

    with open(tar_path, "rb") as f:
        body = f.read()
    begun = time.monotonic()
    connection = UnixConnection("localhost")
    connection.request("PUT", f"/containers/{container}/archive?path=/tmp", body,
                       {"Content-Type": "application/x-tar"})
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.status == 200, response.status
    return (time.monotonic() - begun) * 1000


def tiny_tar():
    path = os.path.join(tempfile.gettempdir(), "maka-bench-tiny.tar")
    if not os.path.exists(path):
        import io
        import tarfile
        with tarfile.open(path, "w") as archive:
            info = tarfile.TarInfo("tiny")
            info.size = 6
            archive.addfile(info, io.BytesIO(b"tiny!\n"))
    return path


def tls(build, relay, repeats, rows):
    """The TLS engine's unix socket against its TLS port: the same dockerd, so the difference is the transport
    (TCP, the TLS handshake with a client certificate, record encryption). Warm: one container, trials and
    bare execs alternated. Cold: a fresh container per trial, for each transport."""
    engine = tempfile.mkdtemp(prefix="maka-bench-tls-")
    script = f"{ROOT}/tests/e2e/tls_engine.sh"
    env = {**os.environ, "MAKA_EVAL_E2E": "1"}
    subprocess.run([script, "start", engine], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        socket_host = f"unix://{engine}/docker.sock"
        port = open(f"{engine}/port").read().strip()
        transports = {
            "unix socket": {**os.environ, "DOCKER_HOST": socket_host},
            "mutual TLS": {**os.environ, "DOCKER_HOST": f"tcp://127.0.0.1:{port}", "DOCKER_TLS_VERIFY": "1",
                           "DOCKER_CERT_PATH": f"{engine}/good"},
        }

        def container(name):
            docker("-H", socket_host, "run", "-d", "--name", name, "maka-eval-test-busybox:test")
            return name

        def remove(name):
            docker("-H", socket_host, "rm", "-f", name, check=False)

        warm = container("maka-bench-tls-warm")
        walls = {t: [] for t in transports}
        bare = {t: [] for t in transports}
        calls = {t: [] for t in transports}
        try:
            run_trial(relay, warm, "true", env=transports["unix socket"])  # the one-time helper install
            for _ in range(repeats):
                for label, transport in transports.items():
                    wall, result, ph = run_trial(relay, warm, "true", env=transport)
                    assert result["executed"]["exitCode"] == 0, result
                    walls[label].append(wall * 1000)
                    calls[label].append(int(ph["done"]["engineCalls"]))
                    bare[label] += json.loads(subprocess.run(
                        [f"{build}/bench/maka-eval-bench", "bare-exec", warm, "1"], env=transport,
                        capture_output=True, text=True, check=True).stdout)
        finally:
            remove(warm)
        cold = {t: [] for t in transports}
        for i in range(repeats):
            for label, transport in transports.items():
                name = container(f"maka-bench-tls-cold-{label.split()[0]}{i}")
                try:
                    wall, result, _ = run_trial(relay, name, "true", env=transport)
                    assert result["executed"]["exitCode"] == 0, result
                    cold[label].append(wall * 1000)
                finally:
                    remove(name)
        sock, over = "unix socket", "mutual TLS"
        rows.append(("TLS engine, bare engine exec of `true`: unix socket | mutual TLS",
                     f"{fmt(bare[sock], 'ms')} | {fmt(bare[over], 'ms')}",
                     f"{statistics.median(bare[over]) / statistics.median(bare[sock]):.2f}× over TLS"))
        rows.append(("TLS engine, warm trial: unix socket | mutual TLS",
                     f"{fmt(walls[sock], 'ms')} | {fmt(walls[over], 'ms')}",
                     f"{statistics.median(walls[over]) / statistics.median(walls[sock]):.2f}× over TLS "
                     f"(+{statistics.median(walls[over]) - statistics.median(walls[sock]):.1f} ms); "
                     f"{statistics.median(calls[over]):.0f} engine calls over TLS"))
        rows.append(("TLS engine, cold trial (fresh container): unix socket | mutual TLS",
                     f"{fmt(cold[sock], 'ms')} | {fmt(cold[over], 'ms')}",
                     f"{statistics.median(cold[over]) / statistics.median(cold[sock]):.2f}× over TLS "
                     f"(+{statistics.median(cold[over]) - statistics.median(cold[sock]):.1f} ms)"))
    finally:
        subprocess.run([script, "stop", engine], env=env, check=False, stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", engine], check=False)


def bridge(build, repeats, rows):
    """Through the Harbor adapter and the bridge, with the Harbor-shaped stand-in (one `docker` CLI process
    per call): warm (a second trial in the same environment) and cold (a fresh environment per trial)."""
    sys.path[:0] = [f"{ROOT}/tests/relay/harbor/standins", f"{ROOT}/tests/relay/harbor", f"{ROOT}/relay/harbor"]
    import environments
    from maka_eval_relay import harbor as harbor_agent

    def trial(env):
        token = "bench-" + uuid.uuid4().hex
        orchestrator = subprocess.Popen([f"{build}/tests/maka-eval-test-orchestrator", "--", "true"],
                                        stdout=subprocess.PIPE, text=True,
                                        env={"PATH": "/usr/bin:/bin", "MAKA_EVAL_RELAY_TOKEN": token})
        port = int(orchestrator.stdout.readline().split()[1])
        agent = harbor_agent.RelayAgent(logs_dir=tempfile.mkdtemp(), relay_host="127.0.0.1", relay_port=port,
                                        relay_token=token, teardown_timeout_ms=110000,
                                        relay_binary=f"{build}/relay/maka-eval-relay", docker_fast_path=False)
        env.calls.clear()
        begun = time.monotonic()
        asyncio.run(agent.run("bench", env, None))
        wall = time.monotonic() - begun
        transcript = json.loads(orchestrator.communicate()[0].strip().splitlines()[-1])
        assert transcript["executed"]["exitCode"] == 0, transcript
        return wall * 1000, len(env.calls)

    def environment(tag):
        session = f"Bench__{tag}-{uuid.uuid4().hex[:6]}"
        return environments.start_compose_container(session), environments.DockerEnvironment(session)

    name, env = environment("warm")
    try:
        trial(env)  # the one-time helper install
        baseline = [cli_exec_ms(name) for _ in range(repeats)]
        walls, calls = zip(*(trial(env) for _ in range(repeats)))
    finally:
        environments.remove_container(name)
    cold_base, cold_walls, cold_calls = [], [], []
    for _ in range(repeats):
        fresh_a, _unused = environment("base")
        fresh_b, env_b = environment("cold")
        try:
            cold_base.append(cli_exec_ms(fresh_a))
            wall, n = trial(env_b)
            cold_walls.append(wall)
            cold_calls.append(n)
        finally:
            environments.remove_container(fresh_a)
            environments.remove_container(fresh_b)
    rows.append(("bare `docker exec … true` via the CLI (bridge baseline)", fmt(baseline, "ms"), ""))
    rows.append(("warm trial via the adapter (bridge), no-op subject", fmt(walls, "ms"),
                 f"{statistics.median(walls) / statistics.median(baseline):.2f}× baseline; "
                 f"{statistics.median(calls):.0f} environment calls (target 3)"))
    rows.append(("cold trial via the adapter (bridge), fresh environment", fmt(cold_walls, "ms"),
                 f"{statistics.median(cold_walls) / statistics.median(cold_base):.2f}× a fresh container's "
                 f"bare exec; {statistics.median(cold_calls):.0f} environment calls (target ≤ 4; the original: 7)"))


def podman(build, relay, repeats, rows):
    """Trials on Podman's Docker-compatible API beside the same on Docker, in one run. Each Podman mode is a
    service of tests/e2e/podman_service.sh (rootless: its own user, whose relay this is too). Per engine and
    repeat: a bare exec through the engine's API in a fresh container (the cold baseline); in another fresh
    container a cold trial (relay start → exit, the helper put in), then a warm one (the second trial there)
    and a bare exec there (the warm baseline)."""
    if shutil.which("podman") is None:
        rows.append(("Podman", "skipped: podman is not installed", ""))
        return
    script = f"{ROOT}/tests/e2e/podman_service.sh"
    env = {**os.environ, "MAKA_EVAL_E2E": "1"}
    engines = {"Docker": ("", [], [], dict(os.environ))}
    started = []
    try:
        for mode in ("rootful", "rootless"):
            d = tempfile.mkdtemp(prefix=f"maka-bench-podman-{mode}-")
            started.append(d)
            subprocess.run([script, "start", d, mode], env=env, check=True, stdout=subprocess.DEVNULL)
            if os.path.exists(f"{d}/skip"):
                rows.append((f"Podman {mode}", "skipped: " + open(f"{d}/skip").read().strip(), ""))
                continue
            host = open(f"{d}/socket").read().strip()
            prefix = []
            if mode == "rootless":
                uid, gid = open(f"{d}/user").read().strip().split(":")
                prefix = ["setpriv", "--reuid", uid, "--regid", gid, "--clear-groups", "--"]
            engines[f"Podman {mode}"] = (host, open(f"{d}/run-args").read().split(), prefix,
                                         {**os.environ, "DOCKER_HOST": host, "HOME": f"{d}/home"})
        for label, (host, run_args, prefix, relay_env) in engines.items():
            cli = ["-H", host] if host else []
            bare_env = {**os.environ, **({"DOCKER_HOST": host} if host else {})}

            def bare(name):
                return json.loads(subprocess.run([f"{build}/bench/maka-eval-bench", "bare-exec", name, "1"],
                                                 env=bare_env, capture_output=True, text=True,
                                                 check=True).stdout)[0]

            cold_base, warm_base, cold_walls, warm_walls, cold_calls, warm_calls = [], [], [], [], [], []
            for i in range(repeats):
                for kind in ("base", "trial"):
                    name = f"maka-bench-podman-{kind}{i}"
                    docker(*cli, "rm", "-f", name, check=False)
                    docker(*cli, "run", "-d", "--name", name, *run_args, "maka-eval-test-busybox:test")
                    try:
                        if kind == "base":
                            cold_base.append(bare(name))
                            continue
                        for walls, calls in ((cold_walls, cold_calls), (warm_walls, warm_calls)):
                            wall, result, ph = run_trial(relay, name, "true", env=relay_env, prefix=prefix)
                            assert result["executed"]["exitCode"] == 0, result
                            walls.append(wall * 1000)
                            calls.append(int(ph["done"]["engineCalls"]))
                        warm_base.append(bare(name))
                    finally:
                        docker(*cli, "rm", "-f", name, check=False)
            for kind, walls, base, calls in (("cold", cold_walls, cold_base, cold_calls),
                                             ("warm", warm_walls, warm_base, warm_calls)):
                rows.append((f"{label}: {kind} trial, relay start → exit", fmt(walls, "ms"),
                             f"{statistics.median(walls) / statistics.median(base):.2f}× a bare exec through its "
                             f"API ({statistics.median(base):.1f} ms); {statistics.median(calls):.0f} engine calls"))
    finally:
        for d in started:
            subprocess.run([script, "stop", d], env=env, check=False, stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", help="also write the table as Markdown to this file, headed by when, which "
                                      "commit and on what it ran (bench/run.sh: bench/results.md)")
    parser.add_argument("--only", help="one measurement: overhead, cold, cold-connect, cancel, capture, stdin, signing, memory, masking, credentials, concurrent, "
                                       "size, projection, tls, bridge, podman, versus")
    parser.add_argument("--concurrent", type=int, default=128, help="trials at once in `concurrent` (128)")
    parser.add_argument("--against", help="another build directory: `versus` compares warm and cold trials "
                                          "with its relay, and `cold-connect` pairs it in every round")
    args = parser.parse_args()
    relay = f"{args.build}/relay/maka-eval-relay"
    repeats = 5 if args.quick else 15
    rows = []
    other = f"{args.against}/relay/maka-eval-relay" if args.against else None
    measurements = {
        "overhead": lambda: overhead(args.build, relay, repeats, rows),
        "cold": lambda: cold(relay, repeats, rows),
        "cold-connect": lambda: cold_connect(args.build, relay, other, 11 if args.quick else 41, rows),
        "cancel": lambda: cancel(relay, 3 if args.quick else 5, rows),
        "capture": lambda: capture(relay, 3 if args.quick else 5, rows),
        "stdin": lambda: stdin_forwarding(relay, 3 if args.quick else 7, rows),
        "signing": lambda: signing(relay, 5 if args.quick else 20, rows),
        "memory": lambda: memory(relay, rows),
        "masking": lambda: masking(relay, rows),
        "credentials": lambda: credentials_at_scale(relay, 3 if args.quick else 7, rows),
        "concurrent": lambda: concurrent(relay, args.concurrent, rows),
        "size": lambda: helper_size(args.build, rows),
        "projection": lambda: projection(args.build, rows),
        "tls": lambda: tls(args.build, relay, repeats, rows),
        "bridge": lambda: bridge(args.build, repeats, rows),
        "podman": lambda: podman(args.build, relay, 5 if args.quick else 9, rows),
    }
    if args.against:
        measurements["versus"] = lambda: versus(relay, f"{args.against}/relay/maka-eval-relay", repeats, rows)
    elif args.only == "versus":
        parser.error("--only versus needs --against BUILD")
    if args.only and args.only not in measurements:
        parser.error(f"--only takes one of {', '.join(measurements)}")
    for name, measure in measurements.items():
        if args.only in (None, name):
            measure()
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measurement'.ljust(width)} | median (min–max) | against")
    print(f"{'-' * width}-|------------------|--------")
    for name, value, note in rows:
        print(f"{name.ljust(width)} | {value} | {note}")
    if args.out:
        write_results(args.out, rows, args)


def write_results(path, rows, args):
    """The table as the one file every doc's figures come from: a row per measurement, exactly as printed
    (a `|` inside a cell as `/`), headed by when, which commit and where it ran."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    engine = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True,
                            text=True).stdout.strip() or "?"
    against = f", against {os.path.relpath(args.against, root)}" if args.against else ""
    cell = lambda text: str(text).replace("|", "/")
    lines = [
        "# Benchmark results",
        "",
        "Written by `bash bench/run.sh` (bench/bench.py --out): the one place this project's measured figures",
        "live; README.md's table and the docs quote rows of it (tests/docs/figures_test.py checks they agree).",
        "",
        f"Ran {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at {commit}{' (with uncommitted changes)' if dirty else ''}"
        f"{against}; {os.cpu_count()} cores, Docker engine {engine}{', --quick' if args.quick else ''}.",
        "",
        "| measurement | median (min–max) | against the baseline of the same run; target |",
        "|---|---|---|",
    ]
    lines += [f"| {cell(name)} | {cell(value)} | {cell(note)} |" for name, value, note in rows]
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
