"""The Harbor/Pier adapter (relay/harbor) with stand-in BaseAgent and environment classes.

``unit``: what needs no engine (construction, the missing relay binary). ``e2e``: whole trials through the
real relay, helper and orchestrator double, on a real Docker engine, with Harbor-shaped and Pier-shaped
environments (tests/relay/harbor/environments.py): the happy path, an ``execute`` refusal, the agent
timeout (the cancellation re-raised, ``framework_timeout`` reported), host teardown, a relay killed
mid-run, egress, the Docker fast path. Run as ``test_adapter.py unit|e2e [TEST_ID]``, ``--list`` to list;
``e2e`` exits 77 (skipped) unless MAKA_EVAL_E2E=1. Binaries come from MAKA_EVAL_TEST_RELAY and
MAKA_EVAL_TEST_ORCHESTRATOR.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# MAKA_EVAL_TEST_INSTALLED=1 (scripts/package.sh --check): the adapter as a user installed it, with the
# relay and helper its wheel carries, instead of the source tree's.
INSTALLED = os.environ.get("MAKA_EVAL_TEST_INSTALLED") == "1"
sys.path[:0] = [str(HERE / "standins"), str(HERE)] + ([] if INSTALLED else [str(ROOT / "relay" / "harbor")])

import environments  # noqa: E402
from environments import DockerEnvironment, PierDockerEnvironment, docker  # noqa: E402
from maka_eval_relay import agent as core  # noqa: E402
from maka_eval_relay import harbor as harbor_agent  # noqa: E402
from maka_eval_relay import pier as pier_agent  # noqa: E402

RELAY = os.environ.get("MAKA_EVAL_TEST_RELAY", "")
if INSTALLED:
    RELAY = core.locate_relay()  # the wheel's bundled relay, found as an installed adapter finds it
    assert "site-packages" in RELAY, RELAY
ORCHESTRATOR = os.environ.get("MAKA_EVAL_TEST_ORCHESTRATOR", "")
# The helper to upload (default: the relay's own): a sanitizer build's relay needs the static one.
HELPER = os.environ.get("MAKA_EVAL_TEST_HELPER") or None
RESULT_TOKEN = "0123456789abcdef0123456789abcdef"  # the orchestrator double's
CREDENTIAL = "adapter-credential-" + uuid.uuid4().hex


def frame(payload: str) -> str:
    raw = payload.encode()
    body = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return f"MAKA-EVAL-RESULT-V1 {RESULT_TOKEN} {len(raw)} {hashlib.sha256(raw).hexdigest()} {body}"


class Orchestrator:
    """maka-eval-test-orchestrator: listens, prints its port, then the transcript when the exchange ends."""

    def __init__(self, token: str, script: str, *args: str):
        self.process = subprocess.Popen(
            [ORCHESTRATOR, "--credential", "SECRET_KEY", *args, "--", "sh", "-c", script],
            stdout=subprocess.PIPE, text=True,
            env={"PATH": "/usr/bin:/bin", "MAKA_EVAL_RELAY_TOKEN": token, "SECRET_KEY": CREDENTIAL},
        )
        line = self.process.stdout.readline()
        assert line.startswith("port "), line
        self.port = int(line.split()[1])

    def transcript(self) -> dict:
        out, _ = self.process.communicate(timeout=60)
        return json.loads(out.strip().splitlines()[-1])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Untouchable:
    """An environment whose every operation fails the test when called (reading attributes is allowed)."""

    def __getattr__(self, name):
        if name.startswith("_") or name == "agent_process_env":  # Harbor-like: no Pier accessor
            raise AttributeError(name)

        def used(*args, **kwargs):
            raise AssertionError(f"the environment was used: {name}")

        return used


DOCKER_VARIABLES = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH", "DOCKER_CONFIG",
                    "DOCKER_CONTEXT")


def without_docker_variables(test: unittest.TestCase) -> None:
    """Unsets the docker CLI's variables for this test and puts them back after it."""
    saved = {name: os.environ.pop(name, None) for name in DOCKER_VARIABLES}

    def restore():
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value

    test.addCleanup(restore)


