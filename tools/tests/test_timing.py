"""Timing statistics and rep counts on a fake clock."""
import pytest
from gpufolio.timing import rep_counts, summarize, time_wall


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
