"""maka-eval-relay for Harbor and Pier: the agent class that runs one trial through the C++ relay.

Load it with the framework named explicitly in the import path (never guessed from the environment):
``maka_eval_relay.harbor:RelayAgent`` for Harbor, ``maka_eval_relay.pier:RelayAgent`` for Pier. Both are
``RelayAgentCore`` (the adapter, in ``agent``) on top of that framework's ``BaseAgent``.
"""

from .agent import RelayAgentCore, locate_relay, request_host_teardown

__all__ = ["RelayAgentCore", "locate_relay", "request_host_teardown"]
