"""The GPU executor's start of a run: the initial vertex state uploaded from the host (``init``'s
arrays, staged in page-locked memory) or made on the device (a declared state: fill kernels);
mixed into :class:`.executor.CudaExecutor` (``self.dev``, ``self.pushes``, ``self.lane_runs``
are its)."""
import time

import numpy as np


class RunStart:
    """``host_state``, ``load_state`` and ``fill_state`` of the executor contract."""

    def host_state(self, name, shape, dtype):
        """The field's page-locked staging array while the plan holds room for the whole state
        (``memory.state_pinned``), else pageable memory (see Executor.host_state)."""
        dtype = np.dtype(dtype)
        if not self.memory.state_pinned or len(shape) != 1:
            return np.zeros(shape, dtype=dtype)
        arr = self._host_state.get(name)
        if arr is None or arr.shape != tuple(shape) or arr.dtype != dtype:
            if arr is not None:
                self.ledger.give("pinned", f"vertex state {name}", arr.nbytes)
            self.ledger.take("pinned", f"vertex state {name}", int(np.prod(shape)) * dtype.itemsize)
            arr = self._host_state[name] = self.dev.cuda.pagelocked_empty(shape, dtype)
        self.dev.wait_upload()   # the last run's upload may still read it (an interrupted run)
        return arr   # (the engine's init writes every entry: engine/state.py)

    def load_state(self, state, edge_state):
        # no sync: a staged upload runs on a stream of its own while the engine finds the seed
        # ids and the seeding plan runs (it reads no state unless the program has aggregates);
        # the compute stream waits for it in begin (DeviceState.wait_state), so the first
        # iteration absorbs what is left of it (start_times: "state_s" is the enqueue time)
        t0 = time.perf_counter()
        if self.lane_runs is not None:   # (n, lanes) fields, lane-major on the device
            self.lane_runs.use(next(iter(state.values())).shape[1])
            self.lane_runs.upload_state(state)
            self.start_times = {"state_s": time.perf_counter() - t0}
            return
        self._new_state(t0, lambda: self.dev.load_state(state, edge_state, staged=self._host_state,
                                                        span=self.state_span()))

    def fill_state(self, initial, edge_state):
        """A declared initial state made on the device (DeviceState.fill_state: kernels on the
        compute stream, no host array, no upload); the session never declares one in lanes."""
        self._new_state(time.perf_counter(), lambda: self.dev.fill_state(initial, edge_state))

    def _new_state(self, t0, make):
        self._begun = False
        make()
        if self.pushes.available:
            self.pushes.reset()
        self.start_times = {"state_s": time.perf_counter() - t0}

    def state_span(self):
        """The vertices whose initial state the host wrote: every vertex (None), or an MPI
        rank's own where init ran over them alone (distributed/gpu_rank.py)."""
        return None
