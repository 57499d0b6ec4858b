"""Trainings at once follow the container's CPU quota (`docker run --cpus`, compose's `cpus`), which
os.sched_getaffinity does not show: a fake cgroup folder stands for /sys/fs/cgroup."""

import os

import pytest

from transformer_viz.app.server import limits as limits_module
from transformer_viz.app.server.limits import ServerLimits, cpu_quota, usable_cores


@pytest.fixture
def eight_cores(monkeypatch):
    """A CPU set of 8 cores, as a container without --cpuset-cpus on an 8-core host sees it."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)


def cgroup_v2(folder, text):
    (folder / "cpu.max").write_text(text)
    return folder


def cgroup_v1(folder, quota, period="100000"):
    (folder / "cpu").mkdir()
    (folder / "cpu" / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (folder / "cpu" / "cpu.cfs_period_us").write_text(f"{period}\n")
    return folder


@pytest.mark.parametrize(("text", "quota", "cores"), [
    ("200000 100000\n", 2.0, 2),  # --cpus 2
    ("150000 100000\n", 1.5, 1),  # a worker gets a whole core: 1.5 CPUs run one training at a time
    ("50000 100000\n", 0.5, 1),  # at least one
    ("max 100000\n", None, 8),  # no quota: the CPU set
    ("1600000 100000\n", 16.0, 8),  # a quota above the CPU set: the CPU set
])
def test_cgroup_v2_cpu_max(tmp_path, eight_cores, text, quota, cores):
    folder = cgroup_v2(tmp_path, text)
    assert cpu_quota(folder) == quota and usable_cores(folder) == cores


@pytest.mark.parametrize(("quota", "cores"), [("300000", 3), ("-1", 8)])
def test_cgroup_v1_cfs_quota(tmp_path, eight_cores, quota, cores):
    assert usable_cores(cgroup_v1(tmp_path, quota)) == cores


@pytest.mark.parametrize("text", ["", "lots 100000", "100000 0", "1 2 3"])
def test_a_file_not_understood_or_missing_leaves_the_cpu_set(tmp_path, eight_cores, text):
    assert usable_cores(cgroup_v2(tmp_path, text)) == 8
    assert usable_cores(tmp_path / "missing") == 8


def test_the_server_runs_one_training_per_cpu_of_its_quota(tmp_path, eight_cores, monkeypatch):
    monkeypatch.setattr(limits_module, "CGROUP", cgroup_v2(tmp_path, "200000 100000"))
    assert ServerLimits.from_environment({}).trainings_at_once == 2  # TVIZ_TRAININGS_AT_ONCE=0, the default
    assert ServerLimits.from_environment({"TVIZ_TRAININGS_AT_ONCE": "3"}).trainings_at_once == 3  # the host's word
