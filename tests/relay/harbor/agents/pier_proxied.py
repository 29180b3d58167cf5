"""Pier 0.3's filtered egress without its proxy service: the adapter's agent on a real Pier trial whose real
``DockerEnvironment`` carries the proxy variables its filtered egress would give agents.

Pier sets ``_egress_proxy_env`` in ``_prepare_egress_proxy_compose`` (``pier/environments/docker/docker.py:
390-405``) when a task allows only some domains, and starts a squid proxy service built ``FROM ubuntu:24.04``
with apt (``pier/environments/agent_setup.py:144``): a registry and a mirror this machine cannot reach. So
the one thing substituted is that attribute, set to the value Pier's own ``proxy_environment`` makes
(``agent_setup.py:80``) before the agent runs; everything the adapter does with it goes through Pier's own
``agent_process_env`` (``docker.py:410``) and ``_merge_env`` (``pier/environments/base.py:276``).
"""
from pier.environments.agent_setup import EGRESS_PROXY_PORT, EGRESS_PROXY_SERVICE, proxy_environment

from maka_eval_relay.pier import RelayAgent as _RelayAgent

PROXY_TOKEN = "kit-proxy-token"
PROXY_URL = f"http://agent:{PROXY_TOKEN}@{EGRESS_PROXY_SERVICE}:{EGRESS_PROXY_PORT}"


class RelayAgent(_RelayAgent):
    async def run(self, instruction, environment, context):
        environment._egress_proxy_env = proxy_environment(PROXY_TOKEN, EGRESS_PROXY_SERVICE, EGRESS_PROXY_PORT)
        return await super().run(instruction, environment, context)
