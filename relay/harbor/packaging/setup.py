"""The adapter's wheel: pure Python, plus the relay and the static helper in maka_eval_relay/bin/.

The binaries make the wheel specific to the platform they were built for, so it is tagged for it
(py3-none-linux_x86_64) instead of as a pure-Python wheel. Metadata is in pyproject.toml; this file only
sets the tag. Built by scripts/package.sh, offline, with Debian's python3-build, -setuptools and -wheel.
"""

import platform

from setuptools import setup
from wheel.bdist_wheel import bdist_wheel


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", f"linux_{platform.machine()}"


setup(cmdclass={"bdist_wheel": PlatformWheel})
