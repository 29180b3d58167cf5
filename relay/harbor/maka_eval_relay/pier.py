"""The relay agent for Pier: ``maka_eval_relay.pier:RelayAgent``. Pier environments have no service_exec,
so a trial that requires the egress policy (MAKA_EVAL_EGRESS_REQUIRED=1) is refused with a clear error."""

from pier.agents.base import BaseAgent

from .agent import RelayAgentCore


class RelayAgent(RelayAgentCore, BaseAgent):
    framework = "pier"
