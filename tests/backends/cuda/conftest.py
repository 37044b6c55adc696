"""Fixtures of the GPU-path tests: stores built from random graphs and the shared datasets."""

import numpy as np
import pytest

from ...conftest import DATASETS


@pytest.fixture
def shared_datasets():
    """The directory of the real test graphs (../shared/datasets); skips when absent."""
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture
def gpu():
    """Skip unless PyCUDA and a GPU are usable; yields the device name."""
    from grstream.backends import cuda
    ok, reason = cuda.available()
    if not ok:
        pytest.skip(reason)
    return reason


@pytest.fixture
def rng():
    return np.random.default_rng(2024)
