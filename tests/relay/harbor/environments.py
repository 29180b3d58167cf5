"""Stand-in trial-runner environments on a real Docker engine, shaped like the ones the adapter meets.

``DockerEnvironment`` behaves like Harbor 0.20's: every exec is its own ``docker exec`` of a shell command
line with stdin at /dev/null and stderr merged into stdout, ``user=`` becomes ``-u``, uploads are
``docker cp`` (root-owned, mode kept), ``service_exec`` runs in a named sidecar, ``stop(delete=True)``
removes the container. The one deviation: the task image is BusyBox-only, so the shell is ``sh``, not
``bash``. ``PierDockerEnvironment`` is Pier-shaped: the same, minus ``service_exec`` and ``user=``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from dataclasses import dataclass
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


def remove_container(name: str) -> None:
    docker("rm", "-f", name, check=False)


async def _docker(*args: str, timeout_sec: float | None = None) -> ExecResult:
    process = await asyncio.create_subprocess_exec(
        "docker", *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout_sec)
    except BaseException:
        # Cancelled or timed out: the docker client goes, as Harbor's does (the exec'd process stays).
        process.kill()
        await process.wait()
        raise
    return ExecResult(stdout=out.decode("utf-8", "replace"), stderr=None, return_code=process.returncode)


class DockerEnvironment:
    """Harbor-shaped. ``container_name`` is what the adapter's Docker fast path looks for."""

    def __init__(self, container: str, sidecars: dict[str, str] | None = None, shell: str = "sh"):
        self.container_name = container
        self._sidecars = sidecars or {}
        self._shell = shell
        self.calls: list[str] = []

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        self.calls.append("exec")
        args = ["exec"]
        if user is not None:
            args += ["-u", str(user)]
        if cwd:
            args += ["-w", cwd]
        for key, value in (env or {}).items():
            args += ["-e", f"{key}={value}"]
        return await _docker(*args, self.container_name, self._shell, "-c", command, timeout_sec=timeout_sec)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self.calls.append("upload_file")
        result = await _docker("cp", str(source_path), f"{self.container_name}:{target_path}")
        if result.return_code != 0:
            raise RuntimeError(f"docker cp failed: {result.stdout}")

    async def service_exec(self, command: str, service: str) -> ExecResult:
        self.calls.append("service_exec")
        if service not in self._sidecars:
            raise RuntimeError(f"no service {service}")
        return await _docker("exec", self._sidecars[service], self._shell, "-c", command)

    async def stop(self, delete: bool) -> None:
        self.calls.append("stop")
        await _docker("rm", "-f", self.container_name) if delete else await _docker("stop", self.container_name)


class PierDockerEnvironment:
    """Pier-shaped: exec without ``user=``, no ``service_exec``."""

    def __init__(self, container: str):
        self._inner = DockerEnvironment(container)
        self.calls = self._inner.calls

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None) -> ExecResult:
        return await self._inner.exec(command, cwd=cwd, env=env, timeout_sec=timeout_sec)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._inner.upload_file(source_path, target_path)

    async def stop(self, delete: bool) -> None:
        await self._inner.stop(delete)
