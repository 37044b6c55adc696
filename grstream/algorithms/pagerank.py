"""PageRank with NetworkX semantics: damping 0.85, dangling mass spread uniformly."""
import grstream as gr

from ._common import execute

NAME = "pagerank"


class PageRank(gr.GASProgram):
    """Power iteration ``x' = d (A^T D^-1 x + dangling/n) + (1-d)/n`` until sum|x'-x| < n tol."""

    vertex = {"rank": "float64", "delta": "float64"}
    reads = {"out_degree"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"damping": 0.85, "tol": 1e-6}
    aggregates = {"dangling": gr.monoid.sum, "err": gr.monoid.sum}
    output = "rank"

    def init(self, v):
        v.rank = 1.0 / max(self.num_vertices, 1)
        v.delta = 0.0

    def gather_map(self, src, dst, edge):
        return src.rank / src.out_degree

    def apply(self, v, acc):
        n = self.num_vertices
        new = self.damping * (acc + self.dangling / n) + (1.0 - self.damping) / n
        v.delta = gr.abs(new - v.rank)
        v.rank = new
        return v.delta > 0.0

    def aggregate_dangling(self, v):
        return gr.where(v.out_degree == 0, v.rank, 0.0)

    def aggregate_err(self, v):
        return v.delta

    def converged(self):
        return self.iteration > 0 and self.err < self.num_vertices * self.tol


def pagerank(store, damping=0.85, tol=1e-6, max_iter=100, **run_options):
    """PageRank scores (float64, summing to 1) and the engine Result (``converged`` says if tol
    was met within ``max_iter`` iterations)."""
    result = execute(PageRank(damping=damping, tol=tol), store, dict(run_options, max_iter=max_iter))
    return result.values["rank"], result


def from_args(store, args, run_options):
    return pagerank(store, damping=args.damping,
                    tol=1e-6 if args.tol is None else args.tol,
                    **dict(run_options, max_iter=100 if args.max_iter is None else args.max_iter))
