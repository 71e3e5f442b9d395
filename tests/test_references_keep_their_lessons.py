"""The references keep the rules their own lessons teach (issue 57): a reference that
breaks its lesson's rule teaches the learner that the rule does not matter.

- 06: "keep every candidate valid: the accumulators, B's vectors and A's broadcast fit
  the registers": no candidate of the reference's space spills, on any ISA it meets;
- 07 and 11: the `vr` filters' sizes are fixed defaults, "are they this machine's?": the
  references' strategies carry this machine's registers and caches;
- 03: "the fastest of several": the reference's evaluator times more than one run.

Each reference is loaded as the harness loads it under --solutions; the SIMD width it
reads from XTC's cpu_info() is set per ISA, as the machine description reads it.
"""

from __future__ import annotations

import re

import pytest

from xtc_katas.checks import loop_nests
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import PROBLEMS, STRATEGY, TUTORIAL
from xtc_katas.measure import machine_description
from xtc_katas.measure.machine_description import NEON, X86

ISAS = {"avx2": dict(X86)["avx2"], "avx512": dict(X86)["avx512f"], "neon": NEON}


def with_lanes(monkeypatch, module, vectors) -> None:
    """XTC's cpu_info() reads `vectors`' lanes, for `module` and for XTC's own imports."""
    import xtc.utils.cpu as cpu

    native = cpu.cpu_info

    def cpu_info() -> dict:
        return {**native(), "vsize": {"float32": vectors.lanes, "float64": vectors.lanes // 2}}

    monkeypatch.setattr(cpu, "cpu_info", cpu_info)
    if hasattr(module, "cpu_info"):
        monkeypatch.setattr(module, "cpu_info", cpu_info)
    monkeypatch.setattr(loop_nests, "machine", lambda: vectors)


@pytest.mark.parametrize("isa", ISAS)
def test_kata06_reference_space_has_no_candidate_that_spills(monkeypatch, isa):
    from xtc.backends.mlir import Backend
    from xtc.schedules.descript import descript_scheduler

    reference = loader.load(find(6), solution=True)
    with_lanes(monkeypatch, reference, ISAS[isa])
    spilling = []
    for name, spec in reference.candidate_specs():
        scheduler = Backend(TUTORIAL.graph()).get_scheduler()
        descript_scheduler(
            scheduler=scheduler, node_name="C", abstract_dims=TUTORIAL.dims, spec=spec
        )
        # Any tile inside k, unrolled by the spec or by LLVM: none may spill.
        if loop_nests.accumulators_fit(scheduler.get_loop_nest(), TUTORIAL):
            spilling.append(name)
    assert not spilling, f"{isa}: the reference's space holds tiles that spill: {spilling}"


def cache_bytes() -> dict[str, int]:
    """This machine's L1d and L2 in bytes, as the machine description reads them."""
    units = {"KiB": 1024, "MiB": 1024 * 1024}
    found = {}
    for name, size in machine_description.caches_below_l3():
        number, unit = re.fullmatch(r"(\d+) (KiB|MiB)", size).groups()
        found[name] = int(number) * units[unit]
    return found


def filter_sizes(strategy) -> dict[str, int]:
    """The sizes XTC 0.3.2's `vr` filters read (BaseStrategy.__init__'s kwargs)."""
    return {
        "vreg_num": strategy._arch_vreg_num,
        "l1_size": strategy._arch_l1_size,
        "l2_size": strategy._arch_l2_size,
    }


@pytest.mark.parametrize("isa", ISAS)
def test_kata07_reference_strategy_filters_with_this_machines_sizes(monkeypatch, isa):
    reference = loader.load(find(7), solution=True)
    with_lanes(monkeypatch, reference, ISAS[isa])
    got = filter_sizes(reference.make_strategy(STRATEGY.graph()))
    assert got["vreg_num"] == ISAS[isa].registers, (isa, got)
    caches = cache_bytes()
    if "L1d" in caches and "L2" in caches:
        assert (got["l1_size"], got["l2_size"]) == (caches["L1d"], caches["L2"]), (caches, got)


@pytest.mark.parametrize("isa", ISAS)
def test_kata11_reference_strategy_filters_with_this_machines_sizes(monkeypatch, isa):
    reference = loader.load(find(11), solution=True)
    with_lanes(monkeypatch, reference, ISAS[isa])
    got = filter_sizes(reference.conv_strategy(PROBLEMS["resnet18_02"].graph()))
    assert got["vreg_num"] == ISAS[isa].registers, (isa, got)
    caches = cache_bytes()
    if "L1d" in caches and "L2" in caches:
        assert (got["l1_size"], got["l2_size"]) == (caches["L1d"], caches["L2"]), (caches, got)


class Timed:
    """A module whose evaluator keeps the keywords it was made with."""

    def __init__(self) -> None:
        self.evaluators: list[dict] = []

    def get_evaluator(self, **kwargs):
        self.evaluators.append(kwargs)
        return self

    def evaluate(self):
        return [2e-3, 1e-3], 0, ""


def test_kata03_reference_takes_the_fastest_of_several_runs():
    reference = loader.load(find(3), solution=True)
    module = Timed()
    reference.percent_of_peak_of(module, fmas=10**6, peak_fmas_per_s=2e9)
    assert module.evaluators, "the reference never made an evaluator"
    # XTC's evaluator times one run by default (repeat=1): min() of one time is that time.
    assert all(kwargs.get("repeat", 1) > 1 for kwargs in module.evaluators), module.evaluators
