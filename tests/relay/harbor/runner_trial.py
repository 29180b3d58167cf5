"""One real trial through the runners kit's own ``trial.py`` (../shared/runners), with the trial's log
callbacks subscribed: run with the kit's Python (``$KIT_PYTHON``) after ``setup.sh``.

    runner_trial.py --kit DIR --log-entries FILE [--release-on TEXT --release-file PATH]
                    [--cancel-when PATH] -- TRIAL.PY-ARGS...

Every ``LogEntry`` the runner hands to a subscribed callback (Harbor 0.20/0.22 ``Trial.add_log_callback``,
``harbor/trial/trial.py:300`` / ``:355``) goes to FILE as one JSON line, with the time it arrived. When an
entry's text contains TEXT, PATH is created: a test's subject waits for that file (through the trial's
``/logs/agent`` bind mount) to show that its output reached the callback while it was still running.

With ``--trial-timeout-sec 987654`` the kit's whole-trial timeout (trial.py cancels ``trial.run()`` as a job's
Ctrl-C does, then waits for the runner to tear down) fires when PATH (``--cancel-when``) exists in the trial's
main container instead of after a fixed time: the subject creates it once it runs, so the cancellation
always meets a running subject. (Pier's ``/logs/agent`` is not writable by a non-root agent user, so the
marker is looked for in the container, by ``docker exec``, not through a bind mount.)

The only other thing added to the kit's run is the subscription: ``Trial.create`` is wrapped so the real trial it
returns gets ``add_log_callback`` (the runner's public API) before ``run()``. Pier 0.3 has no log callbacks:
there nothing is subscribed and FILE stays empty.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: runner_trial.py --log-entries FILE [--release-on TEXT --release-file PATH] -- ARGS",
              file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--log-entries", required=True)
    parser.add_argument("--release-on")
    parser.add_argument("--release-file")
    parser.add_argument("--kit", required=True)
    parser.add_argument("--cancel-when")
    ours = parser.parse_args(argv[:split])
    rest = argv[split + 1:]
    runner = rest[rest.index("--runner") + 1]
    entries = Path(ours.log_entries)
    entries.write_text("")

    sys.path.insert(0, ours.kit)
    kit = importlib.import_module("trial")
    trial_type = importlib.import_module(f"{runner}.trial.trial").Trial
    if callable(getattr(trial_type, "add_log_callback", None)):
        created = trial_type.create

        async def callback(entry) -> None:
            text = entry.text
            with entries.open("a") as out:
                out.write(json.dumps({"at": time.time(), "phase": entry.phase, "stream": entry.stream,
                                      "text": text, "trial_id": str(entry.trial_id),
                                      "step_name": entry.step_name}) + "\n")
            if ours.release_on and ours.release_on in text and ours.release_file:
                Path(ours.release_file).parent.mkdir(parents=True, exist_ok=True)
                Path(ours.release_file).write_text("released\n")

        async def create(*args, **kwargs):
            trial = await created(*args, **kwargs)
            trial.add_log_callback(callback)
            return trial

        trial_type.create = create
    if ours.cancel_when:
        name = rest[rest.index("--trial-name") + 1]
        kit.asyncio = _CancelOnFile(lambda: marker_in_container(kit, name, ours.cancel_when))
    return kit.main(rest)


CANCEL_ON_FILE = 987654.0  # the --trial-timeout-sec value that means "when the cancel file appears"
CANCEL_WAIT_LIMIT = 900.0  # never wait for it longer than this


def marker_in_container(kit, trial_name: str, path: str) -> bool:
    """Whether ``path`` exists in a running container of the trial's compose projects (the kit's lookup)."""
    for container in kit.trial_containers(trial_name):
        if container["status"].startswith("Up"):
            done = subprocess.run(["docker", "exec", container["id"], "test", "-e", path],
                                  capture_output=True, timeout=60, check=False)
            if done.returncode == 0:
                return True
    return False


class _CancelOnFile:
    """``asyncio`` as the kit's trial.py sees it, with one change: its ``wait_for`` of the whole trial under the
    timeout CANCEL_ON_FILE ends (``TimeoutError``, as the timeout would) once ``ready()`` says so."""

    def __init__(self, ready):
        self._ready = ready

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    async def wait_for(self, awaitable, timeout):
        if timeout != CANCEL_ON_FILE:
            return await asyncio.wait_for(awaitable, timeout)
        future = asyncio.ensure_future(awaitable)
        deadline = time.monotonic() + CANCEL_WAIT_LIMIT
        while not await asyncio.to_thread(self._ready):
            if future.done():
                return future.result()
            if time.monotonic() > deadline:
                break
            await asyncio.wait({future}, timeout=0.2)  # wakes at once when the trial ends first
        future.cancel()
        raise asyncio.TimeoutError


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