class UnitTest(unittest.TestCase):
    def agent(self, module=harbor_agent, **kwargs):
        options = dict(relay_host="127.0.0.1", relay_port=9, relay_token="t", teardown_timeout_ms=1000)
        options.update(kwargs)
        return module.RelayAgent(logs_dir=tempfile.mkdtemp(), model_name=None, **options)

    def test_name_version_and_the_original_kwargs(self):
        for module in (harbor_agent, pier_agent):
            agent = self.agent(module)
            self.assertEqual(agent.name(), "maka-eval-relay")
            self.assertEqual(agent.version(), "1")
            self.assertEqual(agent.framework, module.__name__.rsplit(".", 1)[1])
            self.assertIsNone(asyncio.run(agent.setup(object())))

    def test_an_invalid_teardown_timeout_is_refused_with_the_originals_text(self):
        for bad in (0, -5, 1.5, "100", None):
            with self.assertRaisesRegex(RuntimeError, "^Maka Eval teardown timeout is invalid$"):
                self.agent(teardown_timeout_ms=bad)
        self.agent(teardown_timeout_ms=True)  # a bool is an int, as in the original

    def test_a_relay_token_that_is_not_a_string_is_a_clear_error(self):
        # Harbor JSON-parses agent kwargs: --ak relay_token=12e34 arrives as the float 1.2e+35.
        for bad in (12e34, 1234, None, ""):
            with self.assertRaisesRegex(RuntimeError, "relay_token agent kwarg must be a non-empty string"):
                self.agent(relay_token=bad)

    def test_a_missing_relay_binary_is_a_clear_error_before_any_environment_call(self):

        for module in (harbor_agent, pier_agent):
            with self.assertRaisesRegex(RuntimeError, "maka-eval-relay was not found at /nonexistent/relay"):
                asyncio.run(self.agent(module, relay_binary="/nonexistent/relay").run("x", Untouchable(), None))
            saved = os.environ.get("PATH", "")
            os.environ["PATH"] = tempfile.mkdtemp()
            try:
                with self.assertRaisesRegex(RuntimeError, "pass relay_binary=PATH.*or on PATH"):
                    asyncio.run(self.agent(module).run("x", Untouchable(), None))
            finally:
                os.environ["PATH"] = saved

    @unittest.skipUnless(RELAY, "MAKA_EVAL_TEST_RELAY names the relay")
    def test_an_orchestrator_that_cannot_be_reached_raises_before_any_environment_call(self):
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]


        for module in (harbor_agent, pier_agent):
            agent = self.agent(module, relay_port=port, relay_binary=RELAY)
            with self.assertRaisesRegex(RuntimeError, "cannot connect to the orchestrator"):
                asyncio.run(agent.run("x", Untouchable(), None))

    def test_the_compose_project_is_harbors_sanitized_session_id(self):
        for session_id, project in (("Maka.Task__ABC", "maka-task__abc"), ("_x", "0_x"), ("-a", "0-a"),
                                    ("Ünï", "0-n-"), ("9lives", "9lives"), ("a b/c", "a-b-c")):
            self.assertEqual(core.compose_project_name(session_id), project)
            self.assertEqual(environments.compose_project(session_id), project)  # the stand-in's own copy

    def test_the_task_environment_is_the_runners_merge(self):
        env = DockerEnvironment("s", persistent_env={"A": "1", "B": "2"})
        self.assertEqual(core.task_environment(env), {"A": "1", "B": "2"})
        self.assertEqual(core.task_environment(DockerEnvironment("s")), {})

        class Older:  # a runner without _merge_env: its _persistent_env
            _persistent_env = {"C": "3"}

        self.assertEqual(core.task_environment(Older()), {"C": "3"})
        self.assertEqual(core.task_environment(object()), {})

    def test_the_task_environment_under_pier_is_pier_s_agent_order(self):
        # pier/agents/installed/base.py:336: exec(env=agent_process_env(extra_env)), then _merge_env: the task's
        # persistent variables, under the proxy's, under the agent's own.
        env = PierDockerEnvironment("s", persistent_env={"NO_PROXY": "task", "T": "t"},
                                    agent_env={"NO_PROXY": "proxy", "HTTPS_PROXY": "proxy-url"})
        self.assertEqual(core.task_environment(env, {"HTTPS_PROXY": "agent"}),
                         {"NO_PROXY": "proxy", "T": "t", "HTTPS_PROXY": "agent"})
        self.assertEqual(core.task_environment(PierDockerEnvironment("s")), {})

    def test_live_output_goes_to_the_callback_as_harbor_streams_an_exec(self):
        long_line = "x" * (150 * 1024) + "\n"
        data = ("one\n" + long_line + "é" * 40000 + "\ntail").encode()
        got: list[tuple[str, str]] = []

        async def emit(text: str, stream: str) -> None:
            got.append((text, stream))

        async def scenario() -> None:
            read, write = os.pipe()
            writer = asyncio.get_running_loop().run_in_executor(None, lambda: (os.write(write, data),
                                                                               os.close(write)))
            await core.stream_output(read, emit, logging.getLogger("test"))
            await writer

        asyncio.run(scenario())
        self.assertEqual("".join(text for text, _ in got), data.decode())
        self.assertEqual({stream for _, stream in got}, {"stdout"})
        self.assertEqual(got[0][0], "one\n")
        self.assertTrue(all(len(text.encode()) <= core.CALLBACK_LINE_LIMIT for text, _ in got))

    def test_a_failing_callback_is_dropped_and_the_output_still_read(self):
        calls = []

        async def emit(text: str, stream: str) -> None:
            calls.append(text)
            raise RuntimeError("subscriber failed")

        async def scenario() -> None:
            read, write = os.pipe()
            os.write(write, b"a\nb\nc\n")
            os.close(write)
            await core.stream_output(read, emit, logging.getLogger("test"))

        with self.assertLogs("test", level="ERROR"):
            asyncio.run(scenario())
        self.assertEqual(calls, ["a\n"])

    def test_an_environment_not_named_dockerenvironment_takes_the_bridge(self):
        self.assertEqual(core.docker_target(PierDockerEnvironment("s"), "/nonexistent-relay")[0], None)

        class DockerEnvironment:  # the right name, but not Harbor's shape
            container_name = "c"

        target, why = core.docker_target(DockerEnvironment(), "/nonexistent-relay")  # never asked
        self.assertIsNone(target)
        self.assertIn("type()", why)

    @unittest.skipUnless(RELAY, "MAKA_EVAL_TEST_RELAY names the relay")
    def test_the_fast_paths_container_lookup_is_the_relays_own(self):
        # One Docker client: the adapter asks `maka-eval-relay locate`, which reads the docker CLI's variables
        # and contexts as the docker backend does (their own tests: tests/relay/engine). What the relay
        # refuses reaches the log's "why the bridge" line word for word.
        without_docker_variables(self)
        os.environ["DOCKER_CONFIG"] = "/nonexistent-maka-eval-test-config"  # no context of this machine's
        env = DockerEnvironment("Lookup.Test")
        for variables, said in (({"DOCKER_HOST": "tcp://engine.example:2376"}, "2376 is the engine's TLS port"),
                                ({"DOCKER_HOST": "tcp://engine.example:2375", "DOCKER_TLS": "1"},
                                 "asks for TLS without checking who the engine is"),
                                ({"DOCKER_HOST": "unix:///nonexistent-maka-eval.sock"},
                                 "nonexistent-maka-eval.sock")):
            os.environ.update(variables)
            target, why = core.docker_target(env, RELAY)
            self.assertIsNone(target)
            self.assertIn(said, why)
            self.assertNotIn("maka-eval-relay: ", why)
            for name in variables:
                os.environ.pop(name)
        self.assertEqual(env.calls, [])

    @unittest.skipUnless(RELAY, "MAKA_EVAL_TEST_RELAY names the relay")
    def test_locate_names_its_own_options_and_needs_a_project(self):
        done = subprocess.run([RELAY, "locate"], capture_output=True, text=True, check=False)
        self.assertEqual((done.returncode, done.stdout), (2, ""))
        self.assertIn("locate needs --compose-project", done.stderr)
        done = subprocess.run([RELAY, "locate", "--compose-project", "p", "--user", "x"], capture_output=True,
                              text=True, check=False)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not --user", done.stderr)
        done = subprocess.run([RELAY, "locate", "--help"], capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0)
        self.assertIn("--compose-project P", done.stdout)
        self.assertNotIn("--teardown-timeout-ms", done.stdout)

    @unittest.skipUnless(RELAY, "MAKA_EVAL_TEST_RELAY names the relay")
    def test_locate_answers_within_its_engine_timeout_when_the_engine_never_does(self):
        # The adapter keeps no clock for `locate` (compose_container): the relay's own deadline must end it.
        # An engine that accepts the connection and never says a word; the relay is given 300 ms.
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "engine.sock")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(4)
            try:
                done = subprocess.run([RELAY, "locate", "--compose-project", "p", "--docker-host", f"unix://{path}",
                                       "--engine-timeout-ms", "300"], capture_output=True, text=True, check=False,
                                      timeout=120)  # a test's guard only: the relay must end far sooner
            finally:
                listener.close()
        self.assertEqual((done.returncode, done.stdout), (5, ""), done.stderr)
        self.assertIn("within 300 ms", done.stderr)

    def test_the_adapter_answers_every_golden_bridge_request_within_the_reply_schema(self):
        # The adapter's half of the bridge contract (contracts/bridge_messages.hpp): each request line the
        # relay writes (tests/contracts/vectors/bridge-messages.jsonl, whose bytes the C++ tests produce)
        # reaches the environment as the runner's own call, and every reply it writes, success or failure,
        # has only the reply schema's keys, of their types, with the request's id.
        vectors = [json.loads(line) for line in
                   (ROOT / "tests" / "contracts" / "vectors" / "bridge-messages.jsonl").read_text().splitlines()]
        schema = json.loads((ROOT / "contracts" / "schema" / "bridge-reply.schema.json").read_text())
        types = {"boolean": bool, "integer": int, "string": str}

        class Result:
            return_code, stdout, stderr = 3, "out \u00e9", "err"

        class Env:
            def __init__(self, fail: bool):
                self.fail, self.calls = fail, []

            async def _call(self, *call):
                self.calls.append(call)
                if self.fail:
                    raise RuntimeError("Command timed out after 60 seconds")
                return Result()

            async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
                return await self._call("exec", command, cwd, timeout_sec, user)

            async def service_exec(self, command, service):
                return await self._call("service_exec", service, command)

            async def upload_file(self, source, target):
                return await self._call("upload", str(source), target)

            async def stop(self, delete):
                return await self._call("stop", delete)

        class Writer:
            def __init__(self):
                self.lines = []

            def is_closing(self):
                return False

            def write(self, data):
                self.lines.append(data.decode())

            async def drain(self):
                pass

        requests = [json.loads(v["line"]) for v in vectors if v["schema"] != "bridge-reply"]
        self.assertEqual(len(requests), 6)
        for fail in (False, True):
            env = Env(fail)
            bridge = core._Bridge(None, env, "harbor")
            bridge._writer = Writer()
            for request in requests:
                asyncio.run(bridge._answer(request))
            self.assertEqual(len(bridge._writer.lines), len(requests))
            for request, line in zip(requests, bridge._writer.lines):
                with self.subTest(op=request["op"], fail=fail):
                    self.assertTrue(line.endswith("\n") and line.count("\n") == 1)
                    reply = json.loads(line)
                    self.assertEqual(reply["id"], request["id"])
                    self.assertTrue(set(schema["required"]) <= set(reply) <= set(schema["properties"]), reply)
                    for key, value in reply.items():
                        self.assertIsInstance(value, types[schema["properties"][key]["type"]], key)
                    self.assertEqual(reply["ok"], not fail)
                    if not fail and request["op"] in ("exec", "service_exec"):
                        self.assertEqual((reply["returnCode"], reply["stdout"]), (3, "out \u00e9"))
            if not fail:  # what the environment was asked: the request's own fields, as the runner takes them
                run = requests[0]
                self.assertEqual(env.calls[0], ("exec", run["command"], run["cwd"], None, run["user"]))
                self.assertEqual(env.calls[1], ("exec", requests[1]["command"], None, 60, None))
                self.assertIn(("service_exec", "harbor-docker-egress-control-sidecar",
                               "readlink /proc/self/ns/net"), env.calls)
                self.assertIn(("upload", requests[4]["source"], requests[4]["target"]), env.calls)
                self.assertEqual(env.calls[-1], ("stop", True))

    def test_pier_refuses_service_exec_clearly(self):
        bridge = core._Bridge(None, PierDockerEnvironment("unused"), "pier")
        reply = asyncio.run(bridge._service_exec({"command": "true", "service": "s"}))
        self.assertFalse(reply["ok"])
        self.assertIn("pier environments have no service_exec", reply["error"])


