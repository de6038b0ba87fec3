"""The estimator's results and conventions: attributes, prediction, parameters, pickling,
progress, determinism."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

import nrmm


def small(**kw):
    settings = dict(sweeps=100, n_chains=2, random_state=3)
    settings.update(kw)
    return nrmm.MixtureModel(**settings)


def test_fit_finds_the_groups_and_sets_the_attributes(blobs):
    X, y = blobs
    m = small().fit(X)
    assert adjusted_rand_score(y, m.labels_) > 0.95
    assert m.n_clusters_ == 3
    assert m.kernel_ == "nw"
    assert m.n_features_in_ == 2
    assert m.labels_.shape == m.map_labels_.shape == (90,)
    assert m.draws_.shape[1] == 90 and m.draws_.shape[0] > 0
    s = m.posterior_similarity_
    assert s.shape == (90, 90) and np.allclose(np.diag(s), 1.0) and np.allclose(s, s.T)
    assert abs(sum(m.k_distribution_.values()) - 1.0) < 1e-9
    for name in ("log_joint", "n_clusters"):
        d = m.summary_["diagnostics"][name]
        assert {"ess_bulk", "ess_tail", "rhat"} <= set(d)
    by_loss = m.summary_["by_loss"]
    assert {e["loss"] for e in by_loss["estimates"]} >= {"vi", "binder"}
    for name, losses in by_loss["expected_losses"].items():
        assert all(v >= 0.0 for v in losses.values()), name
    assert by_loss["credible_ball"]["radius"] >= 0.0
    vi = m.estimates_by_loss_["vi"]
    assert vi.shape == (90,) and adjusted_rand_score(y, vi) > 0.95
    k_vi = [e["n_clusters"] for e in by_loss["estimates"] if e["loss"] == "vi"][0]
    assert len(np.unique(vi)) == k_vi
    # The default estimate is the VI's; Dahl's draw and the best state are beside it.
    assert m.summary_["default_estimate"] == "vi"
    assert np.array_equal(m.labels_, vi)
    assert np.array_equal(m.estimates_by_loss_["map"], m.map_labels_)
    assert m.estimates_by_loss_["dahl"].shape == (90,)
    assert by_loss["loss_a"] == 1.0
    assert len(m.traces_) == 2
    trace = m.traces_[0]
    assert len(np.asarray(trace["sweep"])) == 100
    assert m.n_iter_ == 100


def test_fit_predict_is_labels_and_predict_reproduces_the_training_clusters(blobs):
    X, y = blobs
    m = small()
    labels = m.fit_predict(X)
    np.testing.assert_array_equal(labels, m.labels_)
    # Each training point is far more likely in its own cluster than elsewhere.
    assert adjusted_rand_score(m.labels_, m.predict(X)) > 0.95


def test_predict_proba_is_a_distribution_with_a_new_cluster_column(blobs):
    X, _ = blobs
    m = small().fit(X)
    far = np.array([[60.0, 60.0]])
    p = m.predict_proba(np.vstack([X[:3], far]))
    assert p.shape == (4, m.n_clusters_ + 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert m.predict(far)[0] == m.n_clusters_, "a far point opens a new cluster"


def test_score_samples_is_a_density_that_prefers_the_data(blobs):
    X, _ = blobs
    m = small().fit(X)
    inside = m.score_samples(X[:5])
    outside = m.score_samples(np.array([[30.0, -30.0]]))
    assert np.isfinite(inside).all()
    assert inside.min() > outside[0] + 10
    assert m.score(X) == pytest.approx(float(np.mean(m.score_samples(X))))


def test_the_same_seed_gives_the_same_chains_and_another_seed_other_ones(blobs):
    X, _ = blobs
    a = small(sampler="gibbs", init="single").fit(X)
    b = small(sampler="gibbs", init="single").fit(X)
    c = small(sampler="gibbs", init="single", random_state=4).fit(X)
    np.testing.assert_array_equal(a.draws_, b.draws_)
    np.testing.assert_array_equal(a.traces_[1]["log_joint"], b.traces_[1]["log_joint"])
    assert not np.array_equal(a.traces_[0]["log_joint"], c.traces_[0]["log_joint"])


def test_get_set_params_and_clone():
    m = nrmm.MixtureModel(prior="nggp", sweeps=10)
    params = m.get_params()
    assert params["prior"] == "nggp" and params["sweeps"] == 10 and params["n_chains"] == 4
    m.set_params(sampler="gibbs", alpha=2.0)
    assert m.sampler == "gibbs" and m.alpha == 2.0
    c = clone(m)
    assert c.get_params() == m.get_params() and c is not m


def test_a_fitted_model_pickles_and_predicts_the_same(blobs):
    X, _ = blobs
    m = small().fit(X)
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict(X), again.predict(X))
    np.testing.assert_allclose(m.score_samples(X[:4]), again.score_samples(X[:4]))


def test_samplers_priors_and_kernels(blobs):
    X, y = blobs
    for kw in (
        dict(sampler="jain-neal"),
        dict(sampler="tgmcmc", init="noisy-ibhc"),
        dict(sampler="subcluster"),
        dict(prior="nggp", hyperpriors=True),
        dict(kernel="diag"),
        dict(kernel_hyperpriors=True),
        dict(seconds=0.2, sweeps=None),
    ):
        m = small(**kw).fit(X)
        assert adjusted_rand_score(y, m.labels_) > 0.9, kw
        assert np.isfinite(m.score_samples(X[:2])).all(), kw
    nggp = small(prior="nggp", hyperpriors=True).fit(X)
    assert {"alpha", "sigma", "u"} <= set(nggp.hyper_)


def test_sparse_counts_under_the_multinomial_kernel():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(1)
    # Two topics over disjoint halves of a 40-word vocabulary, 20 documents each.
    docs = []
    for topic in (0, 1):
        for _ in range(20):
            words = rng.integers(0, 20, size=30) + 20 * topic
            docs.append(np.bincount(words, minlength=40))
    C = sp.csr_matrix(np.array(docs))
    m = small().fit(C)
    assert m.kernel_ == "md"
    assert adjusted_rand_score(np.repeat([0, 1], 20), m.labels_) == 1.0
    dense = small(kernel="md").fit(C.toarray())
    np.testing.assert_array_equal(dense.labels_, m.labels_)
    assert np.isfinite(m.score_samples(C[:3])).all()


def test_progress_bar_writes_to_standard_error(blobs, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    X, _ = blobs
    small(sweeps=400, n_chains=1, progress=True).fit(X)
    err = capsys.readouterr().err
    assert "nrmm [" in err and "K=" in err


def test_traces_are_dataframes_when_pandas_is_installed(blobs):
    pd = pytest.importorskip("pandas")
    X, _ = blobs
    m = small().fit(X)
    assert isinstance(m.traces_[0], pd.DataFrame)
    assert {"sweep", "log_joint", "n_clusters"} <= set(m.traces_[0].columns)


def test_sampling_releases_the_interpreter_lock(blobs):
    import threading

    X, _ = blobs
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        small(seconds=1.0, sweeps=None, n_chains=1).fit(X)
    finally:
        done.set()
        t.join()
    # A thread that held the lock for the whole second would leave the counter near zero
    # (Python switches threads only every 5 ms of bytecode, and not inside native code).
    assert count[0] > 10_000, count[0]


def test_loss_a_is_the_parameter_of_the_vi_and_binder_estimates(blobs):
    X, _ = blobs
    m = small(loss_a=1.6).fit(X)
    by_loss = m.summary_["by_loss"]
    assert by_loss["loss_a"] == 1.6
    assert [e["loss"] for e in by_loss["estimates"]][:2] == ["vi(a=1.6)", "binder(a=1.6)"]
    assert np.array_equal(m.labels_, m.estimates_by_loss_["vi"])
    with pytest.raises(ValueError, match="loss_a"):
        small(loss_a=2.0).fit(X)


def test_constant_columns_are_left_out_with_a_note_and_predict_takes_every_column(blobs):
    X, y = blobs
    with_constant = np.column_stack([np.full(len(X), 4.0), X])
    with pytest.warns(UserWarning, match="column 1 is constant: left out of the model"):
        m = small().fit(with_constant)
    plain = small().fit(X)
    np.testing.assert_array_equal(m.draws_, plain.draws_)
    assert m.n_features_in_ == 3
    np.testing.assert_allclose(m.predict_proba(with_constant), plain.predict_proba(X))
    with pytest.raises(ValueError, match="2 features"):
        m.predict(X)
