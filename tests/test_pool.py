"""Independent jobs on every core (``checker.pool``): results in the jobs' order whatever order they
finish in, the callbacks, and a job's error raised in the parent with the workers stopped."""

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
    assert (reports and all(index in (0, 1) and seconds >= 0 for report in reports
                            for index, seconds in report))


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

    assert (run_jobs(_stops_at_two_fails_at_five, list(range(8)), workers, finished=note)
            == [0, 1, 2])
    # (later jobs done before job 2 may have been reported too)
    assert 2 in finished and 5 not in finished


def _job(job: int) -> int:
    return job


@pytest.mark.parametrize("workers", [2, 3])
def test_jobs_are_handed_out_in_the_order_given_and_come_back_in_their_own(workers):
    started, order = [], [4, 0, 5, 2, 1, 3]
    assert run_jobs(_job, list(range(6)), workers, started.append, order=order) == list(range(6))
    assert started == order


def test_one_worker_runs_the_jobs_here_in_their_own_order():
    started = []
    assert run_jobs(_job, list(range(4)), 1, started.append, order=[3, 2, 1, 0]) == list(range(4))
    assert started == [0, 1, 2, 3]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("order", [[0, 1, 1], [0, 1], [0, 1, 3]])
def test_an_order_that_is_not_a_permutation_of_the_jobs_is_refused(order, workers):
    with pytest.raises(ValueError, match="each of the 3 jobs once"):
        run_jobs(_job, [0, 1, 2], workers, order=order)


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("order", [None, list(range(7, -1, -1)), [5, 7, 2, 6, 0, 4, 1, 3]])
def test_a_job_that_says_stop_gives_the_same_results_in_any_order(workers, order):
    """The jobs before the one that says stop still run when they were to be handed out after it;
    the results are those of a run in the jobs' own order."""
    finished = []

    def note(index, result):
        finished.append(index)
        return result == 2

    assert run_jobs(_job, list(range(8)), workers, finished=note, order=order) == [0, 1, 2]
    assert {0, 1, 2} <= set(finished)


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("order", [None, list(range(7, -1, -1)), [5, 7, 3, 6, 0, 4, 1, 2]])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_job_that_raises_waits_for_the_earlier_jobs_in_any_order(workers, order):
    ran = []
    with pytest.raises(UsageError, match="job 3 is refused"):
        run_jobs(_fails_on_three, list(range(8)), workers,
                 finished=lambda index, result: ran.append(index), order=order)
    assert {0, 1, 2} <= set(ran)
    # and an earlier job that says stop still wins over it
    assert run_jobs(_fails_on_three, list(range(8)), workers, finished=lambda index, result: index
                    == 1,
                    order=order) == [0, 1]


def _slow_past_two(job: tuple[int, str]) -> int:
    index, marker = job
    if index > 2:  # not needed once job 2 says stop: its worker is stopped before it gets here
        time.sleep(5.0)
        with open(marker, "w") as f:
            f.write("ran to the end")
    return index


def test_later_jobs_still_running_are_stopped_and_their_workers_replaced_for_the_earlier_ones(
    tmp_path):
    """Three workers take jobs 6, 7 and 2 first; job 2 says stop at once: 6 and 7 are not needed and
    are stopped (never reaching their end), and jobs 0 and 1 run on fresh workers instead of waiting
    for them."""
    jobs = [(i, str(tmp_path / f"job-{i}")) for i in range(8)]
    started = []
    results = run_jobs(_slow_past_two, jobs, 3, started.append, lambda index, result: result == 2,
                       order=[6, 7, 2, 0, 1, 3, 4, 5])
    assert results == [0, 1, 2]
    assert started == [6, 7, 2, 0, 1]
    assert not any(tmp_path.iterdir())
