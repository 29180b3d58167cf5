"""The relay agent for Harbor: ``harbor run --agent maka_eval_relay.harbor:RelayAgent`` (``--agent-import-path`` is deprecated in Harbor 0.20)."""

from harbor.agents.base import BaseAgent

from .agent import RelayAgentCore


class RelayAgent(RelayAgentCore, BaseAgent):
    framework = "harbor"
