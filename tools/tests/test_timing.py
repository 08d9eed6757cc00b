"""Timing statistics and rep counts on a fake clock."""
import pytest
from gpufolio.timing import MAX_GAP_MS, MIN_GAP_MS, gap_for, host_queue_ms, rep_counts, summarize, time_wall


class FakeClock:
    """Each call to fn advances time by the next duration; the clock only moves when fn runs."""

    def __init__(self, durations_s):
        self.now, self.durations, self.i = 0.0, list(durations_s), 0

    def __call__(self):
        return self.now

    def work(self):
        self.now += self.durations[self.i % len(self.durations)]
        self.i += 1


def test_summarize_quantiles():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0], "x")
    assert (s.median_ms, s.min_ms, s.max_ms, s.n) == (3.0, 1.0, 5.0, 5)
    assert s.p20_ms == pytest.approx(1.8) and s.p80_ms == pytest.approx(4.2)


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [1.0, float("nan")], [-1.0]])
def test_summarize_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        summarize(bad, "x")


def test_rep_counts_never_below_minimum_for_slow_calls():
    # a 200 ms call with a 500 ms budget is still timed 10 times
    assert rep_counts(200.0, 100, 500, 3, 10, 1000) == (3, 10)
    assert rep_counts(0.01, 100, 500, 3, 10, 1000) == (1000, 1000)


def test_time_wall_on_fake_clock_reports_the_median_of_the_timed_reps():
    clock = FakeClock([0.010])  # 10 ms per call
    synced = []
    s = time_wall(clock.work, warmup_ms=20, rep_ms=100, min_reps=5, max_reps=50, warmup_min=1,
                  sync=lambda: synced.append(1), clock=clock)
    assert s.median_ms == pytest.approx(10.0) and s.n == 10 and s.method == "wall"
    assert clock.i == 1 + 1 + 10  # estimate, one more warm-up, ten timed
    assert len(synced) == 2 * clock.i  # synchronised before and after every call


def test_time_wall_median_ignores_one_outlier():
    clock = FakeClock([0.001, 0.001, 0.001, 0.5, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001])
    s = time_wall(clock.work, warmup_ms=0, rep_ms=0, min_reps=11, max_reps=11, warmup_min=1,
                  sync=lambda: None, clock=clock)
    assert s.median_ms == pytest.approx(1.0) and s.max_ms == pytest.approx(500.0)


def test_host_queue_time_is_the_longest_try_each_from_an_idle_device():
    clock = FakeClock([0.0002, 0.0009, 0.0003])  # the host takes 0.2, 0.9, 0.3 ms to queue the call
    synced = []
    ms = host_queue_ms(clock.work, sync=lambda: synced.append(clock.i), n=5, clock=clock)
    assert ms == pytest.approx(0.9)
    assert synced == [0, 1, 2, 3, 4, 5]  # a sync before every try and one after the last


def test_the_wait_before_a_timed_call_outlasts_its_host_time_within_bounds():
    assert gap_for(0.0) == MIN_GAP_MS  # room for prepare and the flush even when queueing is free
    assert gap_for(0.4) == pytest.approx(0.6)  # a heavy launcher: the call is queued before the GPU reaches it
    assert gap_for(60.0) == MAX_GAP_MS  # host-bound whatever the wait


def test_stats_drop_fields_a_method_does_not_measure():
    assert "host_ms" not in summarize([1.0, 2.0], "wall").as_dict()
