"""py-cpuinfo's reading is taken once per CPU (measure/cpu_reading.py): never a stale one."""

from __future__ import annotations

import json

import pytest

from xtc_katas.measure import cpu_reading


@pytest.fixture
def reading(monkeypatch, tmp_path):
    """cpu_reading with a counting stand-in for py-cpuinfo and a private cache dir."""
    calls = []

    def original():
        calls.append(1)
        return {"brand_raw": "Test CPU", "flags": ["avx2"], "n": len(calls)}

    monkeypatch.setenv("XTC_KATAS_CACHE_DIR", str(tmp_path / "modules"))
    monkeypatch.setattr(cpu_reading, "ORIGINAL", original)
    monkeypatch.setattr(cpu_reading, "identity", lambda: "cpu A")
    cpu_reading._reading.cache_clear()
    yield calls
    cpu_reading._reading.cache_clear()


def test_the_cpu_is_read_once_and_kept_on_disk(reading):
    first = cpu_reading.get_cpu_info()
    first["flags"].append("changed by a caller")  # a copy: the kept reading is intact
    assert cpu_reading.get_cpu_info()["flags"] == ["avx2"]
    cpu_reading._reading.cache_clear()  # a new process
    assert cpu_reading.get_cpu_info()["n"] == 1 and reading == [1], "read from disk"


def test_another_cpu_is_read_again(reading, monkeypatch):
    cpu_reading.get_cpu_info()
    cpu_reading._reading.cache_clear()
    monkeypatch.setattr(cpu_reading, "identity", lambda: "cpu B")
    assert cpu_reading.get_cpu_info()["n"] == 2


def test_a_damaged_or_foreign_entry_is_read_again(reading):
    path = cpu_reading.path_of("cpu A")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert cpu_reading.get_cpu_info()["n"] == 1
    cpu_reading._reading.cache_clear()
    path.write_text(json.dumps({"key": "cpu Z", "value": {"n": 99}}))  # a hash clash
    assert cpu_reading.get_cpu_info()["n"] == 2


def test_the_identity_names_the_cpu_model_and_flags():
    identity = cpu_reading.identity()
    if identity is None:
        pytest.skip("no /proc/cpuinfo on this system")
    assert "model name" in identity and "flags" in identity and "cpu MHz" not in identity
