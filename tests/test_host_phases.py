"""tools/host_phases.py: per-level timers around the engine's (and the CUDA executor's) calls,
put back as they were after the timed run."""
import json
import sys
import types

from ._tools import tool_module


def test_levels_are_timed_by_phase_on_the_cpu(tmp_path):
    tool = tool_module("host_phases")
    tool.main(["--scale", "9", "--shards", "4", "--dir", str(tmp_path), "--out", str(tmp_path),
               "--device", "cpu", "--repeat", "1", "--budget", str(1 << 30)])
    cases = json.loads((tmp_path / "host_phases.json").read_text())
    assert [c["label"] for c in cases] == ["bfs_quarter_c", "bfs_inmem_c"]
    for case in cases:
        levels = [x["it"] for x in case["levels"]]
        assert levels and all(str(it) in case["timers"] for it in levels)
        for it in levels:   # every level planned and ran once, its time counted
            timers = case["timers"][str(it)]
            assert timers["Planner.iteration"][0] == 1 and timers["Session._execute"][0] >= 1
            assert timers["Session._execute"][1] > 0
    assert "function calls" in (tmp_path / "host_phases_cprofile.txt").read_text()


def test_cuda_timers_are_put_back(monkeypatch):
    """Every attribute the CUDA timers wrap exists, and leaving the block restores each one
    (a class's own method, an inherited one, a module function of a stand-in pycuda.driver)."""
    tool = tool_module("host_phases")

    class Stream:
        def synchronize(self):
            pass

        def wait_for_event(self, event):
            pass

    class Event:
        def synchronize(self):
            pass

        def record(self, stream=None):
            pass

        def time_since(self, other):
            return 0.0

        def query(self):
            return True

    class Function:
        def prepared_async_call(self, *args):
            pass
    driver = types.SimpleNamespace(Stream=Stream, Event=Event, Function=Function,
                                   **{name: (lambda *a: None) for name in tool.DRIVER if "." not in name})
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=driver))
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.planner import Planner
    before = {name: vars(CudaExecutor).get(name) for name in ("begin", "load", "state", "activate")}
    iteration, record, copy = Planner.iteration, Event.record, driver.memcpy_htod_async
    with tool.installed(tool.Timers()) as timers:
        assert Planner.iteration is not iteration and Event.record is not record
        assert driver.memcpy_htod_async is not copy
    assert Planner.iteration is iteration and Event.record is record and driver.memcpy_htod_async is copy
    assert {name: vars(CudaExecutor).get(name) for name in before} == before
    assert timers.report() == {}
