"""Zero-copy transfers of the GPU executor: kernels read the pinned host cache where it lies.

The pinned cache is registered mapped (``cuMemHostRegister`` with ``CU_MEMHOSTREGISTER_DEVICEMAP``,
:mod:`.pinnedcache`): the same bytes, the same ledger entry ("pinned cache"), plus a device
address (under unified addressing the host address) through which kernels read them over the
link. A "zerocopy" unit is then delivered without a copy: its ``DeviceArrays`` point into the
mapped cache, and the gather / apply / activation kernels read only the rows they touch (the
active vertices' offsets and edges), as EMOGI (VLDB'21) does.

Over the link a read costs a request whatever its width, so EMOGI's two rules apply: *merged*
(every row is read by a whole warp over consecutive addresses, one wide request per 32 edges, not
one request per edge and thread) and *aligned* (the warp starts at the 128-byte boundary at or
before the row, so that its requests never straddle two lines). :func:`zerocopy_source` derives
that variant of the program's module from the ordinary one: every thread/warp/block walk (the
gathers and the activation) hands rows of one edge or more to a warp (``GR_WARP_MIN`` 1) whose
loop starts aligned, and unrolls the warp and block walks ``UNROLL`` times, so that each thread
keeps that many reads of a long row in flight. :class:`ZeroCopyKernels` compiles it once per executor; the executor runs a
zero-copy unit's phases through it (same kernel names and parameters; its ``__constant__`` block
of program arguments is copied from the main module's before each such unit).

Copies out of mapped memory run at the same speed as out of ordinary pinned memory, so the cache
is mapped whenever the executor may zero-copy (``transfer`` "auto" or "zerocopy").
"""

#: what :func:`zerocopy_source` changes in the ordinary module (skeletons.PRELUDE and TWC)
_WARP_MIN = "#define GR_WARP_MIN 32\n"
_WARP_LOOP = "for (long long j = b + lane; j < e; j += 32) {"
_ALIGNED_LOOP = "for (long long j = (b & ~31LL) + lane; j < e; j += 32) if (j >= b) {"
_BLOCK_LOOP = "for (long long j = b + threadIdx.x; j < e; j += GR_BLOCK) {"
#: a compressed store's warp and block loops (blockids.LOOPS): they walk whole id blocks, one
#: warp each, so their reads are merged and start at a block already
_BLOCKS_WARP_LOOP = "for (long long j0 = b & ~31LL; j0 < e; j0 += 32) {"
_BLOCKS_BLOCK_LOOP = "for (long long j0 = (b & ~31LL) + (threadIdx.x & ~31); j0 < e; j0 += GR_BLOCK) {"
#: loads of a long row each thread keeps in flight: over the link a read waits microseconds, so a
#: block walking a hub's row one load per thread at a time is bound by latency, not bandwidth
UNROLL = 8


def zerocopy_source(source):
    """The module source with warp-merged, 128-byte-aligned row walks (module docstring); a
    compressed store's module (``gr_warp_id``) walks id blocks by warps already: only every row
    goes to a warp and the loops are unrolled."""
    packed = "gr_warp_id" in source
    warp, block = (_BLOCKS_WARP_LOOP, _BLOCKS_BLOCK_LOOP) if packed else (_WARP_LOOP, _BLOCK_LOOP)
    if _WARP_MIN not in source or warp not in source:
        raise ValueError("the kernel skeletons changed: zerocopy_source no longer finds the TWC "
                         "warp phase it rewrites")
    if block not in source:
        raise ValueError("the kernel skeletons changed: zerocopy_source no longer finds the TWC "
                         "block phase it rewrites")
    unroll = f"\n#pragma unroll {UNROLL}\n    "
    aligned = warp if packed else _ALIGNED_LOOP
    return (source.replace(_WARP_MIN, "#define GR_WARP_MIN 1\n")
            .replace(warp, unroll + aligned).replace(block, unroll + block))


class ZeroCopyKernels:
    """The zero-copy variant of a DeviceState's kernels (see the module docstring)."""

    def __init__(self, dev, ks):
        from dataclasses import replace
        from .codegen import CHANGED_GLOBAL
        from .compile import load_module
        from .kernelargs import PreparedKernel
        self.dev = dev
        zks = replace(ks, source=zerocopy_source(ks.source))
        mod = load_module(zks, dev.device)
        self.fn = {phase: PreparedKernel(mod.get_function(kname), ks.args[phase])
                   for phase, kname in ks.kernels.items()}
        self.g_ptr, self.g_size = mod.get_global("g")
        # a gather_from "changed" program's changed-set address, copied like the arguments
        self.changed_at = None if dev.changed_at is None else mod.get_global(CHANGED_GLOBAL)[0]

    def enter(self):
        """Use these kernels for the next launches: the program arguments follow (stream order)."""
        dev = self.dev
        dev.cuda.memcpy_dtod_async(self.g_ptr, dev.g_ptr, self.g_size, dev.ex.compute)
        if self.changed_at is not None:
            dev.cuda.memcpy_dtod_async(self.changed_at, dev.changed_at, 8, dev.ex.compute)
        return self.fn
