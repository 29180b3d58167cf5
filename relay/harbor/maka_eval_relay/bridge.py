"""The bridge: the relay's requests served on the trial runner's environment object.

``maka-eval-relay connect --env bridge`` writes one request per line on a socketpair (protocol in
``contracts/bridge_messages.hpp``): exec, upload_file, service_exec (Harbor only), stop(delete=True). This
module answers each with the environment's own call and writes the reply; ``agent`` starts the relay and
runs the bridge beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import socket
from pathlib import Path
from typing import Any, Callable

# An exec's output goes back to the relay whole up to this size; beyond it only the tail (the helper's
# report is the last line).
OUTPUT_LIMIT = 4 * 1024 * 1024
REQUEST_LINE_LIMIT = 1024 * 1024
# After the relay vanished: how long its abandon command and the exec it abandoned may take.
ABANDON_SEC = 90.0

_log = logging.getLogger("maka_eval_relay")


def _accepts(function: Callable[..., Any], parameter: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return True
    return parameter in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def _exec_reply(result: Any) -> dict[str, Any]:
    code = getattr(result, "return_code", None)

    def tail(value: Any) -> str:
        text = str(value or "")
        return text if len(text) <= OUTPUT_LIMIT else text[-OUTPUT_LIMIT:]

    return {
        "ok": True,
        "returnCode": code if isinstance(code, int) else -1,
        "stdout": tail(getattr(result, "stdout", "")),
        "stderr": tail(getattr(result, "stderr", "")),
    }


class _Bridge:
    """Serves the relay's requests on the environment; requests overlap and are answered by id."""

    def __init__(self, sock: socket.socket, environment: Any, framework: str, log: Any = _log):
        self._log = log
        self._sock = sock
        self._env = environment
        self._framework = framework
        self._pending: dict[Any, tuple[asyncio.Task[None], dict[str, Any]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._write_lock = asyncio.Lock()
        self._warned_user = False

    async def serve(self) -> None:
        # What this task and its exec tasks run is the helper's session, whose output is the relay's protocol,
        # not the subject's: the trial's log callbacks (Harbor's per-task ContextVar,
        # harbor/environments/base.py:203) must not receive it, and a protocol line over their 64 KiB limit
        # would fail the exec. Cleared in this task's own context only; the runner's stays as it was.
        callbacks = getattr(self._env, "_output_callbacks", None)
        if isinstance(callbacks, contextvars.ContextVar):
            callbacks.set(())
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock, limit=REQUEST_LINE_LIMIT)
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, ConnectionError):
                    break
                if not line:
                    break
                try:
                    request = json.loads(line)
                    key = request["id"]
                except (ValueError, TypeError, KeyError):
                    self._log.error("maka-eval-relay sent an unreadable bridge request")
                    continue
                task = asyncio.create_task(self._answer(request))
                self._pending[key] = (task, request)
                task.add_done_callback(lambda _, key=key: self._pending.pop(key, None))
        finally:
            await self._abandoned()

    async def _abandoned(self) -> None:
        """The relay is gone. An exec it left in flight with an ``onAbandon`` command (the subject's run)
        gets that command (``maka-eval-helper cancel``), so nothing it started outlives it. A ``stop`` it
        asked for (the last resort, destroy) is finished, never cancelled: the relay may have stopped
        waiting for it when its teardown budget ran out, but the environment must still go; once it has,
        no abandon command runs (nothing is left to settle, and a runner may never answer an exec into an
        environment it deleted)."""
        destroyed = False
        for task, request in list(self._pending.values()):
            if request.get("op") == "stop" and not task.done():
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(task), ABANDON_SEC)
                # The environment is gone: nothing in it outlives that, and no command can reach it.
                destroyed = task.done() and not task.cancelled() and task.exception() is None
        for task, request in list(self._pending.values()):
            command = request.get("onAbandon")
            if command and not task.done() and not destroyed:
                self._log.warning("maka-eval-relay left a run in flight: settling it")
                upload = request.get("onAbandonUpload")
                if isinstance(upload, dict):
                    # The helper the command runs, again: a root subject may have deleted it.
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(
                            self._env.upload_file(Path(upload["source"]), upload["target"]), ABANDON_SEC)
                with contextlib.suppress(Exception):
                    # As the run itself ran (root under a root supervisor): the cancel must reach it.
                    abandon = {"command": command, "timeoutSec": 60, "user": request.get("user")}
                    await asyncio.wait_for(self._exec(abandon), ABANDON_SEC)
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(task), 30)
        tasks = [task for task, _ in self._pending.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._writer is not None:
            self._writer.close()

    async def _answer(self, request: dict[str, Any]) -> None:
        op = request.get("op")
        try:
            if op == "exec":
                reply = await self._exec(request)
            elif op == "service_exec":
                reply = await self._service_exec(request)
            elif op == "upload":
                await self._env.upload_file(Path(request["source"]), request["target"])
                reply = {"ok": True}
            elif op == "stop":
                await self._env.stop(delete=True)
                reply = {"ok": True}
            else:
                reply = {"ok": False, "error": f"unknown bridge operation {op!r}"}
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the relay decides what a failed call means
            reply = {"ok": False, "error": f"{op}: {type(error).__name__}: {error}"}
        reply["id"] = request.get("id")
        async with self._write_lock:
            if self._writer is None or self._writer.is_closing():
                return
            with contextlib.suppress(ConnectionError):
                self._writer.write((json.dumps(reply, separators=(",", ":")) + "\n").encode())
                await self._writer.drain()

    async def _exec(self, request: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if request.get("cwd"):
            kwargs["cwd"] = request["cwd"]
        if request.get("timeoutSec") is not None and _accepts(self._env.exec, "timeout_sec"):
            kwargs["timeout_sec"] = int(request["timeoutSec"])
        if request.get("user"):
            if _accepts(self._env.exec, "user"):
                kwargs["user"] = request["user"]
            elif not self._warned_user:
                # Then the default user must be root for the helper's install and root steps to succeed;
                # if it is not, they fail with the command's own error.
                self._log.warning("this environment's exec takes no user: root steps run as the default user")
                self._warned_user = True
        return _exec_reply(await self._env.exec(request["command"], **kwargs))

    async def _service_exec(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._framework != "harbor" or not callable(getattr(self._env, "service_exec", None)):
            return {
                "ok": False,
                "error": f"{self._framework} environments have no service_exec: the Eval egress policy "
                "(MAKA_EVAL_EGRESS_REQUIRED=1) can only be verified under Harbor",
            }
        result = await self._env.service_exec(request["command"], service=request["service"])
        return _exec_reply(result)
