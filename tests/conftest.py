"""Fixtures shared by every test package."""
import os
from pathlib import Path

import numpy as np
import pytest

from grstream.nx.testing import register_without_install

# README's NetworkX examples need the backend also in a checkout that was not pip-installed
register_without_install()

# the compiled kernels' ahead-of-time modules (grstream/backends/cpu/aot.py) stay off in the
# tests, which then run the same JIT kernels whatever earlier runs built into the user's kernel
# cache, and leave no build behind at exit; tests/backends/cpu/test_aot.py turns them on
os.environ["GRSTREAM_KERNEL_AOT"] = "0"

#: the real test graphs: ../shared/datasets beside the checkout, or $GRSTREAM_DATASETS where that
#: does not exist (the GPU machine gets a copy)
DATASETS = Path(os.environ.get("GRSTREAM_DATASETS")
                or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")


@pytest.fixture(scope="session")
def datasets_dir():
    """../shared/datasets beside the checkout (the real graphs); skip when absent."""
    if not DATASETS.is_dir():
        pytest.skip(f"real graphs not found at {DATASETS}")
    return DATASETS


@pytest.fixture
def rng():
    """A seeded generator, so a failing example reproduces."""
    return np.random.default_rng(12345)
