"""The BaseAgent both stand-ins (harbor.agents.base, pier.agents.base) export: Harbor 0.20 and Pier 0.3 agents
are constructed alike (logs_dir, model_name, …) and fill in the same abstract surface."""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any


class BaseAgent(abc.ABC):
    # harbor/agents/base.py:49 (0.20; 0.22: :75) and pier/agents/base.py:29: the same positional head;
    # Harbor keeps extra_env (Pier's factory passes it too, its BaseAgent ignores it).
    def __init__(self, logs_dir: Path, model_name: str | None = None, logger: Any = None,
                 mcp_servers: list[Any] | None = None, skills_dir: str | None = None, *args: Any,
                 extra_env: dict[str, str] | None = None, **kwargs: Any):
        self.logs_dir = Path(logs_dir)
        self.model_name = model_name
        self.logger = logger
        self.mcp_servers = mcp_servers or []
        self.skills_dir = skills_dir
        self._extra_env = dict(extra_env) if extra_env else {}
        self.extra = kwargs

    @staticmethod
    @abc.abstractmethod
    def name() -> str: ...

    @abc.abstractmethod
    def version(self) -> str | None: ...

    @abc.abstractmethod
    async def setup(self, environment: Any) -> None: ...

    @abc.abstractmethod
    async def run(self, instruction: str, environment: Any, context: Any) -> None: ...
