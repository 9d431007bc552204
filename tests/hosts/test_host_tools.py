"""The hosts' tool facts (the `tools` of each row of plugkit/hosts.py) against the installed hosts it was read from: every
tool a pinned host registers (grepped from its bundle) is classified in its row as write, shell or
other; every tool it offers its model (read from its real sessions' requests) is checked in
test_write_tools.py, whose sessions run each host anyway. A version bump that adds a tool fails,
naming it, until someone says whether it writes files: a new write tool can never slip past the
gates unclassified. A bump itself fails until the row's source is updated."""

import pytest

from plugkit.hosts import BY_PLATFORM
from tests.hosts.host_sources import BUNDLES, FIX, MINIMUM, installed_version, known, registered

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("platform", sorted(p for p, host in BY_PLATFORM.items() if host.tools.source))
def test_each_row_names_the_installed_version_it_was_read_from(platform):
    package, version = BY_PLATFORM[platform].tools.source.rsplit(" ", 1)
    now = installed_version(package)
    assert now == version, (f"{package} {now} is installed but the {platform} row of plugkit/hosts.py was "
                            f"read from {version}: re-read its tools (tests/hosts/host_sources.py) and update the row")


@pytest.mark.parametrize("platform", sorted(BUNDLES))
def test_every_tool_the_installed_bundle_registers_is_in_the_table(platform):
    found = registered(platform)
    assert len(found) >= MINIMUM[platform], (f"only {sorted(found)} found in {BUNDLES[platform]}: the bundle's layout "
                                             f"changed; update its reader in tests/hosts/host_sources.py")
    unknown = sorted(found - known(platform))
    assert not unknown, f"{BY_PLATFORM[platform].tools.source} registers tools the table does not know: {unknown}; {FIX}"

