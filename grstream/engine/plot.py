"""Per-iteration plots of a run: frontier size and bytes moved (GraphReduce Fig. 3 / Fig. 16)."""
from ..errors import UsageError
from ..io.atomic import atomic_file
from .costs import MODES

MODE_COLORS = {"copy": "tab:orange", "compact": "tab:purple", "zerocopy": "tab:cyan"}


def plot_stats(stats, path, title=""):
    """Write a PNG with active/changed vertices and bytes moved per iteration to ``path``
    (stacked by transfer mode where the executor reports bytes per mode); iterations that pushed
    are shaded."""
    try:
        # a Figure of its own, not pyplot: the caller's matplotlib backend stays as it is
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        raise UsageError("--plot needs matplotlib (pip install matplotlib)") from None
    its = [s.iteration for s in stats]
    fig = Figure(figsize=(7, 6))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(its, [s.active_vertices for s in stats], marker="o", label="active vertices")
    ax1.plot(its, [s.changed_vertices for s in stats], marker="s", label="changed vertices")
    ax1.set_ylabel("vertices")
    ax1.set_yscale("symlog")
    ax1.legend()
    ax1.grid(alpha=0.3)
    # on the GPU the bytes that matter cross the host link; on the CPU they come from the store
    gpu = any(s.bytes_h2d for s in stats)
    modes = [m for m in MODES if any(getattr(s, "transfer_bytes", {}).get(m) for s in stats)]
    if modes:
        # streamed shards' bytes stacked by how they moved (copy / compact / zerocopy)
        bottom = [0.0] * len(stats)
        for m in modes:
            part = [s.transfer_bytes.get(m, 0) / 2**20 for s in stats]
            ax2.bar(its, part, bottom=bottom, color=MODE_COLORS[m], label=f"{m} bytes")
            bottom = [a + b for a, b in zip(bottom, part)]
    else:
        moved = [(s.bytes_h2d if gpu else s.bytes_read) / 2**20 for s in stats]
        ax2.bar(its, moved, color="tab:orange",
                label="host -> device bytes" if gpu else "shard bytes read")
    ax2.set_ylabel("MiB moved")
    ax2.set_xlabel("iteration")
    ax2.grid(alpha=0.3)
    ax2b = ax2.twinx()
    ax2b.plot(its, [s.shards_processed for s in stats], color="tab:green", marker=".",
              label="shards processed")
    ax2b.set_ylabel("shards processed")
    ax2.legend(loc="upper left")
    ax2b.legend(loc="upper right")
    shade_push(stats, (ax1, ax2))
    fig.suptitle(title or "grstream run")
    fig.tight_layout()
    with atomic_file(path) as f:
        fig.savefig(f, format="png", dpi=100)


def push_iterations(stats):
    """The iterations whose plan pushed (IterationStats.plan["plan_direction"])."""
    return [s.iteration for s in stats if (s.plan or {}).get("plan_direction") == "push"]


def shade_push(stats, axes):
    """Shade each push iteration's column on ``axes`` (one legend entry)."""
    for k, it in enumerate(push_iterations(stats)):
        for ax in axes:
            ax.axvspan(it - 0.5, it + 0.5, color="tab:gray", alpha=0.15,
                       label="push" if (k == 0 and ax is axes[0]) else None)
    if push_iterations(stats):
        axes[0].legend()
