"""The relay agent for Harbor: ``--agent-import-path maka_eval_relay.harbor:RelayAgent``."""

from harbor.agents.base import BaseAgent

from .agent import RelayAgentCore


class RelayAgent(RelayAgentCore, BaseAgent):
    framework = "harbor"
