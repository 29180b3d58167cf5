"""Stand-in trial-runner environments on a real Docker engine, with the shape of the real classes.

``DockerEnvironment`` has what Harbor 0.20's has (as read from Harbor's source) and nothing it
lacks: no container attribute, no ``is_mounted`` (``capabilities.mounted``). ``environment_name``,
``session_id``, ``default_user`` (every exec without ``user=`` runs as it), ``_persistent_env`` merged into
every exec by ``_merge_env`` (with the exec's own ``env`` as overlay), ``type()`` (EnvironmentType.DOCKER),
``task_env_config`` (its ``workdir`` is every exec's cwd unless the exec names one). Its container is the
compose project's service ``main``: the project is ``session_id`` sanitized as Harbor does, and the container
carries the compose labels (``start_compose_container``). An exec is ``docker exec [-w] [-e K=V]… [-u U]
CONTAINER bash -c CMD`` with stdin at /dev/null and stderr merged into stdout, as ``compose exec`` is; its
output is read line by line under Harbor's 64 KiB line limit (the trial registers log callbacks, so a longer
line makes ``exec`` raise); a timeout is TERM, 5 s, KILL of the client and ``RuntimeError("Command timed out
after N seconds")`` while the process in the container runs on; a cancelled exec leaves the client running.
``upload_file`` is ``docker cp`` (root-owned, mode kept), and where that fails for a missing directory,
a root ``mkdir -p`` and the copy again (Harbor's tar fallback); ``service_exec`` runs in a named sidecar; ``stop(delete=True)`` removes the
container and never raises. The task image is BusyBox-only, with ``bash`` a shim over BusyBox ``sh``.

``PierDockerEnvironment`` is Pier 0.3's: the same exec (``user=`` included: Pier passes ``-u`` too), no
``service_exec``, ``/logs/artifacts`` root 755, and ``agent_process_env(env)``: the variables Pier gives its
agents' processes (under its filtered egress, the proxy settings).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import uuid
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

IMAGE = "maka-eval-test-busybox:test"


@dataclass
class ExecResult:
    stdout: str | None = None
    stderr: str | None = None
    return_code: int = 0


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=60)


def start_container(*run_args: str) -> str:
    name = f"maka-adapter-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    docker("run", "-d", "--name", name, *run_args, IMAGE)
    return name


def compose_project(session_id: str) -> str:
    """Harbor's own sanitizing of ``session_id`` into a compose project name."""
    name = session_id.lower()
    if not re.match(r"^[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


def start_compose_container(session_id: str, *run_args: str, artifacts_mode: str = "777") -> str:
    """The container ``docker compose -p <project> up`` would make for service ``main``, as the runner's
    ``start()`` leaves it: /logs/agent and /logs/verifier mode 777, /logs/artifacts root-owned with
    ``artifacts_mode`` (777 in Harbor 0.20, 755 in Pier)."""
    project = compose_project(session_id)
    name = start_container("--label", f"com.docker.compose.project={project}",
                           "--label", "com.docker.compose.service=main", *run_args)
    docker("exec", "-u", "0", name, "sh", "-c",
           "mkdir -p /logs/agent /logs/verifier /logs/artifacts && chmod 777 /logs/agent /logs/verifier && "
           f"chown 0:0 /logs/artifacts && chmod {artifacts_mode} /logs/artifacts")
    return name


def remove_container(name: str) -> None:
    docker("rm", "-f", name, check=False)


# Harbor's exec reads the client's output with asyncio's default stream limit when log callbacks are set.
LINE_LIMIT = 64 * 1024


async def _docker(*args: str, timeout_sec: float | None = None) -> ExecResult:
    process = await asyncio.create_subprocess_exec(
        "docker", *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        limit=LINE_LIMIT,
    )

    async def lines() -> bytes:
        out = bytearray()
        while True:
            line = await process.stdout.readline()  # a line over the limit raises ValueError, as in Harbor
            if not line:
                break
            out += line
        await process.wait()
        return bytes(out)

    try:
        out = await asyncio.wait_for(lines(), timeout_sec)
    except asyncio.TimeoutError:
        # Harbor: TERM to the client, 5 s, KILL; the process in the container is not touched.
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
        raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
    # Cancelled: the client is left running, as Harbor 0.20 leaves it.
    return ExecResult(stdout=out.decode("utf-8", "replace"), stderr=None, return_code=process.returncode or 0)


class EnvironmentType(str, Enum):
    DOCKER = "docker"


@dataclass
class EnvironmentConfig:
    """The part of the task's ``[environment]`` table the adapter meets (harbor.models.task.config)."""
    workdir: str | None = None


@dataclass
class Capabilities:
    mounted: bool = True


class DockerEnvironment:
    """Harbor-shaped (harbor.environments.docker.DockerEnvironment). ``calls`` is the test's record."""

    def __init__(self, session_id: str, environment_name: str = "task", default_user: str | int | None = None,
                 persistent_env: dict[str, str] | None = None, sidecars: dict[str, str] | None = None,
                 workdir: str | None = None):
        self.environment_name = environment_name
        self.session_id = session_id
        self.default_user = default_user
        self.task_env_config = EnvironmentConfig(workdir=workdir)
        self.capabilities = Capabilities(mounted=True)
        self._persistent_env = dict(persistent_env or {})
        self.__sidecars = dict(sidecars or {})
        self.__container: str | None = None
        self.calls: list[str] = []

    # harbor/environments/docker/docker.py:262 (0.20)
    @staticmethod
    def type() -> EnvironmentType:
        return EnvironmentType.DOCKER

    # harbor/environments/base.py:416 (0.20, 0.22), without the trial's scoped overlays (scoped_exec_env),
    # which only a real Trial sets: the real runners' tests (test_runners.py) cover them.
    def _merge_env(self, env: dict[str, str] | None) -> dict[str, str] | None:
        merged = {**self._persistent_env, **(env or {})}
        return merged or None

    def _service_main(self) -> str:
        # What `docker compose -p <project> … main` resolves: the one container with those labels.
        if self.__container is None:
            labels = [f"label=com.docker.compose.project={compose_project(self.session_id)}",
                      "label=com.docker.compose.service=main"]
            found = docker("ps", "-q", *(arg for label in labels for arg in ("--filter", label))).stdout.split()
            if len(found) != 1:
                raise RuntimeError(f"no single service main for session {self.session_id}: {found}")
            self.__container = found[0]
        return self.__container

    # harbor/environments/docker/docker.py:1088 (0.20; 0.22: :1093): compose exec of `bash -c CMD` in the task's
    # workdir, the merged env, the resolved user; stderr merged into stdout (:638).
    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        self.calls.append("exec")
        args = ["exec"]
        cwd = cwd or self.task_env_config.workdir
        if cwd:
            args += ["-w", cwd]
        for key, value in (self._merge_env(env) or {}).items():
            args += ["-e", f"{key}={value}"]
        user = user if user is not None else self.default_user
        if user is not None:
            args += ["-u", str(user)]
        return await _docker(*args, self._service_main(), "bash", "-c", command, timeout_sec=timeout_sec)

    # harbor/environments/docker/docker.py:971 (0.20): through the platform's copy (docker cp).
    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self.calls.append("upload_file")
        container = self._service_main()
        result = await _docker("cp", str(source_path), f"{container}:{target_path}")
        if result.return_code != 0:
            # Harbor's fallback (a missing directory): a root `mkdir -p` of the parent, then the copy again.
            parent = os.path.dirname(target_path) or "/"
            await _docker("exec", "-u", "0", container, "mkdir", "-p", parent)
            result = await _docker("cp", str(source_path), f"{container}:{target_path}")
        if result.return_code != 0:
            raise RuntimeError(f"docker compose cp failed: {result.stdout}")

    # harbor/environments/docker/docker.py:1106 (0.20): `main` (or no service) is exec(); a sidecar runs
    # `sh -c CMD` without main's workdir, user or persistent env.
    async def service_exec(self, command: str, *, service: str | None = None, cwd: str | None = None,
                           env: dict[str, str] | None = None, timeout_sec: int | None = None,
                           user: str | int | None = None) -> ExecResult:
        self.calls.append("service_exec")
        if service is None or service == "main":
            return await self.exec(command, cwd=cwd, env=env, timeout_sec=timeout_sec, user=user)
        if service not in self.__sidecars:
            raise RuntimeError(f"no service {service}")
        args = ["exec"] + (["-w", cwd] if cwd else []) + (["-u", str(user)] if user is not None else [])
        for key, value in (env or {}).items():
            args += ["-e", f"{key}={value}"]
        return await _docker(*args, self.__sidecars[service], "sh", "-c", command, timeout_sec=timeout_sec)

    # harbor/environments/docker/docker.py:936 (0.20): compose down (delete: --rmi local --volumes), a failure
    # logged, never raised.
    async def stop(self, delete: bool) -> None:
        self.calls.append("stop")
        try:
            container = self._service_main()
            await _docker("rm", "-f", container) if delete else await _docker("stop", container)
        except Exception:  # Harbor's stop logs and never raises
            pass


class PierDockerEnvironment:
    """Pier-shaped (pier.environments.docker): Harbor's exec, ``user=`` included; no ``service_exec``;
    ``agent_process_env(env)`` as Pier's (``agent_env``: the proxy settings of its filtered egress). The real
    Pier 0.3 runs in tests/relay/harbor/test_runners.py; this one serves the fault tests."""

    def __init__(self, session_id: str, default_user: str | int | None = None,
                 persistent_env: dict[str, str] | None = None, workdir: str | None = None,
                 agent_env: dict[str, str] | None = None):
        self.__inner = DockerEnvironment(session_id, default_user=default_user, persistent_env=persistent_env,
                                         workdir=workdir)
        self.session_id = session_id
        self.default_user = default_user
        self.task_env_config = self.__inner.task_env_config
        self.capabilities = self.__inner.capabilities
        self._persistent_env = self.__inner._persistent_env
        self.__agent_env = dict(agent_env or {})
        self.calls = self.__inner.calls

    # pier/environments/base.py:276
    def _merge_env(self, env: dict[str, str] | None) -> dict[str, str] | None:
        return self.__inner._merge_env(env)

    # pier/environments/base.py:288 (the signature) and pier/environments/docker/docker.py:410 (the
    # behaviour): the filtered egress's proxy variables with ``env`` on top, or ``env`` itself without them.
    def agent_process_env(self, env: dict[str, str] | None) -> dict[str, str] | None:
        if not self.__agent_env:
            return env
        merged = dict(self.__agent_env)
        if env:
            merged.update(env)
        return merged or None

    # pier/environments/docker/docker.py:734
    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        return await self.__inner.exec(command, cwd=cwd, env=env, timeout_sec=timeout_sec, user=user)

    # pier/environments/docker/docker.py:710
    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self.__inner.upload_file(source_path, target_path)

    # pier/environments/docker/docker.py:681
    async def stop(self, delete: bool) -> None:
        await self.__inner.stop(delete)
