"""Checkpoints, resume, and Ctrl-C from Python."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import nrmm


def settings(run_dir, **kw):
    s = dict(sampler="sams", n_chains=2, sweeps=40, checkpoint_every=10, random_state=5,
             run_dir=run_dir)
    s.update(kw)
    return nrmm.MixtureModel(**s)


def without_seconds(trace):
    return {k: np.asarray(v) for k, v in dict(trace).items() if k != "seconds"}


def test_a_resumed_run_is_the_run_that_never_stopped(blobs, tmp_path):
    X, _ = blobs
    straight = settings(tmp_path / "straight", sweeps=80).fit(X)
    resumed = settings(tmp_path / "resumed", sweeps=40).fit(X)
    assert (tmp_path / "resumed" / "chain-0" / "checkpoint.json").is_file()
    resumed.resume(X, sweeps=80)
    assert resumed.n_iter_ == 80
    np.testing.assert_array_equal(straight.draws_, resumed.draws_)
    np.testing.assert_array_equal(straight.labels_, resumed.labels_)
    for a, b in zip(straight.traces_, resumed.traces_):
        a, b = without_seconds(a), without_seconds(b)
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_resume_needs_a_run_dir(blobs):
    X, _ = blobs
    with pytest.raises(ValueError, match="run_dir"):
        nrmm.MixtureModel().resume(X)


def test_resume_refuses_other_data(blobs, tmp_path):
    X, _ = blobs
    m = settings(tmp_path / "run").fit(X)
    with pytest.raises(ValueError, match="data"):
        m.resume(X + 1.0, sweeps=50)


# A run far longer than the interrupt's second, yet finite: a lost interrupt fails the test
# ("DID NOT RAISE") instead of hanging it.
LONG = dict(sweeps=300_000, checkpoint_every=100)


def sampling_started(monkeypatch):
    """An event set at the fit's first progress report, once the chains sample (a Ctrl-C
    sent before that lands in the pilot, which has nothing to resume)."""
    started = threading.Event()

    def report(done, total=None, n_clusters=None):
        if done is not None:
            started.set()

    monkeypatch.setattr(nrmm._estimator, "make_progress", lambda enabled: report)
    return started


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to itself")
def test_ctrl_c_stops_every_chain_cleanly_and_the_run_resumes(blobs, tmp_path, monkeypatch):
    X, _ = blobs
    m = settings(tmp_path / "run", **LONG)
    sampling = sampling_started(monkeypatch)
    # Ctrl-C as Python's default handler takes it, while the fit runs; pressed again every
    # half second until the fit ends (as a user would), and ignored once it has.
    in_fit = threading.Event()

    def on_sigint(signum, frame):
        if in_fit.is_set():
            raise KeyboardInterrupt

    def interrupt():
        assert sampling.wait(60), "sampling did not start"
        time.sleep(1.0)
        while in_fit.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        in_fit.set()
        timer = threading.Thread(target=interrupt)
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt, match="resume"):
            try:
                m.fit(X)
            finally:
                in_fit.clear()
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 30, "the chains stopped at their next sweep"
    for c in (0, 1):
        assert (tmp_path / "run" / f"chain-{c}" / "checkpoint.json").is_file()
    # The interrupted run goes on from its checkpoints to a sweep budget.
    done = max(
        int(open(tmp_path / "run" / f"chain-{c}" / "trace.csv").read().split()[-1].split(",")[0])
        for c in (0, 1)
    )
    m.resume(X, sweeps=done + 20)
    assert m.n_iter_ == done + 20


def test_a_tempered_run_swaps_and_resumes_as_the_run_that_never_stopped(blobs, tmp_path):
    X, _ = blobs
    ladder = dict(temperatures=[1.0, 0.8, 0.6])
    straight = settings(tmp_path / "straight", sweeps=60, **ladder).fit(X)
    resumed = settings(tmp_path / "resumed", sweeps=30, **ladder).fit(X)
    resumed.resume(X, sweeps=60)
    np.testing.assert_array_equal(straight.draws_, resumed.draws_)
    for a, b in zip(straight.traces_, resumed.traces_):
        a, b = without_seconds(a), without_seconds(b)
        assert {"swap_0_1_accepted", "swap_1_2_accepted"} <= set(a)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    assert sum(int(np.sum(t["swap_0_1_accepted"])) for t in straight.traces_) > 0
    with pytest.raises(ValueError, match="temperatures"):
        settings(tmp_path / "bad", temperatures=[1.0, 1.2]).fit(X)
    with pytest.raises(ValueError, match="temperatures"):
        settings(tmp_path / "bad", temperatures="1,0.5").fit(X)


def test_ctrl_c_inside_the_progress_callback_stops_the_run_too(blobs, tmp_path, monkeypatch):
    X, _ = blobs
    m = settings(tmp_path / "run", **LONG)
    calls = []

    def report(done, total=None, n_clusters=None):
        calls.append(done)
        if len(calls) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(nrmm._estimator, "make_progress", lambda enabled: report)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match="resume"):
        m.fit(X)
    assert time.monotonic() - started < 30, "the chains stopped at their next sweep"
    for c in (0, 1):
        assert (tmp_path / "run" / f"chain-{c}" / "checkpoint.json").is_file()
