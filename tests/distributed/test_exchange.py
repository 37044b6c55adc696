"""The MPI exchange's collectives on a world of one (MPI.COMM_SELF), both of each one's paths:
push messages combined with every monoid (dense: reduce-scatter plus the receiver bitmap;
sparse: all-to-all-v), state dense and sparse (vertex fields and (rows, lanes) fields), and
the union of ids (sparse ids, dense bitmap). tests/distributed/ranks_check.py runs them across
ranks."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import grstream as gr

from .test_ranks import have_mpi

pytestmark = pytest.mark.skipif(not have_mpi(), reason="mpi4py or mpiexec not installed (grstream[mpi])")

DTYPES = {"sum": np.float64, "prod": np.int64, "min": np.int32, "max": np.float32,
          "or": np.bool_, "and": np.bool_}


def exchange(n):
    from mpi4py import MPI
    from grstream.distributed.exchange import MpiExchange
    return MpiExchange(MPI.COMM_SELF, [0, n])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), name=st.sampled_from(sorted(DTYPES)), data=st.data())
def test_combine_gives_each_receiver_its_messages_combined(n, name, data):
    monoid = gr.monoid.BY_NAME[name]
    dtype = np.dtype(DTYPES[name])
    ids = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n))), dtype=np.int64)
    values = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=len(ids), max_size=len(ids))))
    values = values.astype(dtype) if dtype != np.bool_ else values > 0
    got_ids, got = exchange(n).combine(ids, values, monoid)
    assert np.array_equal(got_ids, ids)   # every receiver, also of identity-valued messages
    assert got.dtype == dtype and np.array_equal(got, values)


def test_combine_takes_both_paths():
    ex = exchange(1000)
    few = ex.combine(np.array([3, 7]), np.array([1.5, 2.5]), gr.monoid.sum)
    ids = np.arange(0, 1000, 2)
    many = ex.combine(ids, np.ones(500, dtype=np.int32), gr.monoid.min)
    assert np.array_equal(few[0], [3, 7]) and np.array_equal(few[1], [1.5, 2.5])
    assert np.array_equal(many[0], ids) and (many[1] == 1).all()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 200), lanes=st.sampled_from([None, 3]), data=st.data())
def test_state_and_union(n, lanes, data):
    ex = exchange(n)
    shape = (n,) if lanes is None else (n, lanes)
    field = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    applied = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), dtype=np.int64)
    before = field.copy()
    how = ex.state({"x": field}, applied, np.array([len(applied)]))
    assert how == ("sparse" if len(applied) * (8 + field.itemsize * (lanes or 1))
                   < n * field.itemsize * (lanes or 1) else "dense")
    assert np.array_equal(field, before)   # (one rank: every value is already the owner's)
    assert ex.state({"x": field}, applied, np.array([len(applied)]), dense=True) == "dense"
    assert np.array_equal(ex.union(applied, n, np.array([len(applied)])), applied)


@pytest.mark.parametrize("ranks", [1, 3])
def test_messages_in_rounds_equal_one_call(ranks):
    """The host messages under limits of 1 byte to the default (rounds of pieces through
    staging buffers, or one call) with uneven and zero counts (tests/distributed/messages_check.py)."""
    from .test_ranks import mpirun
    out = mpirun(ranks, "tests.distributed.messages_check", timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"messages equal on {ranks} ranks" in out.stdout


def test_a_bad_message_limit_is_a_usage_error(monkeypatch):
    from grstream.distributed import messages
    for bad in ("0", "x", str(1 << 31)):
        monkeypatch.setenv("GRSTREAM_MPI_LIMIT", bad)
        with pytest.raises(gr.errors.UsageError, match="GRSTREAM_MPI_LIMIT"):
            messages.limit()
