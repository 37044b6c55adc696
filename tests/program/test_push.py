"""push_ok / push_reason derived from program source (grstream/program/push.py)."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bc import (BrandesBackward, BrandesForward, DagLevels,
                                    WeightedBrandesBackward, WeightedBrandesForward)
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank, PersonalizedPageRank, WeightedPageRank
from grstream.algorithms.predecessors import BFSTree, ShortestPathTree
from grstream.algorithms.sssp import SSSP
from grstream.program.push import message_field


@pytest.mark.parametrize("cls", [BFS, ConnectedComponents, SSSP, DagLevels])
def test_monotone_builtins_push(cls):
    assert cls.spec.push_ok, cls.spec.push_reason
    assert "absorbed" in cls.spec.push_reason


@pytest.mark.parametrize("cls,why", [
    (PageRank, "activate = 'all'"), (PersonalizedPageRank, "activate = 'all'"),
    (WeightedPageRank, "activate = 'all'"), (BrandesBackward, "activate = 'schedule'"),
    (WeightedBrandesBackward, "activate = 'schedule'"), (BrandesForward, "activate = 'schedule'"),
    (WeightedBrandesForward, "activate = 'schedule'"), (BFSTree, "self.iteration"),
    (ShortestPathTree, "self.iteration")])
def test_other_builtins_pull(cls, why):
    assert not cls.spec.push_ok
    assert why in cls.spec.push_reason


class Widest(gr.GASProgram):
    """Widest path: the best bottleneck capacity from the source (max of min)."""
    vertex = {"width": "float64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.max
    params = {"source": 0}

    def init(self, v):
        v.width = np.where(v.id == self.source, np.inf, 0.0)
        return v.id == self.source

    def gather_map(self, s, d, e):          # other argument names than the roles
        return gr.minimum(s.width, e.weight)

    def apply(self, vert, total):
        best = gr.maximum(total, vert.width)   # acc first
        grew = vert.width < best               # reversed comparison
        vert.width = best
        return grew


class Reach(gr.GASProgram):
    """Reachability with the or monoid and | in apply."""
    vertex = {"seen": "bool"}
    gather_reduce = gr.monoid.logical_or

    def init(self, v):
        v.seen = v.id == 0
        return v.id == 0

    def gather_map(self, src, dst, edge):
        return src.seen

    def apply(self, v, acc):
        new = v.seen | acc
        changed = new != v.seen
        v.seen = new
        return changed


class LabelOut(gr.GASProgram):
    """Min label over out-edges, the receiver read through the absorbed minimum."""
    vertex = {"label": "int64"}
    gather_edges = "out"
    gather_reduce = gr.monoid.min

    def init(self, v):
        v.label = v.id

    def gather_map(self, src, dst, edge):
        return gr.minimum(dst.label, src.label)

    def apply(self, v, acc):
        changed = acc < v.label
        v.label = gr.minimum(v.label, acc)
        return changed


class Delta(gr.GASProgram):
    """A sum over the changed neighbours only: push sends exactly those."""
    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.sum
    gather_from = "changed"

    def init(self, v):
        v.x = 1.0
        return v.id == 0

    def gather_map(self, src, dst, edge):
        return src.x * 0.5

    def apply(self, v, acc):
        v.x = v.x + acc
        return acc > 0.01


@pytest.mark.parametrize("cls", [Widest, Reach, LabelOut, Delta])
def test_custom_push_ok(cls):
    assert cls.spec.push_ok, cls.spec.push_reason


FRONTIER_SUM = '''
import grstream as gr
class FrontierSum(gr.GASProgram):
    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.sum
    def gather_map(self, src, dst, edge):
        return src.x
    def apply(self, v, acc):
        new = v.x + acc
        changed = new != v.x
        v.x = new
        return changed
'''

NOT_ABSORBED = '''
import grstream as gr
class NotAbsorbed(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + dst.level
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed
'''

OVERWRITES = '''
import grstream as gr
class Overwrites(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + 1
    def apply(self, v, acc):
        changed = acc < v.level
        v.level = acc
        return changed
'''

ALWAYS = '''
import grstream as gr
class Always(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + 1
    def apply(self, v, acc):
        v.level = gr.minimum(v.level, acc)
        return True
'''

TWO_FIELDS = '''
import grstream as gr
class TwoFields(gr.GASProgram):
    vertex = {"level": "int64", "hits": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + 1
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        v.hits = v.hits + 1
        return changed
'''

WRONG_TEST = '''
import grstream as gr
class WrongTest(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + 1
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new > v.level
        v.level = new
        return changed
'''

PULL_ONLY = '''
import grstream as gr
class PullOnly(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    direction = "pull"
    def gather_map(self, src, dst, edge):
        return src.level + 1
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed
'''

SCATTERS = '''
import grstream as gr
class Scatters(gr.GASProgram):
    vertex = {"level": "int64"}
    edge_state = {"w": "int64"}
    gather_reduce = gr.monoid.min
    def gather_map(self, src, dst, edge):
        return src.level + edge.w
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed
    def scatter(self, src, dst, edge):
        edge.w = edge.w + 1
'''

AGGREGATE = '''
import grstream as gr
class Aggregate(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    aggregates = {"top": gr.monoid.max}
    aggregate_dtype = {"top": "int64"}
    def aggregate_top(self, v):
        return v.level
    def gather_map(self, src, dst, edge):
        return src.level + self.top
    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed
'''


@pytest.mark.parametrize("code,why", [
    (FRONTIER_SUM, "not idempotent"), (NOT_ABSORBED, "reads dst.level"),
    (OVERWRITES, "not min(v.level, acc)"), (ALWAYS, "apply returns True"),
    (TWO_FIELDS, "writes 2 fields"), (WRONG_TEST, "changed"),
    (PULL_ONLY, "direction = 'pull'"), (SCATTERS, "scatter"), (AGGREGATE, "aggregate")])
def test_custom_pull_only(code, why):
    cls = gr.program_from_source(code)
    assert not cls.spec.push_ok
    assert why in cls.spec.push_reason, cls.spec.push_reason


def test_sender_map_peels_absorbed_receiver_terms():
    from types import SimpleNamespace
    from grstream.program.push import sender_map
    view = SimpleNamespace(label=np.array([4, 1, 7]), level=np.array([0, 2, 5]))
    # connected components: minimum(src.label, dst.label) -> src.label over in-edges and
    # dst.label over out-edges (the sender is the other end)
    for d in ("in", "out"):
        np.testing.assert_array_equal(sender_map(ConnectedComponents.spec, d)(None, view),
                                      view.label)
    np.testing.assert_array_equal(sender_map(BFS.spec, "in")(None, view), view.level + 1)
    np.testing.assert_array_equal(sender_map(LabelOut.spec, "out")(None, view), view.label)
    assert sender_map(SSSP.spec, "in") is None          # the message reads the edge
    assert sender_map(DagLevels.spec, "in") is None     # and the receiver's distance
    assert sender_map(PageRank.spec, "in") is None      # not push-valid
    assert sender_map(Delta.spec, "in") is None         # not absorbing: nothing is peeled


def _bfs_state(n, source, other=None):
    from grstream.algorithms.bfs import UNREACHED
    level = np.full(n, UNREACHED, dtype=np.int64)
    level[source] = 0
    if other is not None:
        level[other] = 3
    seed = np.zeros(n, dtype=bool)
    seed[source] = True
    return {"level": level}, seed


@pytest.mark.parametrize("other", [None, 7, (1 << 16) + 5, (3 << 16) - 1])
def test_seed_is_silent_blocks(other):
    """The blockwise pass finds a loud vertex outside the seed in any block (the first, a later
    one, the last vertex), and masks the seed's own vertices out wherever they are."""
    from grstream.program.push import SILENT_BLOCK, seed_is_silent
    n = 3 * SILENT_BLOCK
    state, seed = _bfs_state(n, (2 << 16) + 9, other)
    assert seed_is_silent(BFS.spec, BFS(source=0), state, seed) is (other is None)


