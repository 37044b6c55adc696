"""Fixtures shared by every test package."""
import os
from pathlib import Path

import numpy as np
import pytest

from grstream.nx.testing import register_without_install

# README's NetworkX examples need the backend also in a checkout that was not pip-installed
register_without_install()

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
