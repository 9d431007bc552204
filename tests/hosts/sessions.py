"""One real host session per key for a whole test module: played when the first test asks for it
(inside that test, so the leak check covers it) and kept for the module's other tests, each of
which asserts its own fact of it. A host start is most of such a test's time (Kilo ~30 s of CPU,
Qwen Code ~10 s), and the suite is CPU-bound on two cores. A session that failed fails each test
that asks for it, with the same error."""

import pytest


def once_each(tmp_path_factory, play):
    """session(*key) -> play(a fresh directory, *key), played once per key."""
    played: dict = {}

    def session(*key):
        if key not in played:
            try:
                played[key] = play(tmp_path_factory.mktemp("-".join(str(k or "default") for k in key)), *key)
            except (Exception, pytest.fail.Exception) as e:  # raised again by each test of the session
                played[key] = e
        if isinstance(played[key], BaseException):
            raise played[key]
        return played[key]

    return session