def private_tempdir(test: unittest.TestCase) -> str:
    """A temporary directory for this test alone, used by the adapter (tempfile) and the relay (TMPDIR).

    Other tests running in parallel write their own ``maka-eval-*`` files into the shared /tmp, so "nothing
    left on the host" can only be judged in a directory nobody else uses.
    """
    private = tempfile.mkdtemp(prefix="adapter-test-")
    saved_env, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir

    def restore() -> None:
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        shutil.rmtree(private, True)

    test.addCleanup(restore)
    os.environ["TMPDIR"] = tempfile.tempdir = private
    return private


class ScriptedBridge:
    """The adapter's side of the bridge, played by the test: each request is answered as the test says.

    With it a test can put replies in an order the real adapter produces only by chance: the environment's
    ``stop`` answered while the subject's run exec is still in flight, the run's reply after that.
    """

    HELLO = json.dumps({"kind": "hello", "version": 1, "helper": "0.1.0", "cwd": "/", "pid": 7, "uid": 0,
                        "gid": 0, "capabilities": {k: "0000000000000000" for k in
                                                   ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
                        "netns": "net:[4026531833]", "supervisorUid": 0})

    def __init__(self, test: unittest.TestCase, orchestrator: "Orchestrator | None", token: str,
                 run: tuple[str, ...] = ()):
        """``connect`` to `orchestrator`, or with `run` set, ``maka-eval-relay run RUN`` (its own orchestrator)."""
        ours, theirs = socket.socketpair()
        test.addCleanup(ours.close)
        mode = (["run", *run[:-1]] if run else
                ["connect", "--host", "127.0.0.1", "--port", str(orchestrator.port), "--teardown-timeout-ms", "1500"])
        self.relay = subprocess.Popen(
            [RELAY, *mode, "--env", "bridge", "--bridge-fd", str(theirs.fileno()),
             *(["--helper", HELPER] if HELPER else []), *(["--", "sh", "-c", run[-1]] if run else [])],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
            env={"PATH": "/usr/bin:/bin", "MAKA_EVAL_RELAY_TOKEN": token,
                 **{k: v for k, v in os.environ.items() if k.startswith(("ASAN_", "UBSAN_", "LSAN_"))}})
        theirs.close()
        test.addCleanup(lambda: self.relay.poll() is None and self.relay.kill())
        self._in = ours.makefile("r", encoding="utf-8")
        self._out = ours.makefile("w", encoding="utf-8")

    def request(self) -> dict:
        line = self._in.readline()
        if not line:
            raise AssertionError("the relay closed the bridge")
        return json.loads(line)

    def reply(self, request_id: int, **fields) -> None:
        self._out.write(json.dumps({"id": request_id, "ok": True, **fields}) + "\n")
        self._out.flush()

    def exited(self, request_id: int, **fields) -> None:
        self.reply(request_id, **{"returnCode": 0, "stdout": "", "stderr": "", **fields})

    def answer_setup(self, req: dict) -> bool:
        """Answers what comes before the run (the probe with HELLO, an upload); False for anything else."""
        if req["op"] == "exec" and (req.get("command") or "").endswith("'probe'"):
            self.exited(req["id"], stdout=self.HELLO + "\n")
        elif req["op"] == "upload":
            self.reply(req["id"])
        else:
            return False
        return True


@unittest.skipUnless(RELAY and ORCHESTRATOR, "MAKA_EVAL_TEST_RELAY and MAKA_EVAL_TEST_ORCHESTRATOR name the binaries")
class BridgeReplyOrderTest(unittest.TestCase):
    def test_the_run_answered_after_the_environment_was_destroyed_touches_nothing_freed(self):
        """The trial ends (and frees its helper session) on the ``stop`` reply; the run exec answers later.

        The coroutine that waited for that answer must not use the freed session (ASan reports it in the
        sanitizer build), and the relay must still exit, with the cancellation's code.
        """
        token = "bridge-order-" + uuid.uuid4().hex
        orchestrator = Orchestrator(token, "sleep 60")
        self.addCleanup(orchestrator.close)
        bridge = ScriptedBridge(self, orchestrator, token)
        run_id = None
        while True:
            req = bridge.request()
            command = req.get("command") or ""
            if bridge.answer_setup(req):
                continue
            if req["op"] == "exec" and "'run'" in command:
                run_id = req["id"]  # left in flight, as a subject that runs on
                bridge.relay.send_signal(signal.SIGTERM)  # the trial runner's timeout
            elif req["op"] == "exec" and "'cancel'" in command:
                bridge.exited(req["id"], returnCode=1, stderr="cannot reach the supervisor")
            elif req["op"] == "exec" and "'rm'" in command:
                bridge.exited(req["id"])
            elif req["op"] == "stop":
                bridge.reply(req["id"])
                break
            else:
                raise AssertionError(f"unexpected request {req}")
        self.assertIsNotNone(run_id)
        # The trial is over (its last log line) before the run's answer arrives.
        log = []
        while not (log and log[-1].startswith("maka-eval-relay: done")):
            line = bridge.relay.stderr.readline()
            self.assertTrue(line, "the relay ended its log without 'done': " + "".join(log))
            log.append(line)
        exited = json.dumps({"kind": "exited", "exitCode": 143, "signal": "TERM"})
        # The relay gives up what is in flight once its trial is over and closes the bridge: the late answer
        # may find it closed. Either way it must touch nothing freed.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            bridge.exited(run_id, returnCode=143, stdout=exited + "\n")
        _, rest = bridge.relay.communicate(timeout=60)
        err = "".join(log) + rest
        self.assertNotIn("AddressSanitizer", err)
        self.assertNotIn("runtime error", err)
        self.assertEqual(bridge.relay.returncode, 6, err)  # cancelled (SIGTERM)


@unittest.skipUnless(RELAY, "MAKA_EVAL_TEST_RELAY names the relay")
class BridgeFollowTest(unittest.TestCase):
    def test_run_follow_on_the_bridge_says_it_is_not_available_and_the_trial_runs(self):
        """The trial runner returns an exec's output only when it ends: following cannot be offered there."""
        bridge = ScriptedBridge(self, None, "unused", run=("--follow", "true"))
        golden = (ROOT / "tests" / "contracts" / "vectors" / "session-messages.jsonl").read_text().splitlines()
        report = next(line for line in golden if line.startswith('{"kind":"exited"'))
        while True:
            req = bridge.request()
            if bridge.answer_setup(req):
                continue
            if req["op"] == "exec" and "'run'" in (req.get("command") or ""):
                bridge.exited(req["id"], stdout=report + "\n")
                break
            elif req["op"] == "exec":
                bridge.exited(req["id"])
            else:
                raise AssertionError(f"unexpected request {req}")
        _, err = bridge.relay.communicate(timeout=60)
        self.assertEqual(bridge.relay.returncode, 0, err)
        self.assertIn("follow: not available on the bridge", err)
        self.assertIn("(its runner returns output only when the exec ends)", err)


class Trial:
    """One container, one orchestrator double, one agent, and the trial's logger (``trial_log()``: what the
    runner's trial.log holds)."""

    def __init__(self, test: unittest.TestCase, module, script: str, *orchestrator_args: str,
                 run_args: tuple[str, ...] = (), fast_path: bool = False, teardown_ms: int = 30000,
                 default_user: str | None = None, task_env: dict[str, str] | None = None,
                 sidecars: dict[str, str] | None = None, workdir: str | None = None,
                 agent_env: dict[str, str] | None = None, extra_env: dict[str, str] | None = None,
                 mount_logs: bool = False):
        self.token = "adapter-token-" + uuid.uuid4().hex
        # As Harbor names them ("<task>__<trial id>"): upper case and dots exercise the project sanitizing.
        self.session_id = f"Maka.Task__{uuid.uuid4().hex[:8].upper()}"
        self.logs = Path(tempfile.mkdtemp())
        test.addCleanup(shutil.rmtree, self.logs, True)
        if mount_logs:  # as the runners do: the agent's logs_dir is the container's /logs/agent
            run_args = ("-v", f"{self.logs}:/logs/agent", *run_args)
        # /logs/artifacts as each runner leaves it: 777 in Harbor 0.20, root 755 in Pier.
        self.container = environments.start_compose_container(
            self.session_id, *run_args, artifacts_mode="777" if module is harbor_agent else "755")
        test.addCleanup(environments.remove_container, self.container)
        if workdir:
            self.sh(f"mkdir -p {workdir}")
        self.orchestrator = Orchestrator(self.token, script, *orchestrator_args)
        test.addCleanup(self.orchestrator.close)
        self.env = (DockerEnvironment(self.session_id, default_user=default_user, persistent_env=task_env,
                                      sidecars=sidecars, workdir=workdir) if module is harbor_agent
                    else PierDockerEnvironment(self.session_id, default_user=default_user, persistent_env=task_env,
                                               workdir=workdir, agent_env=agent_env))
        self.trial_log_path = Path(tempfile.mkdtemp()) / "trial.log"
        test.addCleanup(shutil.rmtree, self.trial_log_path.parent, True)
        logger = logging.getLogger(f"harbor.trial.{self.session_id}")
        logger.setLevel(logging.DEBUG)
        handler = logging.FileHandler(self.trial_log_path)
        logger.addHandler(handler)
        test.addCleanup(logger.removeHandler, handler)
        test.addCleanup(handler.close)
        extra = {"extra_env": extra_env} if extra_env is not None else {}
        self.agent = module.RelayAgent(
            logs_dir=self.logs, model_name="m", logger=logger, relay_host="127.0.0.1",
            relay_port=self.orchestrator.port, relay_token=self.token, teardown_timeout_ms=teardown_ms,
            relay_binary=RELAY, helper_binary=HELPER, docker_fast_path=fast_path, **extra)

    def trial_log(self) -> str:
        for handler in logging.getLogger(f"harbor.trial.{self.session_id}").handlers:
            handler.flush()
        return self.trial_log_path.read_text()

    def run(self, instruction: str = "do the task"):
        return asyncio.run(self.agent.run(instruction, self.env, None))

    def sh(self, script: str, user: str = "0") -> subprocess.CompletedProcess[str]:
        return docker("exec", "-u", user, self.container, "sh", "-c", script, check=False)

    def processes(self) -> list[str]:
        listing = self.sh("ps -o args")
        assert listing.returncode == 0, listing.stderr  # a probe that cannot run must fail the test
        return [line.strip() for line in listing.stdout.splitlines()]

    def no_process_soon(self, command_line: str, seconds: float = 5.0) -> bool:
        # A zombie shows as "[name]" in BusyBox ps: it never matches a command line, so it counts as gone.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if command_line not in self.processes():
                return True
            time.sleep(0.05)
        return command_line not in self.processes()

    async def kill_relay_when_running(self, command_line: str) -> None:
        """Runs the trial and SIGKILLs the relay once `command_line` runs in the container."""
        task = asyncio.create_task(self.agent.run("do the task", self.env, None))
        for _ in range(400):
            if command_line in self.processes():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"{command_line} never ran")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if int(parent) == os.getpid() and command[0] == RELAY.encode():
                    os.kill(int(pid), signal.SIGKILL)
        await task

    def relay_log(self) -> str:
        path = self.logs / "maka-eval-relay.log"
        return path.read_text() if path.exists() else ""

    async def cancel_when_running(self, host_teardown: bool = False, marker: str = "/logs/agent/.maka-eval-*.pid"):
        task = asyncio.create_task(self.agent.run("do the task", self.env, None))
        for _ in range(400):
            if self.sh(f"cat {marker} 2>/dev/null").returncode == 0:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the subject never started")
        if host_teardown:
            core.request_host_teardown()
        task.cancel()
        await task  # must raise CancelledError


