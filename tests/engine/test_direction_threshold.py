"""The executor's own push threshold (Capabilities.push_threshold): the default of the direction
rule unless the user gives one (the GPU's switch point is not Ligra's CPU figure)."""
from dataclasses import replace

import numpy as np

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.engine.direction import PUSH_THRESHOLD, DirectionRule, executor_rule, threshold
from grstream.engine.capabilities import Capabilities, PushFacts

from ..algorithms.conftest import build


def test_executor_threshold_is_the_default_only():
    rule = DirectionRule.of()
    gpu = Capabilities("cuda", push=PushFacts(threshold=0.5))
    assert executor_rule(rule, gpu, threshold_given=False).push_threshold == 0.5
    plain = Capabilities("cpu", push=PushFacts())
    assert threshold(executor_rule(rule, plain, False), plain) == PUSH_THRESHOLD
    given = DirectionRule.of(push_threshold=0.01)
    assert executor_rule(given, gpu, threshold_given=True).push_threshold == 0.01
    assert executor_rule(rule, gpu, False).mode == rule.mode
    both = Capabilities("cuda", push=PushFacts(threshold=1.0), queue_fraction=0.0)
    assert (executor_rule(rule, both, False, False).queue_fraction, executor_rule(rule, both, False, True).queue_fraction) \
        == (0.0, rule.queue_fraction)
    assert executor_rule(rule, both, True, False).push_threshold == rule.push_threshold


def test_session_reports_the_rule_it_planned_with(tmp_path, monkeypatch):
    """The CPU executor with a threshold of its own: Result.info shows it, and a user's wins."""
    from grstream.backends.cpu.executor import CpuExecutor
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, num_shards=4)
    real = CpuExecutor.capabilities.__func__

    def caps(cls, setup):
        c = real(cls, setup)
        return replace(c, push=replace(c.push, threshold=0.75))
    monkeypatch.setattr(CpuExecutor, "capabilities", classmethod(caps))
    res = gr.run(BFS(source=0), store)
    assert res.info["direction"]["push_threshold"] == 0.75
    res = gr.run(BFS(source=0), store, push_threshold=0.125)
    assert res.info["direction"]["push_threshold"] == 0.125
