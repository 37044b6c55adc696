"""``grstream info``: what a shard store holds."""
import json


def add_parser(sub):
    p = sub.add_parser("info", help="describe a shard store",
                       description="Vertices, edges, shards, balance, properties, format version, sizes.")
    p.add_argument("store", help="shard store (.h5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)
    return p


def describe(store):
    """Dict describing an open :class:`~grstream.store.ShardStore` (the ``--json`` output)."""
    from ..store import format as fmt
    shards = []
    for i in range(store.num_shards):
        info = store.shard_info(i)
        shards.append({"index": i, "lo": info.lo, "hi": info.hi, "num_in_edges": info.num_in_edges,
                       "num_out_edges": info.num_out_edges, "nbytes": info.nbytes})
    edges = [s["num_in_edges"] + s["num_out_edges"] for s in shards]
    mean = sum(edges) / len(edges)
    id_bytes = {}       # bytes per edge of each direction's stored ids
    for direction, ids in fmt.ID_DATASET.items():
        name = f"{direction}/{ids}"
        stored = fmt.codec_parts(name) if store.compressed else [name]
        total = sum(store.shard_info(i).dataset_nbytes[n] for i in range(store.num_shards)
                    for n in stored)
        count = sum(s[f"num_{direction}_edges"] for s in shards)
        id_bytes[direction] = total / count if count else 0.0
    return {
        "path": str(store.path),
        "format_version": store.format_version,
        "num_vertices": store.num_vertices,
        "num_edges": store.num_edges,
        "num_shards": store.num_shards,
        "max_shard_edges": max(edges),
        "mean_shard_edges": mean,
        "balance": max(edges) / mean if mean else 1.0,
        "directed": store.directed,
        "renumbered": store.renumbered,
        "label_kind": store.label_kind,
        "vertex_order": store.vertex_order,
        "id_base": store.id_base,
        "id_dtype": store.id_dtype.name,
        "codec": fmt.CODEC_NAME if store.compressed else None,
        "id_bytes_per_edge": id_bytes,
        "edge_props": {k: v.name for k, v in store.edge_props.items()},
        "nbytes": store.nbytes(),
        "max_shard_nbytes": store.max_shard_nbytes(),
        "build": store.build,
        "shards": shards,
    }


def main(args):
    from ..store import open as open_store
    with open_store(args.store) as store:
        info = describe(store)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    props = ", ".join(f"{k} ({v})" for k, v in info["edge_props"].items()) or "none"
    lines = [
        f"store:        {info['path']} (format version {info['format_version']})",
        f"vertices:     {info['num_vertices']}" + ("  (renumbered)" if info["renumbered"] else "")
        + (f"  (in {info['vertex_order']} order)" if info["vertex_order"] else ""),
        f"edges:        {info['num_edges']}" + ("" if info["directed"] else "  (undirected, stored both ways)"),
        f"shards:       {info['num_shards']}",
        f"balance:      max {info['max_shard_edges']} / mean {info['mean_shard_edges']:.1f} edges "
        f"per shard (in + out) = {info['balance']:.2f}",
        f"properties:   {props}",
        f"ids:          {info['id_dtype']}; {_labels(info)}",
        f"id storage:   {_id_storage(info)}",
        f"size:         {info['nbytes']} bytes in shards, largest shard {info['max_shard_nbytes']} bytes",
    ]
    print("\n".join(lines))
    return 0


def _id_storage(info):
    """How the id datasets are stored and what an edge's id costs in each direction."""
    per_edge = info["id_bytes_per_edge"]
    sizes = f"in {per_edge['in']:.2f} B/edge, out {per_edge['out']:.2f} B/edge"
    return f"compressed ({info['codec']}): {sizes}" if info["codec"] else f"plain: {sizes}"


def _labels(info):
    """How users name the vertices (README "Vertex ids")."""
    if info["label_kind"] == "str":
        return "vertices are named (string labels)"
    if info["renumbered"]:
        return "vertices answer to the input's original ids"
    return f"vertices answer to ids {info['id_base']}..{info['num_vertices'] - 1 + info['id_base']}"