class Scenarios:
    """The same trials under Harbor and under Pier (``module``)."""

    module = harbor_agent

    def test_happy_path_frame_artifacts_and_no_secret_left(self):
        completed = frame('{"status":"completed"}')
        script = (f'echo noise; echo to-stderr >&2; [ "$SECRET_KEY" = {CREDENTIAL} ] && echo credential-ok; '
                  f"echo '{completed}'")
        host_tmp = private_tempdir(self)
        t = Trial(self, self.module, script)
        self.assertIsNone(t.run())
        transcript = t.orchestrator.transcript()
        self.assertEqual(transcript["ready"]["instruction"], "do the task")
        self.assertEqual(transcript["ready"]["cwd"], "/")
        executed = transcript["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("exited", 0))
        self.assertEqual(executed["stdout"], '{"status":"completed"}')
        # The noise counts as unstructured output: stderr, then stdout's lines other than the frame (as the
        # original's carrier, into which Harbor merges stderr, counted them); the frame is stdout's.
        noise = "to-stderr\n" + "noise\ncredential-ok\n"
        self.assertEqual(executed["diagnostic"]["category"], "unstructured-output")
        self.assertEqual(executed["diagnostic"]["bytes"], len(noise))
        self.assertEqual(executed["diagnostic"]["sha256"], hashlib.sha256(noise.encode()).hexdigest())
        self.assertTrue(transcript["verifySent"])
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout.split("\n")[:2],
                         ["noise", "credential-ok"])
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stderr.txt").stdout, "to-stderr\n")
        # The run request (credentials) was unlinked, the scope file removed; nothing on the host either.
        self.assertEqual(t.sh("ls -a / /tmp /logs/agent | grep maka-eval | grep -v '^.maka-eval-helper-' || true")
                         .stdout, "")
        self.assertEqual([name for name in os.listdir(host_tmp) if name.startswith("maka-eval")], [])
        self.assertNotIn(CREDENTIAL, t.relay_log())
        self.assertNotIn(t.token, t.relay_log())
        self.assertIn('"backend":"bridge', t.relay_log())
        # A fresh environment: the helper goes in first, then probe, request upload, run (the original: 7).
        first = list(t.env.calls)
        self.assertEqual(first, ["upload_file", "exec", "upload_file", "exec"])
        # A second trial in the same environment finds the helper: probe, request upload, run.
        t.env.calls.clear()
        again = Orchestrator(t.token, "exit 3")
        self.addCleanup(again.close)
        t.agent._port = again.port
        self.assertIsNone(t.run())
        self.assertEqual(again.transcript()["executed"]["exitCode"], 3)
        self.assertEqual(t.env.calls, ["exec", "upload_file", "exec"])

    def test_a_helper_removed_between_trials_is_installed_again_after_the_probe(self):
        t = Trial(self, self.module, "exit 0")
        self.assertIsNone(t.run())
        self.assertEqual(t.sh("rm /.maka-eval-helper-*").returncode, 0)
        t.env.calls.clear()
        again = Orchestrator(t.token, "exit 4")
        self.addCleanup(again.close)
        t.agent._port = again.port
        self.assertIsNone(t.run())
        self.assertEqual(again.transcript()["executed"]["exitCode"], 4)
        self.assertEqual(t.env.calls, ["exec", "upload_file", "exec", "upload_file", "exec"])

    def test_an_execute_refusal_raises_with_the_originals_text_and_runs_nothing(self):
        raw = json.dumps({"command": "sh", "args": ["-c", "touch /tmp/ran"], "environment": {"1BAD": "x"},
                          "credentials": {}, "resultToken": RESULT_TOKEN})
        t = Trial(self, self.module, "unused", "--raw-execute", raw)
        with self.assertRaisesRegex(RuntimeError, "invalid Maka Eval environment name"):
            t.run()
        self.assertIsNone(t.orchestrator.transcript()["executed"])
        self.assertNotEqual(t.sh("test -e /tmp/ran").returncode, 0)

    def test_agent_timeout_reraises_the_cancellation_and_reports_framework_timeout(self):
        t = Trial(self, self.module, "sleep 3601")
        with self.assertRaises(asyncio.CancelledError):
            asyncio.run(t.cancel_when_running())
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("framework_timeout", 124))
        self.assertEqual(executed["diagnostic"]["category"], "result-frame-missing")
        self.assertTrue(t.no_process_soon("sleep 3601"))
        self.assertEqual(t.sh("ls -a /tmp | grep maka-eval-run || true").stdout, "")

    @staticmethod
    def stall_cancels(t: "Trial") -> None:
        """The runner stops answering the relay's cancel exec (an engine that hangs): no settle can finish."""
        exec_ = t.env.exec

        async def stalled(command: str, **kwargs):
            if "'cancel'" in command.split():
                await asyncio.sleep(120)
            return await exec_(command, **kwargs)

        t.env.exec = stalled

    def test_a_flood_of_helper_lines_past_the_bridges_capacity_arrives_whole_and_in_order(self):
        # The run's whole output reaches the relay at once when its exec ends: 40 lines ahead of the report,
        # more than the 16 the relay takes before the trial reads any. None may be lost, the end of the
        # session (after the report) least of all: the trial then completes as usual.
        completed = frame('{"flood":1}')
        t = Trial(self, self.module, f"echo '{completed}'")
        exec_ = t.env.exec

        async def flooding(command: str, **kwargs):
            result = await exec_(command, **kwargs)
            if "'run'" in command.split():
                flood = "".join(json.dumps({"kind": "error", "version": 1, "code": "bad-request",
                                            "message": f"flood {i:02d}"}) + "\n" for i in range(40))
                result.stdout = flood + (result.stdout or "")
            return result

        t.env.exec = flooding
        self.assertIsNone(t.run())
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("exited", 0))
        self.assertEqual(executed["stdout"], '{"flood":1}')
        log = t.relay_log()
        self.assertEqual(re.findall(r"helper: flood (\d\d)", log), [f"{i:02d}" for i in range(40)])

    def test_a_term_ignoring_subject_in_a_2_s_budget_is_settled_without_destroy(self):
        # The graces are fitted inside the budget (TERM 720 ms, KILL 400 ms): the settle fits, so no destroy.
        t = Trial(self, self.module, "trap '' TERM; touch /tmp/trapped; sleep 3610", teardown_ms=2000)
        started = time.monotonic()
        with self.assertRaises(asyncio.CancelledError):
            asyncio.run(t.cancel_when_running(marker="/tmp/trapped"))
        self.assertLess(time.monotonic() - started, 10)
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("framework_timeout", 124))
        self.assertNotIn("stop", t.env.calls)
        self.assertIn('"phase":"graces"', t.relay_log())
        self.assertTrue(t.no_process_soon("sleep 3610", seconds=1))
        self.assertEqual(t.sh("true").returncode, 0)  # the container is still there

    def test_a_settle_that_cannot_finish_in_the_budget_gets_the_environment_destroyed(self):
        # The runner never answers the cancel: the relay stops the environment (stop(delete=True)) within
        # the budget and still reports framework_timeout.
        t = Trial(self, self.module, "trap '' TERM; touch /tmp/trapped; sleep 3605", teardown_ms=2000)
        self.stall_cancels(t)
        started = time.monotonic()
        with self.assertRaises(asyncio.CancelledError):
            asyncio.run(t.cancel_when_running(marker="/tmp/trapped"))
        # Start-up (about 2 s) and the 2 s budget: the unanswered cancel holds nothing past it.
        self.assertLess(time.monotonic() - started, 8)
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("framework_timeout", 124))
        self.assertIn("stop", t.env.calls)
        self.assertIn('"phase":"destroy"', t.relay_log())
        self.assertNotEqual(docker("inspect", t.container, check=False).returncode, 0)  # removed

    def test_a_destroy_the_relay_stopped_waiting_for_still_completes(self):
        # The relay bounds its stop(delete=True) by what is left of the budget (here about 0.4 s): a runner
        # whose stop takes longer must still remove the environment after the relay has gone.
        t = Trial(self, self.module, "trap '' TERM; touch /tmp/trapped; sleep 3606", teardown_ms=2000)
        self.stall_cancels(t)
        stop = t.env.stop

        async def slow_stop(delete: bool) -> None:
            await asyncio.sleep(1.5)
            await stop(delete)

        t.env.stop = slow_stop
        with self.assertRaises(asyncio.CancelledError):
            asyncio.run(t.cancel_when_running(marker="/tmp/trapped"))
        self.assertIn('"phase":"destroy"', t.relay_log())
        self.assertNotEqual(docker("inspect", t.container, check=False).returncode, 0)  # removed

    def test_the_runners_wait_for_sees_the_timeout(self):
        # Harbor 0.20 runs the agent under asyncio.wait_for (Pier alike): a swallowed cancellation would return normally.
        t = Trial(self, self.module, "sleep 3602")

        async def harbor_trial():
            await asyncio.wait_for(t.agent.run("do the task", t.env, None), timeout=6)

        with self.assertRaises(asyncio.TimeoutError):
            asyncio.run(harbor_trial())
        self.assertEqual(t.orchestrator.transcript()["executed"]["termination"], "framework_timeout")
        self.assertTrue(t.no_process_soon("sleep 3602"))

    def test_host_teardown_settles_the_subject_and_reports_nothing(self):
        t = Trial(self, self.module, "sleep 3603")
        try:
            with self.assertRaises(asyncio.CancelledError):
                asyncio.run(t.cancel_when_running(host_teardown=True))
        finally:
            core._host_teardown_requested = False
        self.assertIsNone(t.orchestrator.transcript()["executed"])
        self.assertTrue(t.no_process_soon("sleep 3603"))
        self.assertIn('"reason":"host-teardown"', t.relay_log())

    def test_a_killed_relay_leaves_nothing_running(self):
        t = Trial(self, self.module, "sleep 3604")
        with self.assertRaisesRegex(RuntimeError, "exited with status -9"):
            asyncio.run(t.kill_relay_when_running("sleep 3604"))
        self.assertTrue(t.no_process_soon("sleep 3604"))

    def test_the_task_workdir_is_ready_cwd_and_the_subjects_directory(self):
        # The runner's exec defaults to task_env_config.workdir; the bridge's probe and run take that default.
        t = Trial(self, self.module, "pwd", workdir="/srv/task")
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["ready"]["cwd"], "/srv/task")
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout, "/srv/task\n")
        self.assertIn('"backend":"bridge', t.relay_log())

    def test_a_loud_subject_keeps_every_line_the_runner_reads_under_64_kib(self):
        # The stand-in's exec fails on any output line over 64 KiB, as Harbor's does with log callbacks set.
        payload = "\x01" * 2048  # the largest payload, each byte escaped to six in the report's JSON
        script = ("head -c 1048576 /dev/zero | tr '\\0' a; echo; head -c 61440 /dev/zero | tr '\\0' e >&2; "
                  f"echo >&2; echo '{frame(payload)}'")
        t = Trial(self, self.module, script)
        self.assertIsNone(t.run())
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("exited", 0))
        self.assertEqual(t.sh("wc -c < /logs/artifacts/maka-subject.stdout.txt").stdout.strip(),
                         str(1048576 + 1 + len(frame(payload)) + 1))
        self.assertEqual(t.sh("wc -c < /logs/artifacts/maka-subject.stderr.txt").stdout.strip(), "61441")
        # The frame sits past the carrier's 64 KiB: the verdict is the original's for such output.
        self.assertEqual(executed["diagnostic"]["category"], "result-frame-oversize")

    def test_a_small_frame_after_a_long_stderr_line_is_decoded_on_the_bridge(self):
        payload = "\x01" * 2048
        script = f"head -c 61440 /dev/zero | tr '\\0' e >&2; echo >&2; echo '{frame(payload)}'"
        t = Trial(self, self.module, script)
        self.assertIsNone(t.run())
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual(executed["stdout"], payload)
        # The long stderr line cannot break the frame (stdout's alone); it is noise, as the original's merged
        # carrier counted it: stderr's 61,441 bytes, then stdout's noise (none).
        stderr_text = "e" * 61440 + "\n"
        self.assertEqual(executed["diagnostic"], {"category": "unstructured-output", "bytes": len(stderr_text),
                                                  "sha256": hashlib.sha256(stderr_text.encode()).hexdigest()})

    def test_the_runners_wait_for_around_a_term_ignoring_subject_ends_within_the_budget(self):
        # Harbor's agent timeout is asyncio.wait_for around run(): the subject ignores TERM, so settling
        # takes the TERM grace and a KILL, inside the 30 s teardown budget and without destroying anything.
        t = Trial(self, self.module, "trap '' TERM; touch /tmp/trapped; sleep 3609", teardown_ms=30000)
        timed_out_at: list[float] = []

        async def harbor_trial():
            run = asyncio.ensure_future(t.agent.run("do the task", t.env, None))
            for _ in range(400):
                if t.sh("test -e /tmp/trapped").returncode == 0:
                    break
                await asyncio.sleep(0.05)
            try:
                await asyncio.wait_for(asyncio.shield(run), timeout=0.5)
            except asyncio.TimeoutError:
                timed_out_at.append(time.monotonic())
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
                raise

        with self.assertRaises(asyncio.TimeoutError):
            asyncio.run(harbor_trial())
        self.assertLess(time.monotonic() - timed_out_at[0], 30)
        self.assertEqual(t.orchestrator.transcript()["executed"]["termination"], "framework_timeout")
        self.assertTrue(t.no_process_soon("sleep 3609", seconds=1))
        self.assertNotIn("stop", t.env.calls)
        self.assertEqual(t.sh("true").returncode, 0)  # the container is still there

    def test_the_relay_log_is_out_of_the_subjects_reach(self):
        # logs_dir is the container's /logs/agent (777): the log is written once the subject is settled,
        # and a symlink the subject planted under its name is replaced, never followed to a host file.
        host_dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, host_dir, True)
        victim = host_dir / "host-file"
        victim.write_text("untouched")
        script = f"ls -a /logs/agent > /tmp/seen; ln -sf {victim} /logs/agent/maka-eval-relay.log"
        t = Trial(self, self.module, script, mount_logs=True)
        self.assertIsNone(t.run())
        self.assertEqual(victim.read_text(), "untouched")
        self.assertNotIn("maka-eval-relay.log", t.sh("cat /tmp/seen").stdout)
        log = t.logs / "maka-eval-relay.log"
        self.assertFalse(log.is_symlink())
        self.assertIn('"phase":"executed"', log.read_text())

    def _as_default_user(self, default_user: str | None, fast_path: bool, expected_ids: str, supervisor: str):
        t = Trial(self, self.module, 'echo "$(id -u):$(id -g) $TASK_VAR $MODE $HOME"', "-e", "MODE=from-execute",
                  fast_path=fast_path, default_user=default_user,
                  task_env={"TASK_VAR": "from-task", "MODE": "from-task"})
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["executed"]["exitCode"], 0)
        home = "/tmp" if expected_ids.startswith("1000") else "/root"
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout,
                         f"{expected_ids} from-task from-execute {home}\n")
        self.assertIn(f'"supervisor":"{supervisor}"', t.relay_log())
        self.assertIn('"backend":"docker' if fast_path else '"backend":"bridge', t.relay_log())
        self.assertEqual(t.env.calls == [], fast_path)
        # The task's values never reach a command line: only the relay's descriptor carried them.
        self.assertNotIn("from-task", t.relay_log())

    def test_a_non_root_subject_on_the_bridge_cannot_stop_its_supervisor_or_read_the_request(self):
        script = ("kill -9 $PPID 2>/dev/null; kill -STOP $PPID 2>/dev/null; "
                  "cat /.maka-eval-run-* 2>/dev/null | wc -c; echo done")
        t = Trial(self, self.module, script, default_user="agent")
        self.assertIsNone(t.run())
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("exited", 0))
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout, "0\ndone\n")
        self.assertEqual(t.sh("ls -a / /tmp | grep maka-eval-run || true").stdout, "")
        self.assertIn('"supervisor":"root"', t.relay_log())



