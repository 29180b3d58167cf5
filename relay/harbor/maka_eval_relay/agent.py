"""The adapter between a trial runner (Harbor 0.20, Pier 0.3) and the C++ ``maka-eval-relay``.

``run()`` starts ``maka-eval-relay connect`` and serves the relay's requests on the trial runner's
environment object over a socketpair (the bridge, in ``bridge``; protocol in
``contracts/bridge_messages.hpp``): exec, upload_file, service_exec (Harbor only) and stop(delete=True). Everything about the trial itself — the
orchestrator protocol, the egress gate, supervising and settling the subject — happens in the relay and
the helper. When the environment is Harbor's DockerEnvironment (found by Harbor's own attributes: its
``type()`` and ``session_id``, whose compose project's service ``main`` the relay itself looks up on the
engine with ``maka-eval-relay locate`` — the project keeps one Docker client, the relay's), the relay is
handed the container instead (``--env docker:…``, the subject as ``default_user``), which skips the
bridge; the reason for taking the bridge instead is logged. Either way the task's environment
(``_merge_env``) reaches the subject, under what the orchestrator's ``execute`` sets.

Secrets stay off argv: the relay token goes in the relay's environment, the instruction in a 0600 file
removed as soon as the relay has read it, the task's environment through a pipe.

Cancellation is the original's: a cancelled ``run()`` (Harbor's agent timeout) sends SIGTERM to the relay,
which settles the subject and reports ``framework_timeout``; after ``request_host_teardown()`` it is SIGINT,
which settles and reports nothing. The adapter keeps serving the relay while it stops, waits for it within
the teardown budget, and always re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import shutil
import signal
import re
import socket
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable

from .bridge import ABANDON_SEC, _accepts, _Bridge

RELAY_BINARY = "maka-eval-relay"
# The relay's exit codes (README): 3 is transport loss, which the original answers by returning normally.
EXIT_SUCCESS, EXIT_TRANSPORT_LOST, EXIT_CANCELLED, EXIT_HOST_TEARDOWN = 0, 3, 6, 7
# How long past the teardown budget a stopping relay may take before it is killed.
STOP_MARGIN_SEC = 15.0
LOG_LINE_LIMIT = 1024 * 1024
# The signed result (sign_key_file=…) in the agent's log directory: a DSSE envelope, one line;
# `maka-eval-relay verify --key PUB.pem` checks it.
ATTESTATION_NAME = "maka-eval-attestation.dsse.json"
# The relay's log kept for maka-eval-relay.log (a trial's log is a few KiB; this bounds a runaway).
LOG_FILE_LIMIT = 16 * 1024 * 1024

_log = logging.getLogger("maka_eval_relay")
_host_teardown_requested = False


def request_host_teardown() -> None:
    """Called by the trial runner's signal handler before it cancels the trial (sticky, as the original's)."""
    global _host_teardown_requested
    _host_teardown_requested = True


def locate_relay(explicit: str | None = None) -> str:
    """The relay binary: the explicit option, else the one the wheel bundles, else beside this adapter, else on
    PATH."""
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise RuntimeError(f"maka-eval-relay was not found at {explicit} (the relay_binary option)")
    here = Path(__file__).resolve().parent
    # The wheel carries the relay and the static helper in bin/ (the relay finds the helper beside itself).
    for candidate in (here / "bin" / RELAY_BINARY, here / RELAY_BINARY, here.parent / RELAY_BINARY):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(RELAY_BINARY)
    if found:
        return found
    raise RuntimeError(
        f"maka-eval-relay was not found: pass relay_binary=PATH, put it in {here.parent} "
        "beside the adapter, or on PATH"
    )


class RelayAgentCore:
    """The agent; ``maka_eval_relay.harbor`` and ``.pier`` put it on their framework's BaseAgent."""

    framework = "harbor"

    def __init__(
        self,
        *args: Any,
        relay_host: str,
        relay_port: int,
        relay_token: str,
        teardown_timeout_ms: int,
        relay_binary: str | None = None,
        helper_binary: str | None = None,
        helper_in_container: str | None = None,
        docker_fast_path: bool = True,
        sign_key_file: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        if not isinstance(teardown_timeout_ms, int) or teardown_timeout_ms <= 0:
            raise RuntimeError("Maka Eval teardown timeout is invalid")
        if not isinstance(relay_token, str) or not relay_token:
            # Harbor JSON-parses --ak values: a token such as 12e34 arrives as a float, 0123 fails to parse.
            raise RuntimeError(
                f"the relay_token agent kwarg must be a non-empty string, not {type(relay_token).__name__}: "
                "quote it so the runner does not read it as a number (--ak 'relay_token=\"12e34\"')")
        # Both factories pass AgentConfig.env as extra_env (harbor/agents/factory.py, pier/agents/factory.py:
        # 122-137); Pier's BaseAgent ignores it (its installed agents keep it), so it is taken here for both.
        extra_env = kwargs.get("extra_env")
        self._extra_env = {str(k): str(v) for k, v in extra_env.items()} if isinstance(extra_env, dict) else {}
        self._host = relay_host
        self._port = relay_port
        self._token = relay_token
        self._teardown_ms = teardown_timeout_ms
        self._relay_binary = relay_binary
        self._helper_binary = helper_binary
        self._helper_in_container = helper_in_container
        self._docker_fast_path = docker_fast_path
        # The relay signs what it observed with this Ed25519 key (maka-eval-relay keygen; a 0600 file of the
        # runner's user): the envelope lands in the agent's log directory as ATTESTATION_NAME.
        self._sign_key_file = sign_key_file

    @staticmethod
    def name() -> str:
        return "maka-eval-relay"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: Any) -> None:
        return None

    def _logger(self) -> Any:
        """The runner's logger (Harbor's ``self.logger`` is what reaches the trial's trial.log), else ours."""
        logger = getattr(self, "logger", None)
        return logger if callable(getattr(logger, "info", None)) else _log

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        binary = locate_relay(self._relay_binary)
        log = self._logger()
        argv = [binary, "connect", "--host", str(self._host), "--port", str(self._port),
                "--teardown-timeout-ms", str(self._teardown_ms), "--log-format", "json"]
        if self._helper_binary:
            argv += ["--helper", self._helper_binary]
        if self._helper_in_container:
            argv += ["--helper-in-container", self._helper_in_container]
        direct = None
        if self._docker_fast_path:
            direct, why = await asyncio.to_thread(docker_target, environment, binary)
            if direct:
                log.info("maka-eval-relay: Docker fast path: %s", why)
            else:
                log.info("maka-eval-relay: through the environment object (the bridge): %s", why)
        ours = theirs = None
        emit = None
        follow_read = follow_write = None
        if direct:
            argv += direct
            emit = output_callback(environment)
            if emit is not None:
                # The trial subscribed to its output (Harbor's add_log_callback): the subject's, live.
                follow_read, follow_write = os.pipe()
                argv += ["--follow-fd", str(follow_write)]
        else:
            ours, theirs = socket.socketpair()
            argv += ["--env", "bridge", "--bridge-fd", str(theirs.fileno())]
            if callable(getattr(environment, "exec", None)) and _accepts(environment.exec, "user"):
                # Root steps are possible: the subject runs as the default user under a root supervisor.
                argv += ["--bridge-switches-user"]
            if not _served_before(environment):
                # One environment per trial is the normal case: put the helper in first (one upload)
                # rather than learn from a failing probe that it is missing.
                argv += ["--bridge-fresh"]
        # The task's environment goes on a pipe, never on a command line; the relay reads it at start.
        task_env = task_environment(environment, self._extra_env)
        env_read = env_write = None
        if task_env:
            env_read, env_write = os.pipe()
            argv += ["--task-env-fd", str(env_read)]
            # Agents get their API keys this way (Harbor's extra_env): masked out of the artifacts like
            # execute's credentials. Only the names go on the command line.
            for name in sorted(secret_names(task_env)):
                argv += ["--mask", name]
        inherited = tuple(fd for fd in (theirs.fileno() if theirs else None, env_read, follow_write)
                          if fd is not None)
        signed_dir = None
        if self._sign_key_file:
            # The relay writes the envelope on this host, in a directory only we can enter; it is published
            # into the log directory once the relay has exited (as the log: a subject may write there).
            signed_dir = tempfile.mkdtemp(prefix="maka-eval-attestation-")
            argv += ["--sign-key", str(self._sign_key_file), "--attestation",
                     os.path.join(signed_dir, ATTESTATION_NAME)]
        handle, instruction_path = tempfile.mkstemp(prefix="maka-eval-instruction-")  # 0600
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(instruction)
        argv += ["--instruction-file", instruction_path]

        def forget_instruction() -> None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(instruction_path)

        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                limit=LOG_LINE_LIMIT,
                env={**os.environ, "MAKA_EVAL_RELAY_TOKEN": str(self._token)},
                pass_fds=inherited,
            )
        except BaseException:
            forget_instruction()
            for end in (ours, theirs):
                if end is not None:
                    end.close()
            for fd in (env_write, follow_read):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            if theirs is not None:
                theirs.close()
            for fd in (env_read, follow_write):
                if fd is not None:
                    os.close(fd)
        if env_write is not None:
            payload = json.dumps(task_env).encode()
            await asyncio.to_thread(_write_and_close, env_write, payload)
        bridge = _Bridge(ours, environment, self.framework, log) if ours else None
        serving = asyncio.create_task(bridge.serve()) if bridge else None
        following = asyncio.create_task(self._follow(process.stderr, forget_instruction, log))
        streaming = asyncio.create_task(stream_output(follow_read, emit, log)) if follow_read is not None else None
        try:
            try:
                code = await process.wait()
            except asyncio.CancelledError:
                await self._stop(process)
                raise
            errors, phases = await following
        finally:
            forget_instruction()
            if signed_dir is not None:
                self._publish_attestation(signed_dir, log)
            # The relay has exited: the bridge is at EOF (what the relay left in flight is settled there) and
            # its log is complete. A cancellation arriving meanwhile waits for this cleanup, then goes on.
            cancelled = False
            for task, budget in ((serving, ABANDON_SEC + 30), (following, 5.0), (streaming, 5.0)):
                if task is None:
                    continue
                try:
                    await asyncio.wait_for(asyncio.shield(task), budget)
                except asyncio.CancelledError:
                    cancelled = True
                except asyncio.TimeoutError:
                    log.warning("maka-eval-relay: the bridge or log reader did not finish within %.0f s", budget)
                except Exception:  # never lost: the trial goes on, but the failure is in the runner's log
                    log.exception("maka-eval-relay: the bridge or log reader failed")
                task.cancel()
            if cancelled:
                raise asyncio.CancelledError()
        # Transport loss after connecting returns, as in the original; failing to connect at all raised there.
        if code == EXIT_SUCCESS or (code == EXIT_TRANSPORT_LOST and "connected" in phases):
            if code == EXIT_TRANSPORT_LOST:
                log.warning("maka-eval-relay: %s", errors[-1] if errors else "transport lost")
            return None
        final = errors[-1] if errors else f"maka-eval-relay exited with status {code}"
        detail = "; ".join(errors[:-1])
        raise RuntimeError(f"{final} ({detail})" if detail else final)

    def _publish_attestation(self, signed_dir: str, log: Any) -> None:
        """The signed result into the agent's log directory (the runner's trial folder), then its scratch gone."""
        source = Path(signed_dir) / ATTESTATION_NAME
        logs_dir = getattr(self, "logs_dir", None)
        try:
            if source.exists() and logs_dir is not None:
                _publish(Path(logs_dir), ATTESTATION_NAME, source.read_bytes())
            elif logs_dir is not None:
                log.warning("maka-eval-relay: no signed result was made (the relay's log says why)")
        except OSError as error:
            log.warning("maka-eval-relay: cannot write the signed result into %s: %s", logs_dir, error)
        finally:
            shutil.rmtree(signed_dir, ignore_errors=True)

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        """SIGTERM (agent timeout) or SIGINT (host teardown), then wait within the teardown budget."""
        sent = signal.SIGINT if _host_teardown_requested else signal.SIGTERM
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sent)
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), self._teardown_ms / 1000 + STOP_MARGIN_SEC)
        except BaseException:  # out of budget, or cancelled again: the relay must not outlive the trial
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(process.wait())

    async def _follow(self, stream: asyncio.StreamReader, on_first: Callable[[], None],
                      log: Any) -> tuple[list[str], set[str]]:
        """Reads the relay's JSON phase log into the runner's log; returns its error messages and the phases it
        went through. The log file (``maka-eval-relay.log`` in the agent's log directory) is written once
        the relay has exited, when the subject has been settled: under Harbor that directory is the
        container's /logs/agent (mode 777), which a subject could read and rewrite while it runs."""
        errors: list[str] = []
        phases: set[str] = set()
        kept: list[bytes] = []
        size = 0
        try:
            first = True
            while True:
                try:
                    line = await stream.readline()
                except ValueError:  # a line past LOG_LINE_LIMIT: not the relay's log
                    continue
                if not line:
                    break
                if first:
                    on_first()  # the relay has read its options, the instruction file among them
                    first = False
                if size + len(line) <= LOG_FILE_LIMIT:
                    kept.append(line)
                    size += len(line)
                text = line.decode("utf-8", "replace").rstrip("\n")
                try:
                    entry = json.loads(text)
                except ValueError:
                    entry = {"level": "error", "message": text}
                if not isinstance(entry, dict):
                    continue
                phases.add(str(entry.get("phase")))
                if entry.get("level") == "error":
                    errors.append(str(entry.get("message", text)))
                    log.error("maka-eval-relay: %s", entry.get("message", text))
                else:
                    log.info("maka-eval-relay: %s", text)
        finally:
            logs_dir = getattr(self, "logs_dir", None)
            if logs_dir is not None:
                try:
                    _publish(Path(logs_dir), "maka-eval-relay.log", b"".join(kept))
                except OSError as error:
                    log.warning("maka-eval-relay: cannot write its log into %s: %s", logs_dir, error)
        return errors, phases


