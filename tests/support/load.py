"""A wall-time bound stretched by how busy the machine is, for the few tests whose claim is a time.

On a machine with L runnable processes per core, a process gets about 1/L of one: a stop that
takes 1 s of CPU takes ~L s of wall. A claim such as "the stop stays under 2 s" holds as written on
a quiet machine, and beside CPU hogs it is held to that many times more (the 1-minute load average).
"""

import os


def stretched(seconds: float) -> float:
    """`seconds`, times the load average per core when that is above 1."""
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
