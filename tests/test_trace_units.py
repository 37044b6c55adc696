"""tools/trace_units.py's report: each unit's copy and kernels and what bounded them, from the
host times and device spans of one plan."""
import types

from grstream.engine.plan import Unit

from ._tools import tool_module


def test_report_names_what_each_copy_and_kernel_waited_for():
    report = tool_module("trace_units").report
    held = Unit((30,), "held", ("merge",), direction="push", slot=0)
    copy = Unit((21,), "copy", ("merge",), direction="push", slot=0, nbytes=25_000_000)
    table = Unit((0, 1, 2), "resident", ("merge",) * 3, direction="push")
    h0 = 100.0
    plan = {"plan": types.SimpleNamespace(iteration=3, seed=False), "host0": h0,
            "plan_s": (h0 - 0.0005, h0 - 0.0001), "begin_end": h0 + 0.0001,
            "units": [{"unit": held, "issue": (h0 + 0.0001, h0 + 0.0002), "copies": (0, 0), "kernel": 0,
                       "done": h0 + 0.0003},
                      {"unit": copy, "issue": (h0 + 0.0003, h0 + 0.0004), "copies": (0, 2), "kernel": 1,
                       "done": h0 + 0.0005},
                      {"unit": table, "issue": (h0 + 0.0005, h0 + 0.0006), "copies": (2, 2), "kernel": 2,
                       "done": h0 + 0.0007}],
            # the copy into the held unit's slot starts once its kernels end (0.9 ms)
            "copy_spans": [(0.9, 1.3), (0.95, 1.4)], "kernel_spans": [(0.2, 0.9), (1.41, 1.6), (1.6, 2.0),
                                                                      (2.5, 2.5)],
            "read_back": (h0 + 0.0008, h0 + 0.003),
            "stats": types.SimpleNamespace(time_total=0.0035, transfer_bytes={"copy": 25_000_000})}
    lines = report(plan)
    assert lines[0].startswith("level 3: wall 3.50 ms, planning 0.40, copy busy 0.50, kernel busy 1.29")
    assert "overlap 0.00" in lines[0] and "25.0 MB" in lines[0]
    rows = lines[2:5]
    assert "held" in rows[0] and "host issue (-0.00)" in rows[0].split("|")[-1]
    copy_why, kernel_why = rows[1].split("|")[-1].split("/")
    assert "slot's kernels (+0.00)" in copy_why and "its copy (+0.01)" in kernel_why
    assert "0.90-  1.40" in rows[1] and "1.41-  1.60" in rows[1]
    assert "previous kernels (+0.00)" in rows[2].split("|")[-1]
    assert lines[5].strip() == "apply, publish, counts (GPU) 2.50-2.50"
    assert lines[6].strip().startswith("read back (host) 0.80-3.00")