class HarborTest(Scenarios, unittest.TestCase):
    module = harbor_agent

    def test_the_fast_path_takes_the_one_running_container_of_the_service(self):
        # The relay's lookup (`locate`) is the only one: two running containers of the service leave which
        # is meant to a guess, so the bridge serves the trial (the reason logged); a stopped one is not
        # counted, as `docker compose exec` does not pick it.
        session = "Two." + uuid.uuid4().hex[:8]
        first, second = (environments.start_compose_container(session) for _ in range(2))
        for name in (first, second):
            self.addCleanup(environments.remove_container, name)
        target, why = core.docker_target(DockerEnvironment(session), RELAY)
        self.assertIsNone(target)
        self.assertIn(f"2 running containers of compose project {core.compose_project_name(session)} "
                      "service main: which one is meant cannot be told", why)
        environments.docker("stop", "-t", "0", second)
        target, why = core.docker_target(DockerEnvironment(session), RELAY)
        first_id = environments.docker("inspect", "-f", "{{.Id}}", first).stdout.strip()
        self.assertEqual(target, ["--env", f"docker:{first_id}"])
        environments.docker("stop", "-t", "0", first)
        target, why = core.docker_target(DockerEnvironment(session), RELAY)
        self.assertIsNone(target)
        self.assertIn("0 running containers of compose project", why)

    def test_a_uid_1000_subject_reads_its_root_uploaded_request(self):
        t = Trial(self, self.module, "id -u; echo $SECRET_KEY | wc -c", run_args=("--user", "1000:1000"))
        # As Harbor's mounted /logs: the subject's user may restrict its own artifact directory.
        self.assertEqual(t.sh("chown 1000:1000 /logs/artifacts").returncode, 0)
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["executed"]["exitCode"], 0)
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout.split(),
                         ["1000", str(len(CREDENTIAL) + 1)])

    def test_egress_required_checks_through_service_exec_and_pins_the_proxy(self):
        sidecar = environments.start_container("--cap-drop", "NET_RAW")
        self.addCleanup(environments.remove_container, sidecar)
        t = Trial(self, self.module, "grep maka-eval-mitmproxy /etc/hosts",
                  run_args=("--network", f"container:{sidecar}", "--cap-drop", "NET_RAW"),
                  sidecars={"harbor-docker-egress-control-sidecar": sidecar})
        self.assertEqual(t.sh("mkdir -p /opt/maka-egress && echo 172.18.0.2 > /opt/maka-egress/proxy-ipv4")
                         .returncode, 0)
        os.environ["MAKA_EVAL_EGRESS_REQUIRED"] = "1"
        try:
            self.assertIsNone(t.run())
        finally:
            del os.environ["MAKA_EVAL_EGRESS_REQUIRED"]
        self.assertEqual(t.orchestrator.transcript()["executed"]["exitCode"], 0)
        self.assertIn("service_exec", t.env.calls)
        self.assertEqual(t.sh("tail -1 /etc/hosts").stdout, "172.18.0.2 maka-eval-mitmproxy\n")

    def test_the_docker_fast_path_is_found_by_harbors_own_attributes(self):
        fast = frame('{"fast":true}')
        t = Trial(self, self.module, f"echo '{fast}'", fast_path=True)
        self.assertFalse(hasattr(t.env, "container_name"))  # the real class has no container attribute
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["executed"]["stdout"], '{"fast":true}')
        self.assertEqual(t.env.calls, [])  # not one call through the environment object
        self.assertIn('"backend":"docker', t.relay_log())
        self.assertIn("Docker fast path: compose project", t.trial_log())
        self.assertEqual(core.compose_project_name(t.session_id), environments.compose_project(t.session_id))

    def test_the_stand_in_exec_fails_as_harbors_does_on_a_long_line_and_on_its_timeout(self):
        # What the tests above rely on: a line over 64 KiB makes exec raise, one under it does not, and a
        # timeout raises Harbor's RuntimeError while the command runs on in the container.
        t = Trial(self, self.module, "exit 0", workdir="/srv/task")
        result = asyncio.run(t.env.exec("head -c 61440 /dev/zero | tr '\\0' a; echo; pwd"))
        self.assertEqual(result.stdout.splitlines()[1:], ["/srv/task"])
        with self.assertRaises(ValueError):
            asyncio.run(t.env.exec("head -c 70000 /dev/zero | tr '\\0' a"))
        with self.assertRaisesRegex(RuntimeError, "^Command timed out after 1 seconds$"):
            asyncio.run(t.env.exec("sleep 3611", timeout_sec=1))
        self.assertIn("sleep 3611", t.processes())
        self.assertFalse(hasattr(t.env, "is_mounted"))  # 0.20: capabilities.mounted
        self.assertTrue(t.env.capabilities.mounted)
        self.assertEqual(t.sh("stat -c %a /logs/artifacts").stdout.strip(), "777")
        source = Path(tempfile.mkdtemp()) / "payload"
        self.addCleanup(shutil.rmtree, source.parent, True)
        source.write_text("uploaded")
        asyncio.run(t.env.upload_file(source, "/opt/made/by/upload/payload"))  # a missing directory
        self.assertEqual(t.sh("cat /opt/made/by/upload/payload").stdout, "uploaded")

    def test_the_task_workdir_is_ready_cwd_and_the_subjects_directory_on_the_fast_path(self):
        t = Trial(self, self.module, "pwd", workdir="/srv/task", fast_path=True)
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["ready"]["cwd"], "/srv/task")
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout, "/srv/task\n")
        self.assertEqual(t.env.calls, [])
        self.assertIn('"backend":"docker', t.relay_log())

    def test_harbors_extra_env_reaches_the_subject_as_the_runners_merge_overlay(self):
        t = Trial(self, self.module, 'echo "$EXTRA $TASK_VAR $MODE"', "-e", "MODE=from-execute", fast_path=True,
                  task_env={"TASK_VAR": "from-task", "MODE": "from-task"},
                  extra_env={"EXTRA": "from-extra", "TASK_VAR": "overlaid"})
        self.assertIsNone(t.run())
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout,
                         "from-extra overlaid from-execute\n")
        self.assertNotIn("from-extra", t.relay_log())

    def test_an_agents_api_key_in_extra_env_is_masked_out_of_the_artifacts_on_both_paths(self):
        for fast_path in (True, False):
            with self.subTest(fast_path=fast_path):
                t = Trial(self, self.module, 'echo "key=$ANTHROPIC_API_KEY mode=$MODE"', fast_path=fast_path,
                          extra_env={"ANTHROPIC_API_KEY": "sk-ant-canary-0123456789", "MODE": "graded"})
                self.assertIsNone(t.run())
                self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout,
                                 "key=*** mode=graded\n")
                self.assertNotIn("sk-ant-canary", t.relay_log())

    def test_without_its_container_the_fast_path_falls_back_to_the_bridge_and_says_why(self):
        t = Trial(self, self.module, "exit 0", fast_path=True)
        t.env.session_id = "Another__Session"  # no compose project of that name runs
        t.env._DockerEnvironment__container = t.container  # the stand-in still reaches its container
        self.assertIsNone(t.run())
        # In the runner's own log (the trial's logger), where a Harbor user reads why.
        self.assertIn("through the environment object (the bridge): 0 running containers of compose project "
                      "another__session", t.trial_log())
        self.assertIn("exec", t.env.calls)
        self.assertIn('"backend":"bridge', t.relay_log())

    def test_the_subject_runs_as_a_non_root_default_user_with_the_task_env_on_the_fast_path(self):
        self._as_default_user("agent", True, "1000:1000", "root")

    def test_the_subject_runs_as_a_non_root_default_user_with_the_task_env_on_the_bridge(self):
        self._as_default_user("agent", False, "1000:1000", "root")

    def test_the_subject_runs_as_root_with_the_task_env_on_the_fast_path(self):
        self._as_default_user(None, True, "0:0", "root-subject")

    def test_the_subject_runs_as_root_with_the_task_env_on_the_bridge(self):
        self._as_default_user("root", False, "0:0", "root-subject")

    def test_a_root_subject_that_kills_its_supervisor_on_the_bridge_is_settled_not_destroyed(self):
        t = Trial(self, self.module, "sleep 3607 & kill -9 $PPID; sleep 3608")
        with self.assertRaisesRegex(RuntimeError, "stopped through a fresh cancel"):
            t.run()
        self.assertNotIn("stop", t.env.calls)  # never destroyed
        self.assertTrue(t.no_process_soon("sleep 3607"))
        self.assertTrue(t.no_process_soon("sleep 3608"))
        self.assertEqual(t.sh("true").returncode, 0)  # the container is still there

    def test_a_root_subject_deleting_the_helper_and_its_scope_is_settled_on_cancel_not_destroyed(self):
        # A root subject can delete anything: the cancel puts the helper in again and finds the supervisor
        # by its run's request (its command line), not by the scope file.
        script = ("rm -f /.maka-eval-helper-* /logs/agent/.maka-eval-*.pid; touch /tmp/deleted; "
                  "trap '' TERM; sleep 3613")
        t = Trial(self, self.module, script, teardown_ms=10000)
        with self.assertRaises(asyncio.CancelledError):
            asyncio.run(t.cancel_when_running(marker="/tmp/deleted"))
        self.assertEqual(t.sh("ls /.maka-eval-helper-* /logs/agent/.maka-eval-*.pid 2>/dev/null").stdout.count("pid"), 0)
        executed = t.orchestrator.transcript()["executed"]
        self.assertEqual((executed["termination"], executed["exitCode"]), ("framework_timeout", 124))
        self.assertNotIn("stop", t.env.calls)  # settled, never destroyed
        self.assertTrue(t.no_process_soon("sleep 3613", seconds=1))
        self.assertEqual(t.sh("true").returncode, 0)  # the container is still there

    def test_a_root_subject_deleting_the_helper_and_its_scope_is_settled_after_a_killed_relay(self):
        # The adapter's abandon command gets the helper again before it runs.
        t = Trial(self, self.module, "rm -f /.maka-eval-helper-* /logs/agent/.maka-eval-*.pid; sleep 3614")
        with self.assertRaisesRegex(RuntimeError, "exited with status -9"):
            asyncio.run(t.kill_relay_when_running("sleep 3614"))
        self.assertTrue(t.no_process_soon("sleep 3614", seconds=15))

    def test_a_non_root_subject_cannot_hide_from_the_dead_man_switch_by_deleting_its_scope(self):
        # The scope record is root's (/run/maka-eval): the subject's attempts fail, and when the relay is
        # SIGKILLed the adapter's abandon cancel (as root) still finds and settles it.
        script = ("rm -f /logs/agent/.maka-eval-*.pid /run/maka-eval/* /tmp/.maka-eval-state/* 2>/dev/null; "
                  "sleep 3606")
        t = Trial(self, self.module, script, default_user="agent")
        with self.assertRaisesRegex(RuntimeError, "exited with status -9"):
            asyncio.run(t.kill_relay_when_running("sleep 3606"))
        self.assertTrue(t.no_process_soon("sleep 3606", seconds=15))