# Harbor reads an exec's output line by line with asyncio's default 64 KiB stream limit
# (harbor/environments/docker/docker.py:716, `async for raw_line in stdout_stream`); a longer line is handed
# on in pieces of this size rather than failing the exec as it would there.
CALLBACK_LINE_LIMIT = 64 * 1024


def output_callback(environment: Any) -> Callable[[str, str], Any] | None:
    """The trial's subscribed output callbacks as one (Harbor 0.20/0.22 ``BaseEnvironment._output_callback``,
    ``harbor/environments/base.py:486``: set by ``Trial._log_context`` through ``scoped_output_callback``
    while the agent runs), or None when nothing is subscribed or the runner has no such thing (Pier)."""
    getter = getattr(environment, "_output_callback", None)
    if not callable(getter):
        return None
    with contextlib.suppress(Exception):
        emit = getter()
        return emit if callable(emit) else None
    return None


async def stream_output(fd: int, emit: Callable[[str, str], Any], log: Any) -> None:
    """The subject's merged output from the relay (``--follow-fd``), line by line into ``emit`` as Harbor's
    docker environment streams an exec (``_collect_streamed_output``: each line with its newline, stream
    ``"stdout"``, stderr merged into it, bytes decoded with ``errors="replace"``). A line longer than
    CALLBACK_LINE_LIMIT goes in pieces; a callback that raises is logged once and not called again (the
    subject's run never depends on it)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CALLBACK_LINE_LIMIT * 2)
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    broken = False

    async def give(raw: bytes, final: bool = False) -> None:
        nonlocal broken
        text = decoder.decode(raw, final=final)
        if not text or broken:
            return
        try:
            await emit(text, "stdout")
        except Exception:  # the runner's callback failed: its trial goes on, without the live output
            log.exception("maka-eval-relay: a log callback failed; no more live output is handed to it")
            broken = True

    try:
        pending = b""
        while True:
            chunk = await reader.read(CALLBACK_LINE_LIMIT)
            if not chunk:
                break
            pending += chunk
            while True:
                end = pending.find(b"\n")
                if end < 0 and len(pending) < CALLBACK_LINE_LIMIT:
                    break
                cut = end + 1 if 0 <= end < CALLBACK_LINE_LIMIT else CALLBACK_LINE_LIMIT
                await give(pending[:cut])
                pending = pending[cut:]
        await give(pending, final=True)
    finally:
        transport.close()


def _publish(directory: Path, name: str, data: bytes) -> None:
    """``data`` as ``directory/name``, a fresh file renamed into place: whatever a subject planted under that
    name (a symlink to a host file, a FIFO) is replaced, never followed or opened."""
    directory.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=directory)  # O_EXCL: a fresh inode
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, directory / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_served: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _served_before(environment: Any) -> bool:
    """Whether a trial already ran in this environment object in this process; remembers this one."""
    try:
        seen = environment in _served
        _served.add(environment)
    except TypeError:  # an object that takes no weak references: treated as fresh every time
        return False
    return seen


def _write_and_close(fd: int, data: bytes) -> None:
    """All of ``data`` to a pipe the relay reads at start; a relay that already exited just loses it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def compose_project_name(session_id: str) -> str:
    """Harbor's compose project for an environment's ``session_id``: lower-cased, every character outside
    [a-z0-9_-] replaced by ``-``, and ``0`` in front unless it then starts with [a-z0-9]."""
    name = re.sub(r"[^a-z0-9_-]", "-", session_id.lower())
    return name if re.match(r"[a-z0-9]", name) else "0" + name


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def secret_names(variables: dict[str, str]) -> list[str]:
    """The variables whose values are masked out of the subject's output: those named like a secret
    (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``), as the runners
    name the keys they hand to agents."""
    return [name for name in variables if _SECRET_NAME.search(name)]