@pytest.mark.parametrize("other", [None, 7, (1 << 16) + 5, (3 << 16) - 1])
@pytest.mark.parametrize("ranks", [2, 3, 5])
def test_seed_is_silent_over_ranks_gives_the_whole_pass(other, ranks):
    """Ranks each test their own vertices (``span``) and agree through an all-gather: every
    rank's answer is the whole pass's, wherever the loud vertex is (a rank without vertices
    too)."""
    import threading
    from grstream.program.push import SILENT_BLOCK, seed_is_silent
    n = 3 * SILENT_BLOCK
    state, seed = _bfs_state(n, (2 << 16) + 9, other)
    cuts = [0, *sorted(int(c) for c in np.linspace(0, n, ranks + 1)[1:-1]), n]
    cuts[1] = 0   # (rank 0 owns no vertex)
    barrier, box = threading.Barrier(ranks), [None] * ranks
    got = [None] * ranks

    def rank(r):
        def gather(value):   # an all-gather of one object per rank, as MpiExchange.gather
            box[r] = value
            barrier.wait()
            out = list(box)
            barrier.wait()
            return out
        got[r] = seed_is_silent(BFS.spec, BFS(source=0), state, seed, (cuts[r], cuts[r + 1]), gather)
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [other is None] * ranks


def test_seed_is_silent_reads_views(monkeypatch):
    """The check reads the state by contiguous blocks (views, no id list of the vertices outside
    the seed) and compiles the sender maps once per program class, not once per run."""
    from grstream.program import push
    from grstream.program.views import VertexView
    calls, views = [], []
    real_map, real_init = push.sender_map, VertexView.__init__
    monkeypatch.setattr(push, "sender_map", lambda *a: calls.append(a) or real_map(*a))

    def init(self, fields, builtins, index, count, **kw):
        views.append(index)
        real_init(self, fields, builtins, index, count, **kw)
    monkeypatch.setattr(VertexView, "__init__", init)
    BFS.spec.__dict__.pop("_silent_maps", None)
    state, seed = _bfs_state(1000, 3)
    for _ in range(3):
        assert push.seed_is_silent(BFS.spec, BFS(source=3), state, seed) is True
    assert len(calls) == 1
    assert views and all(isinstance(i, slice) for i in views)


def test_message_field_is_the_sending_ends_plain_field():
    assert message_field(BrandesForward.spec, "in") == "sigma"
    assert message_field(BrandesBackward.spec, "out") == "ratio"
    assert message_field(BrandesBackward.spec, "in") is None        # dst is the receiver there
    assert message_field(WeightedBrandesBackward.spec, "out") is None  # a where(...) of it
    assert message_field(BFS.spec, "in") is None                       # level + 1
    assert message_field(DagLevels.spec, "in") is None
