"""gpumon, installed from a wheel: the native ``gpumon`` binary on PATH.

The package holds no Python code of gpumon's own; it finds the binary pip put in the scripts
directory, so that ``python -m gpumon`` runs it where PATH does not reach (a notebook's kernel,
an environment that was never activated).
"""

import os
import sys
import sysconfig

__all__ = ["find_gpumon_bin"]


def _candidates():
    exe = "gpumon" + (sysconfig.get_config_var("EXE") or "")
    # The environment this Python runs in (a venv, conda, uvx's, the system's).
    yield os.path.join(sysconfig.get_path("scripts"), exe)
    # `pip install --user`.
    if sys.version_info >= (3, 10):
        user_scheme = sysconfig.get_preferred_scheme("user")
    else:
        user_scheme = "posix_user"
    yield os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe)
    # `pip install --target DIR`: the package in DIR, the binary in DIR/bin.
    yield os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin", exe)


def find_gpumon_bin():
    """The path of the gpumon binary installed with this package.

    Raises FileNotFoundError, naming the places looked in, when it is in none of them.
    """
    tried = []
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        tried.append(path)
    raise FileNotFoundError("the gpumon binary is not in " + ", ".join(tried))
