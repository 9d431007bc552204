"""`python -m runner [--detached]`: run the plugkit runner in the foreground."""

import sys

from runner.boot.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
