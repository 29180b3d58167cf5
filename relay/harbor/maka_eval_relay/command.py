"""`maka-eval-relay` on PATH after `pip install` of the wheel: replaces itself with the relay the wheel carries.

The wheel's relay lives in maka_eval_relay/bin/ with the helper beside it (where the relay looks first), so the
commands in the docs run as written after either install route; exec keeps the relay's own pid, signals, exit
code and terminal, with nothing of Python left between the user and the relay.
"""
import os
import sys
from pathlib import Path


def main():
    relay = Path(__file__).resolve().parent / "bin" / "maka-eval-relay"
    try:
        os.execv(relay, ["maka-eval-relay", *sys.argv[1:]])
    except OSError as error:
        sys.exit(f"maka-eval-relay: the wheel's relay at {relay} cannot run: {error.strerror}")
