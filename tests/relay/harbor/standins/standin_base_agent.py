"""The BaseAgent both stand-ins (harbor.agents.base, pier.agents.base) export: Harbor 0.20 and Pier 0.3 agents
are constructed alike (logs_dir, model_name, …) and fill in the same abstract surface."""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any


class BaseAgent(abc.ABC):
    def __init__(self, logs_dir: Path, model_name: str | None = None, logger: Any = None, **kwargs: Any):
        self.logs_dir = Path(logs_dir)
        self.model_name = model_name
        self.logger = logger
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