def task_environment(environment: Any, overlay: dict[str, str] | None = None) -> dict[str, str]:
    """What the runner gives an agent's processes, merged as the runner merges it. ``overlay`` is the agent's
    own variables (Harbor's and Pier's ``extra_env``, from ``AgentConfig.env``).

    Pier 0.3 (``pier/agents/installed/base.py:336``) runs an agent's command with
    ``env=environment.agent_process_env(merged_env)``, and its ``exec`` then applies ``_merge_env`` to that
    (``pier/environments/docker/docker.py:743``): the task's persistent environment, under the proxy
    variables of its filtered egress (``docker.py:410``: the proxy's, with ``env`` on top), under the agent's
    own. Harbor 0.20/0.22 have no ``agent_process_env``; their ``_merge_env`` (``harbor/environments/base.py:
    416``) is the task's persistent environment, the exec's ``env`` on top, then the trial's scoped overlays
    (``scoped_exec_env``: ``AgentConfig.env`` while the agent runs). Older runners keep ``_persistent_env``
    only. Empty when there is none."""
    env: dict[str, str] | None = dict(overlay) if overlay else None
    agent_env = getattr(environment, "agent_process_env", None)
    if callable(agent_env):
        env = agent_env(env)
    merge = getattr(environment, "_merge_env", None)
    if callable(merge):
        merged = merge(env)
    else:
        merged = {**(getattr(environment, "_persistent_env", None) or {}), **(env or {})}
    return {str(k): str(v) for k, v in merged.items() if v is not None} if isinstance(merged, dict) else {}