class HarborRemoteEngineTest(unittest.TestCase):
    """Harbor's DockerEnvironment on a remote engine reached over mutual TLS, as the docker CLI (and so
    Harbor's ``docker compose``) reaches it: DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH. The engine is
    tests/e2e/tls_engine.sh's (a ctest fixture); the stand-in's own docker CLI calls go there too."""

    def setUp(self):
        engine = Path(os.environ["MAKA_EVAL_TLS_ENGINE"])
        without_docker_variables(self)
        os.environ.update(DOCKER_HOST=f"tcp://127.0.0.1:{(engine / 'port').read_text().strip()}",
                          DOCKER_TLS_VERIFY="1", DOCKER_CERT_PATH=str(engine / "good"))

    def test_the_fast_path_finds_the_container_on_a_remote_engine_over_tls(self):
        fast = frame('{"remote":true}')
        t = Trial(self, harbor_agent, f"echo '{fast}'", fast_path=True)
        self.assertIsNone(t.run())
        self.assertEqual(t.orchestrator.transcript()["executed"]["stdout"], '{"remote":true}')
        self.assertEqual(t.env.calls, [])  # found on the remote engine: nothing through the environment object
        self.assertIn('"backend":"docker', t.relay_log())
        self.assertIn(os.environ["DOCKER_HOST"] + ", mutual TLS", t.relay_log())


