"""Make the ``grstream`` NetworkX backend available to these tests (registered by hand when
grstream runs from a source tree that was not pip-installed)."""
import networkx as nx
import pytest

from grstream.nx.testing import register_without_install

register_without_install()


@pytest.fixture(autouse=True)
def quiet_cache_warning():
    nx.config.warnings_to_ignore.add("cache")
    yield
