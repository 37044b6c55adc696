"""Make the ``grstream`` NetworkX backend available to these tests.

An installed grstream (``pip install -e .``) registers it through its entry points; from a
source tree on PYTHONPATH it is registered here the way NetworkX's own conftest registers its
test backend.
"""
from importlib.metadata import EntryPoint

import networkx as nx
import pytest

import grstream.nx  # noqa: F401 - fail early when the package does not import


def _register():
    backends = nx.utils.backends
    if "grstream" in backends.backends:
        return
    from grstream.nx.info import get_info
    backends.backends["grstream"] = EntryPoint(
        name="grstream", value="grstream.nx.interface:backend_interface",
        group="networkx.backends")
    backends.backend_info["grstream"] = get_info()
    nx.config.backends = nx.utils.Config(
        grstream=backends.backend_info["grstream"]["default_config"], **nx.config.backends)
    backends._dispatchable.__call__ = backends._dispatchable._call_if_any_backends_installed


_register()


@pytest.fixture(autouse=True)
def quiet_cache_warning():
    nx.config.warnings_to_ignore.add("cache")
    yield
