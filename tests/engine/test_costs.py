"""The transfer cost model (grstream/engine/costs.py): pure functions, no GPU."""
import pytest
from hypothesis import given, settings, strategies as st

from grstream.engine import costs as cm

#: an RMAT-24 shard of 32 (BFS: in- and out-edges): 524k vertices, 8.4M edges per direction
SHARD = cm.ShardShape(vertices=524_288, region=2 * (8 * 524_289 + 4 * 8_388_608),
                      indptr_bytes=2 * 8 * 524_289, edge_bytes=2 * 4 * 8_388_608, edges=2 * 8_388_608)
ALL = cm.MODES


#: a PCIe Gen3 link with a fast multi-threaded packer (HyTGraph's setting)
PCIE3 = cm.LinkCosts(bandwidth=12e9, compact_rate=24e9)


def test_dense_shards_are_copied_sparse_ones_zero_copied_between_compacted():
    c = PCIE3
    assert cm.choose(SHARD, SHARD.vertices, c, ALL) == "copy"
    assert cm.choose(SHARD, 10, c, ALL) == "zerocopy"
    assert cm.choose(SHARD, SHARD.vertices // 3, c, ALL) == "compact"
    # without zero-copy a sparse shard is compacted; with neither it is copied
    assert cm.choose(SHARD, 10, c, ("copy", "compact")) == "compact"
    assert cm.choose(SHARD, 10, c, ("copy",)) == "copy"
    assert cm.choose(SHARD, 10, c, ()) == "copy"


def test_estimate_bytes():
    c = cm.LinkCosts()
    est = cm.estimate(SHARD, 0, c)
    assert est["copy"][0] == SHARD.region
    assert est["compact"][0] == SHARD.indptr_bytes       # the full offsets, no edge
    assert est["zerocopy"][0] == 0
    full = cm.estimate(SHARD, SHARD.vertices, c)
    assert full["compact"][0] == SHARD.indptr_bytes + SHARD.edge_bytes
    # the copy of a whole shard at the link's speed, plus the per-copy latency
    assert full["copy"][1] == pytest.approx(c.latency + SHARD.region / c.bandwidth)


def test_slow_packing_makes_compaction_lose():
    # on the H100 figures (54.7 GB/s link, 2 GB/s packing) host compaction never beats a copy
    for active in (0, 100, SHARD.vertices // 3, SHARD.vertices):
        assert cm.choose(SHARD, active, cm.LinkCosts(), ("copy", "compact")) == "copy"
    slow = cm.LinkCosts(bandwidth=12e9, compact_rate=1e8)
    assert cm.choose(SHARD, SHARD.vertices // 3, slow, ("copy", "compact")) == "copy"


def test_zero_copy_is_bound_by_bytes_rows_or_the_shard_pass():
    c = cm.LinkCosts(bandwidth=50e9, zc_efficiency=0.5, zc_row=1e-9, zc_shard=1e-5, kernel_rate=1e15)
    assert cm.LinkCosts(zc_efficiency=7).zerocopy_efficiency() == cm.ZC_MAX        # clipped
    assert cm.LinkCosts(zc_efficiency=0).zerocopy_efficiency() > 0
    # long rows: the bytes at half the link, plus the shard's pass
    few = 1000
    t = cm.zerocopy_terms(SHARD, few, c, fe=0.5)
    assert t["bytes"] == pytest.approx(few / SHARD.vertices * SHARD.indptr_bytes + 0.5 * SHARD.edge_bytes)
    assert t["read"] == pytest.approx(t["bytes"] / 25e9)
    assert cm.estimate(SHARD, few, c, edge_fraction=0.5)["zerocopy"][1] == pytest.approx(t["read"] + 1e-5)
    assert cm.zerocopy_bounds(t) == {"read": t["read"], "shard": 1e-5}
    # many rows of one edge each: the rows' latency bounds it, not their few bytes
    t = cm.zerocopy_terms(SHARD, SHARD.vertices // 2, c, fe=SHARD.vertices / 2 / SHARD.edges)
    assert t["rows"] == pytest.approx(SHARD.vertices // 2 * 1e-9) and t["rows"] > t["read"]
    assert set(cm.zerocopy_bounds(t)) == {"rows", "shard"}
    # rows beyond the shard's vertices are not counted
    assert cm.zerocopy_terms(SHARD, 10 * SHARD.vertices, c, 1.0)["rows"] == pytest.approx(SHARD.vertices * 1e-9)


def test_heavy_frontiers_of_long_rows_are_zero_copied_whole_shards_copied():
    # the H100's figures: BFS level 2 of RMAT-24 walks about half the edges in rows of hundreds
    # of edges; reading them in place costs about 0.7 of copying the whole shard
    c = cm.LinkCosts()
    few = SHARD.vertices // 100
    assert cm.choose(SHARD, few, c, ALL, edge_fraction=0.5) == "zerocopy"
    assert cm.choose(SHARD, few, c, ALL, edge_fraction=0.8) == "copy"
    # every vertex active: a copy whatever the learnt efficiency (ZC_MAX < 1)
    assert cm.choose(SHARD, SHARD.vertices, cm.LinkCosts(zc_efficiency=5.0), ALL) == "copy"


def test_refine_moves_towards_the_measurements_and_stays_bounded():
    base = cm.LinkCosts()
    # copies measured at half the bandwidth: the figure moves by ALPHA of the gap
    got = cm.refine(base, {}, {"copy": (int(27e9), 1.0)}, base)
    assert got.bandwidth == pytest.approx((1 - cm.ALPHA) * 54.7e9 + cm.ALPHA * 27e9)
    # zero-copy twice as slow as predicted (all of it bound by the reads): the efficiency halves
    # in the limit
    c = base
    for _ in range(60):
        predicted = base.zc_efficiency / c.zerocopy_efficiency()   # seconds, as c estimates them
        c = cm.refine(c, {"zerocopy": (1000, predicted)}, {"zerocopy": (1000, 2.0)}, base)
    assert c.zerocopy_efficiency() == pytest.approx(base.zc_efficiency / 2, rel=0.05)
    assert (c.zc_row, c.zc_shard) == (base.zc_row, base.zc_shard)
    # packing and kernel rates
    c = cm.refine(base, {}, {}, base, pack=(int(1e9), 1.0), kernel=(int(40e9), 1.0))
    assert base.compact_rate > c.compact_rate > 1e9 and c.kernel_rate > base.kernel_rate
    # nothing measured: unchanged; an absurd measurement is clamped
    assert cm.refine(base, {}, {"copy": (0, 0.0)}, base) is base
    wild = base
    for _ in range(100):
        wild = cm.refine(wild, {}, {"copy": (1, 1e6)}, base)
    assert wild.bandwidth == pytest.approx(base.bandwidth / cm.CLAMP)


def test_a_slow_sparse_level_teaches_the_rows_not_the_reads():
    # a level of many one-edge rows, bound by the rows, measured 3x slower than predicted:
    # zc_row grows, the efficiency of heavy levels' reads stays
    base = cm.LinkCosts()
    c = base
    for _ in range(40):
        t = cm.zerocopy_terms(SHARD, SHARD.vertices // 2, c, fe=SHARD.vertices / 2 / SHARD.edges)
        est = cm.estimate(SHARD, SHARD.vertices // 2, c, edge_fraction=SHARD.vertices / 2 / SHARD.edges)
        pb, ps = est["zerocopy"]
        c = cm.refine(c, {"zerocopy": (pb, ps)}, {"zerocopy": (pb, 3 * ps)}, base,
                      zc_bounds=cm.zerocopy_bounds(t))
    assert c.zc_efficiency == base.zc_efficiency and c.zc_shard == base.zc_shard
    assert c.zc_row > 2.5 * base.zc_row
    # a level of almost nothing, bound by the shard's pass, moves only zc_shard
    t = cm.zerocopy_terms(SHARD, 3, base, fe=1e-7)
    c = cm.refine(base, {"zerocopy": (10, 1e-5)}, {"zerocopy": (10, 1e-4)}, base, zc_bounds=cm.zerocopy_bounds(t))
    assert c.zc_shard > base.zc_shard and (c.zc_row, c.zc_efficiency) == (base.zc_row, base.zc_efficiency)


def test_a_one_row_level_teaches_the_launch_cost():
    # BFS level 1 on the H100: one hub row of 1.5 MB read in place in one launch, 0.13 ms; the
    # read alone would take 0.04 ms: the launch term learns the rest, the efficiency stays
    base = cm.LinkCosts()
    bounds = {"read": 1.5e6 / (base.bandwidth * base.zc_efficiency), "shard": base.zc_shard,
              "launch": base.zc_launch}
    ps = sum(bounds.values())
    c = cm.refine(base, {"zerocopy": (int(1.5e6), ps)}, {"zerocopy": (int(1.5e6), 2 * ps)}, base,
                  zc_bounds=bounds)
    assert c.zc_launch > base.zc_launch
    assert (c.zc_efficiency, c.zc_row, c.zc_shard) == (base.zc_efficiency, base.zc_row, base.zc_shard)


def test_a_slower_zero_copy_measurement_moves_choices_to_compaction():
    base = PCIE3
    f = SHARD.vertices // 50
    assert cm.choose(SHARD, f, base, ALL) == "zerocopy"
    c = base
    for _ in range(20):
        c = cm.refine(c, {"zerocopy": (1000, 1.0)}, {"zerocopy": (1000, 20.0)}, base)
    assert cm.choose(SHARD, f, c, ALL) == "compact"


@settings(max_examples=200, deadline=None)
@given(nv=st.integers(1, 10**6), deg=st.integers(0, 64), active=st.integers(0, 10**6),
       dirs=st.integers(1, 2))
def test_choice_is_the_cheapest_estimate(nv, deg, active, dirs):
    active = min(active, nv)
    ind, edges = 8 * (nv + 1) * dirs, nv * deg * dirs
    shape = cm.ShardShape(nv, ind + 4 * edges, ind, 4 * edges, edges)
    c = cm.LinkCosts()
    est = cm.estimate(shape, active, c)
    mode = cm.choose(shape, active, c, ALL)
    assert est[mode][1] == min(v[1] for v in est.values())
    # bytes never exceed a whole copy's (compaction keeps the offsets, drops edges)
    assert est["compact"][0] <= shape.region and est["zerocopy"][0] <= shape.region
    assert all(v[1] >= 0 for v in est.values())


def test_shard_shapes_from_a_memory_model(tmp_path):
    import numpy as np
    import grstream as gr
    from grstream.engine.memory import Footprint, plan_memory
    from grstream.engine.schedule import needed_arrays
    from ..algorithms.conftest import build
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, num_shards=4)
    spec = gr.algorithms.bfs.BFS.spec
    model = plan_memory(store, needed_arrays(spec), Footprint(static={"s": 10}, alignment=64))
    shapes = cm.shard_shapes(model)
    sizes = np.diff(np.asarray(store.intervals))
    assert [s.vertices for s in shapes] == list(sizes)
    assert sum(s.edges for s in shapes) == 2 * 39                 # in- and out-edges
    assert all(s.indptr_bytes == 2 * 8 * (sizes[i] + 1) and s.region == model.regions[i]
               for i, s in enumerate(shapes))


def test_skew_scales_the_active_edges():
    c = cm.LinkCosts()
    a = SHARD.vertices // 100
    plain, hubs = cm.estimate(SHARD, a, c), cm.estimate(SHARD, a, c, skew=30)
    assert hubs["zerocopy"][0] > 20 * plain["zerocopy"][0]
    assert hubs["copy"] == plain["copy"]
    # never more edges than the shard holds
    assert cm.estimate(SHARD, a, c, skew=1e6)["compact"][0] == SHARD.indptr_bytes + SHARD.edge_bytes
    assert cm.choose(SHARD, a, c, ALL) == "zerocopy" and cm.choose(SHARD, a, c, ALL, skew=300) == "copy"


def test_every_vertex_active_means_every_edge_whatever_the_skew():
    c = cm.LinkCosts()
    for skew in (1e-3, 0.2, 1, 40):
        est = cm.estimate(SHARD, SHARD.vertices, c, skew)
        assert est["compact"][0] == SHARD.indptr_bytes + SHARD.edge_bytes
        assert cm.choose(SHARD, SHARD.vertices, c, ALL, skew) == "copy"
    # a low-degree frontier holds fewer edges than its share of vertices
    assert cm.estimate(SHARD, SHARD.vertices // 2, c, 0.3)["zerocopy"][0] < \
        cm.estimate(SHARD, SHARD.vertices // 2, c, 1)["zerocopy"][0]
