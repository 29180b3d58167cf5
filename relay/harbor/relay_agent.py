"""A drop-in for the original ``relay_agent`` module that apache/maka's eval loads (its TypeScript executor
writes a Harbor 0.20 TrialConfig with agent ``relay_agent:RelayAgent`` and runs its ``run_trial.py`` with the
bundled folder first on ``PYTHONPATH``; docs/maka.md says how an operator puts this file there).

As the original: the framework is the one ``run_trial.py`` installed in ``eval_framework`` (never guessed
from the environment), ``RelayAgent`` is the agent on that framework's ``BaseAgent``, and
``request_host_teardown()`` is what ``run_trial.py`` calls on SIGINT/SIGTERM before it cancels the trial.
"""

from eval_framework import selected

from maka_eval_relay import request_host_teardown

if selected() == "harbor":
    from maka_eval_relay.harbor import RelayAgent
else:
    from maka_eval_relay.pier import RelayAgent

__all__ = ["RelayAgent", "request_host_teardown"]
