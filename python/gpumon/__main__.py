"""``python -m gpumon ARGS``: runs the gpumon binary with ARGS, in this process's place."""

import os
import sys

from gpumon import find_gpumon_bin


def main():
    try:
        gpumon = find_gpumon_bin()
    except FileNotFoundError as e:
        print("python -m gpumon: " + str(e), file=sys.stderr)
        return 127
    # exec keeps the pid, the terminal and the signals the user's; gpumon's exit status is ours.
    os.execv(gpumon, [gpumon, *sys.argv[1:]])
    return 0  # not reached: execv replaced this process


if __name__ == "__main__":
    sys.exit(main())
