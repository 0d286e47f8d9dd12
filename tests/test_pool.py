"""Independent jobs on every core (``checker.pool``): results in the jobs' order whatever order they finish
in, the callbacks, and a job's error raised in the parent with the workers stopped."""

from __future__ import annotations

import time

import pytest

from checker.pool import run_jobs
from spec.errors import UsageError


def _slow_first(job: int) -> tuple[int, int]:
    time.sleep(0.3 if job == 0 else 0.0)  # the first job finishes last
    return job, job * job


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_results_come_back_in_the_jobs_order(workers):
    started, finished = [], []
    results = run_jobs(_slow_first, list(range(6)), workers, started.append,
                       lambda index, result: finished.append(index))
    assert results == [(i, i * i) for i in range(6)]
    assert started == list(range(6))  # handed out in order
    assert sorted(finished) == list(range(6))
    if workers > 1:
        assert finished[-1] == 0  # it finished last, and still came first


def _fails_on_three(job: int) -> int:
    if job == 3:
        raise UsageError("job 3 is refused")
    return job


def test_a_job_that_raises_stops_the_run_with_its_error():
    with pytest.raises(UsageError, match="job 3 is refused"):
        run_jobs(_fails_on_three, list(range(8)), 2)


def test_running_jobs_are_reported_while_they_run():
    reports = []
    run_jobs(_slow_first, [0, 1], 2, running=reports.append, every=0.05)
    assert reports and all(index in (0, 1) and seconds >= 0 for report in reports for index, seconds in report)


def _stops_at_two_fails_at_five(job: int) -> int:
    if job == 5:
        raise UsageError("job 5 is refused")
    time.sleep(0.2 if job == 2 else 0.0)  # job 2 says stop after job 5 has failed
    return job


@pytest.mark.parametrize("workers", [1, 3])
def test_a_job_that_says_stop_before_a_later_one_fails_ends_the_run_as_one_worker_would(workers):
    finished = []

    def note(index, result):
        finished.append(index)
        return result == 2

    assert run_jobs(_stops_at_two_fails_at_five, list(range(8)), workers, finished=note) == [0, 1, 2]
    assert 2 in finished and 5 not in finished  # (later jobs done before job 2 may have been reported too)
