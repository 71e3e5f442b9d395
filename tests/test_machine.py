"""Which machine a figure comes from, and compiling as another ISA (measure/machine.py)."""

import pytest

from xtc_katas.measure import machine


def test_the_description_names_the_cpu_its_simd_and_its_cores():
    import os

    from cpuinfo import get_cpu_info

    text = machine.describe()
    assert get_cpu_info()["brand_raw"] in text
    assert any(isa in text for isa in ("AVX-512", "AVX2", "SSE"))
    assert text.endswith(f"{os.cpu_count()} cores")


class TvmBackendStandIn:
    __module__ = "xtc.backends.tvm.TVMBackend"

    def get_compiler(self, **kwargs):
        return kwargs


class MlirBackendStandIn:
    __module__ = "xtc.backends.mlir.MlirBackend"


def test_native_compiles_take_no_extra_options(monkeypatch):
    monkeypatch.delenv(machine.ISA_ENV, raising=False)
    assert machine.compiler_options(TvmBackendStandIn) == {}


def test_an_avx2_emulation_compiles_for_avx2_on_both_backends(monkeypatch):
    monkeypatch.setenv(machine.ISA_ENV, "avx2")
    assert machine.compiler_options(TvmBackendStandIn) == {"target": "x86_64", "arch": "avx2"}
    assert machine.compiler_options(MlirBackendStandIn) == {"cpu": "haswell"}


def test_an_unknown_isa_is_refused(monkeypatch):
    monkeypatch.setenv(machine.ISA_ENV, "avx1024")
    with pytest.raises(ValueError, match="can emulate"):
        machine.compiler_options(TvmBackendStandIn)


def test_an_avx2_emulation_reports_8_lanes_to_xtc(monkeypatch):
    import xtc.utils.cpu as cpu

    monkeypatch.setattr(cpu, "cpu_info", cpu.cpu_info)  # restored after the test
    monkeypatch.setenv(machine.ISA_ENV, "avx2")
    machine.emulate_cpu_info()
    assert cpu.cpu_info()["vsize"]["float32"] == 8


def test_every_compile_of_an_emulated_backend_is_for_the_emulated_isa(monkeypatch):
    # A learner's search compiles through the Backend class it is handed: emulation
    # must reach those compiles too, or an AVX-512 search picks tiles an AVX2 machine
    # would not.
    from xtc_katas.measure.backends import emulating

    monkeypatch.setenv(machine.ISA_ENV, "avx2")
    emulating.cache_clear()
    compiled = emulating(TvmBackendStandIn)().get_compiler(dump_file="x")
    assert compiled == {"target": "x86_64", "arch": "avx2", "dump_file": "x"}
    monkeypatch.delenv(machine.ISA_ENV)
    emulating.cache_clear()
    assert emulating(TvmBackendStandIn) is TvmBackendStandIn
