"""Programs the translator tests run: the shipped algorithms plus variants they do not cover."""
import grstream as gr
from grstream.algorithms import BFS, SSSP, PageRank
from grstream.algorithms import BrandesForward as BCForward
from grstream.algorithms import ConnectedComponents as CC

__all__ = ["BFS", "SSSP", "PageRank", "PageRank32", "CC", "BCForward", "SAMPLES"]

INF = 1 << 62


class PageRank32(gr.GASProgram):
    """float32 state: every operation must stay in float32 as numpy keeps it."""
    vertex = {"rank": "float32"}
    reads = {"out_degree"}
    gather_reduce = gr.monoid.sum
    params = {"damping": 0.85, "tol": 1e-6}

    def gather_map(self, src, dst, edge):
        return src.rank / gr.maximum(src.out_degree, 1)

    def apply(self, v, acc):
        new = (1 - self.damping) / self.num_vertices + self.damping * acc
        changed = gr.abs(new - v.rank) > self.tol
        v.rank = new
        return changed


SAMPLES = [PageRank32]
