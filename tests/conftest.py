"""Fixtures shared by every test package."""
from pathlib import Path

import numpy as np
import pytest

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


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