class PierTest(Scenarios, unittest.TestCase):
    module = pier_agent

    def test_egress_required_is_refused_clearly_without_service_exec(self):
        t = Trial(self, self.module, "exit 0")
        os.environ["MAKA_EVAL_EGRESS_REQUIRED"] = "1"
        try:
            with self.assertRaisesRegex(RuntimeError, "pier environments have no service_exec"):
                t.run()
        finally:
            del os.environ["MAKA_EVAL_EGRESS_REQUIRED"]
        self.assertIsNone(t.orchestrator.transcript()["ready"])

    def test_a_non_root_default_user_runs_under_a_root_supervisor(self):
        # Pier's exec takes user= as Harbor's does: root steps, the subject as the default user.
        self._as_default_user("agent", False, "1000:1000", "root")

    def test_the_proxy_settings_of_agent_process_env_reach_the_subject(self):
        # Under Pier's filtered egress the proxy reaches agents only through agent_process_env(env).
        proxy = {"HTTPS_PROXY": "http://egress-proxy:3128", "NO_PROXY": "localhost"}
        t = Trial(self, self.module, 'echo "$HTTPS_PROXY $NO_PROXY $TASK_VAR"', default_user="agent",
                  task_env={"TASK_VAR": "from-task"}, agent_env=proxy)
        self.assertIsNone(t.run())
        self.assertEqual(t.sh("cat /logs/artifacts/maka-subject.stdout.txt").stdout,
                         "http://egress-proxy:3128 localhost from-task\n")
        self.assertNotIn("egress-proxy", t.relay_log())


