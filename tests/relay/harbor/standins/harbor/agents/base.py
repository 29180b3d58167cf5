"""Stand-in for harbor.agents.base."""

from standin_base_agent import BaseAgent

__all__ = ["BaseAgent"]
