"""The algorithm shapes the engine ships, written against the public GAS API."""
import grstream as gr

INF = 1 << 62


class BFS(gr.GASProgram):
    vertex = {"level": "int64"}
    gather_reduce = gr.monoid.min
    params = {"source": 0}

    def gather_map(self, src, dst, edge):
        return src.level + 1

    def apply(self, v, acc):
        new = gr.minimum(v.level, acc)
        changed = new < v.level
        v.level = new
        return changed


class SSSP(gr.GASProgram):
    vertex = {"dist": "float64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.min

    def gather_map(self, src, dst, edge):
        return src.dist + edge.weight

    def apply(self, v, acc):
        new = gr.minimum(v.dist, acc)
        changed = new < v.dist
        v.dist = new
        return changed


class PageRank(gr.GASProgram):
    vertex = {"rank": "float64", "delta": "float64"}
    reads = {"out_degree"}
    gather_reduce = gr.monoid.sum
    activate = "all"
    params = {"damping": 0.85, "tol": 1e-6}
    aggregates = {"dangling": gr.monoid.sum, "err": gr.monoid.sum}

    def gather_map(self, src, dst, edge):
        return src.rank / src.out_degree

    def apply(self, v, acc):
        """Damped sum plus the dangling mass spread uniformly."""
        new = (1 - self.damping) / self.num_vertices \
            + self.damping * (acc + self.dangling / self.num_vertices)
        v.delta = gr.abs(new - v.rank)
        v.rank = new
        return v.delta > 0.0

    def aggregate_dangling(self, v):
        return gr.where(v.out_degree == 0, v.rank, 0.0)

    def aggregate_err(self, v):
        return v.delta


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


class CC(gr.GASProgram):
    vertex = {"label": "int64"}
    gather_edges = "all"
    gather_reduce = gr.monoid.min

    def gather_map(self, src, dst, edge):
        return gr.minimum(src.label, dst.label)

    def apply(self, v, acc):
        new = gr.minimum(v.label, acc)
        changed = new < v.label
        v.label = new
        return changed


class BCForward(gr.GASProgram):
    vertex = {"level": "int64", "sigma": "float64"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    params = {"source": 0}

    def gather_map(self, src, dst, edge):
        return gr.where(src.level == self.iteration - 1, src.sigma, 0.0)

    def apply(self, v, acc):
        found = (v.level < 0) & (acc > 0.0)
        v.sigma = gr.where(found, acc, v.sigma)
        v.level = gr.where(found, self.iteration, v.level)
        return found


SAMPLES = [BFS, SSSP, PageRank, PageRank32, CC, BCForward]