def suites() -> dict[str, unittest.TestSuite]:
    loader = unittest.TestLoader()
    return {"unit": unittest.TestSuite([loader.loadTestsFromTestCase(UnitTest),
                                        loader.loadTestsFromTestCase(BridgeReplyOrderTest),
                                        loader.loadTestsFromTestCase(BridgeFollowTest)]),
            "e2e": unittest.TestSuite([loader.loadTestsFromTestCase(HarborTest),
                                       loader.loadTestsFromTestCase(PierTest)]),
            # Needs the TLS engine too (ctest gives MAKA_EVAL_TLS_ENGINE).
            "e2e_tls": unittest.TestSuite([loader.loadTestsFromTestCase(HarborRemoteEngineTest)])}


def flatten(suite: unittest.TestSuite) -> list[unittest.TestCase]:
    out = []
    for item in suite:
        out += flatten(item) if isinstance(item, unittest.TestSuite) else [item]
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for kind, suite in suites().items():
            for case in flatten(suite):
                print(kind, case.id().split(".", 1)[1])
        return 0
    kind = argv[0] if argv else "unit"
    if kind.startswith("e2e") and os.environ.get("MAKA_EVAL_E2E") != "1":
        return 77  # skipped: no engine prepared for this run
    selected = [case for case in flatten(suites()[kind]) if len(argv) < 2 or case.id().endswith("." + argv[1])]
    if not selected:
        print(f"no such test: {argv[1:]}", file=sys.stderr)
        return 2
    result = unittest.TextTestRunner(verbosity=2).run(unittest.TestSuite(selected))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
