"""The runner reads its configuration here, from the environment, once, at boot; every
part below gets the frozen RunnerConfig (or the piece of it it needs) passed down."""

import os
from typing import Mapping, Optional

from plugkit import paths
from plugkit.config import RunnerConfig


def load(environ: Optional[Mapping[str, str]] = None) -> RunnerConfig:
    """Raises ValueError naming the variable when a setting is malformed."""
    env = dict(os.environ if environ is None else environ)  # one snapshot: nothing reads it later
    return RunnerConfig.from_env(env, home=paths.home(env), port=paths.port(env))
