"""py-cpuinfo's reading is taken once per CPU (measure/machine.py): never a stale one."""

from __future__ import annotations

import json

import pytest

from xtc_katas.measure import machine, module_cache


@pytest.fixture
def reading(monkeypatch, tmp_path):
    """The CPU reading with a counting stand-in for py-cpuinfo and a private cache dir."""
    calls = []

    def original():
        calls.append(1)
        return {"brand_raw": "Test CPU", "flags": ["avx2"], "n": len(calls)}

    monkeypatch.setenv("XTC_KATAS_CACHE_DIR", str(tmp_path / "modules"))
    monkeypatch.setattr(machine, "PY_CPUINFO", original)
    monkeypatch.setattr(machine, "cpu_identity", lambda: "cpu A")
    machine._cpu_reading.cache_clear()
    yield calls
    machine._cpu_reading.cache_clear()


def test_the_cpu_is_read_once_and_kept_on_disk(reading):
    first = machine.get_cpu_info()
    first["flags"].append("changed by a caller")  # a copy: the kept reading is intact
    assert machine.get_cpu_info()["flags"] == ["avx2"]
    machine._cpu_reading.cache_clear()  # a new process
    assert machine.get_cpu_info()["n"] == 1 and reading == [1], "read from disk"


def test_another_cpu_is_read_again(reading, monkeypatch):
    machine.get_cpu_info()
    machine._cpu_reading.cache_clear()
    monkeypatch.setattr(machine, "cpu_identity", lambda: "cpu B")
    assert machine.get_cpu_info()["n"] == 2


def test_a_damaged_or_foreign_entry_is_read_again(reading):
    path = module_cache.record_path("cpuinfo", "cpu A")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert machine.get_cpu_info()["n"] == 1
    machine._cpu_reading.cache_clear()
    path.write_text(json.dumps({"key": "cpu Z", "value": {"n": 99}}))  # a hash clash
    assert machine.get_cpu_info()["n"] == 2


def test_the_identity_names_the_cpu_model_and_flags():
    identity = machine.cpu_identity()
    assert "model name" in identity and "flags" in identity and "cpu MHz" not in identity
