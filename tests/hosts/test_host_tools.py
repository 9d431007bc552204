"""The hosts' tool facts (the `tools` of each row of plugkit/hosts.py) against the installed hosts it was read from: every
tool a pinned host registers (grepped from its bundle) or offers its model (a real run against
the scripted model) is classified in its row as write, shell or other. A version bump that adds
a tool fails here, naming it, until someone says whether it writes files: a new write tool can
never slip past the gates unclassified. A bump itself fails until the row's source is updated."""

import pytest

from plugkit.host_tools import SHELL, WRITE, names
from plugkit.hosts import BY_PLATFORM
from tests.hosts.host_sources import BUNDLES, MINIMUM, installed_version, offered, registered
from tests.hosts.hosts import HOSTS, installed, project, run
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.hosts.write_tools import PLATFORM

pytestmark = pytest.mark.e2e
FIX = "classify each in its row of plugkit/hosts.py (write, shell or other) after reading what it does"


def known(platform: str) -> frozenset:
    return names(platform, WRITE) | names(platform, SHELL) | names(platform, "other")


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


@pytest.mark.parametrize("host_name", sorted({**HOSTS, **MORE_HOSTS}))
def test_every_tool_the_host_offers_its_model_is_in_the_table(tmp_path, host_name):
    host = installed({**HOSTS, **MORE_HOSTS}[host_name])
    work, host_home = project(tmp_path, host, None, {})
    script = Script([Say("Done.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)})
    seen = set().union(*(offered(s.body) for s in script.main))
    assert seen, result.explain()
    platform = PLATFORM.get(host_name, host_name)
    unknown = sorted(seen - known(platform))
    source = BY_PLATFORM[platform].tools.source
    assert not unknown, f"{source} offers its model tools the table does not know: {unknown}; {FIX}"