def compose_container(binary: str, project: str, service: str) -> str:
    """The id of the one running container of that compose service, as the relay finds it (``maka-eval-relay
    locate``: one Docker Engine client, in C++, reading DOCKER_HOST, the docker context and its TLS files as
    the docker CLI does). Raises OSError with the relay's reason when there is none, or more than one. No
    clock here: ``locate`` answers within its engine timeout, connecting included, or says it did not."""
    done = subprocess.run(
        [binary, "locate", "--compose-project", project, "--compose-service", service],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        raise OSError(reason.removeprefix("maka-eval-relay: "))
    return done.stdout.strip()


def docker_target(environment: Any, binary: str) -> tuple[list[str] | None, str]:
    """The fast path for Harbor's and Pier's DockerEnvironment (both a compose project named from
    ``session_id`` with the task's container as service ``main``: ``harbor/environments/docker/docker.py:86``,
    ``pier/environments/docker/docker.py:58``), found by the runner's own attributes: the relay arguments
    naming its container and the subject's user, or None and why the bridge serves it instead."""
    if type(environment).__name__ != "DockerEnvironment":
        return None, f"{type(environment).__name__} is not the runner's DockerEnvironment"
    if getattr(environment, "_is_windows_container", False):
        return None, "the task's container is a Windows container"
    kind = environment.type() if callable(getattr(environment, "type", None)) else None
    if str(getattr(kind, "value", kind)).lower() != "docker":
        return None, f"the environment's type() is {kind!r}, not docker"
    session_id = getattr(environment, "session_id", None)
    if not isinstance(session_id, str) or not session_id:
        return None, "the environment has no session_id to find its compose project by"
    project = compose_project_name(session_id)
    try:
        container = compose_container(binary, project, "main")
    except OSError as error:
        return None, str(error)
    argv = ["--env", f"docker:{container}"]
    # Harbor's exec runs in cwd or task_env_config.workdir: the subject starts, and `ready` reports, there.
    workdir = getattr(getattr(environment, "task_env_config", None), "workdir", None)
    if isinstance(workdir, str) and workdir.startswith("/"):
        argv += ["--cwd", workdir]
    user = getattr(environment, "default_user", None)
    if user is not None and str(user) != "":
        argv += ["--user", str(user)]
    return argv, f"compose project {project}, service main"
