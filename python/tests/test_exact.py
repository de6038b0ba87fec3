"""`exact_posterior` and the samplers against it."""

import numpy as np
import pytest

import nrmm

# Data set B of the library's exact checks: 7 points, two loose groups.
POINTS = np.array([[-1.2, 0.3], [-0.8, -0.1], [-1.0, 0.6], [0.9, 1.1], [1.3, 0.7], [1.1, 1.4], [0.1, 0.4]])


def test_the_exact_posterior_is_a_distribution_over_the_bell_number_of_partitions():
    post = nrmm.exact_posterior(POINTS, top=5)
    assert post.n_partitions == 877  # B_7
    assert post.k_probabilities.shape == (8,)
    assert post.k_probabilities.sum() == pytest.approx(1.0)
    assert post.expected_k == pytest.approx(np.dot(np.arange(8), post.k_probabilities))
    probs = [p for _, p in post.top]
    assert probs == sorted(probs, reverse=True) and len(probs) == 5
    assert post.co_clustering.shape == (7, 7)
    np.testing.assert_allclose(np.diag(post.co_clustering), 1.0)


def test_priors_change_the_exact_posterior():
    dp = nrmm.exact_posterior(POINTS, alpha=0.1)
    many = nrmm.exact_posterior(POINTS, alpha=10.0)
    assert many.expected_k > dp.expected_k
    nggp = nrmm.exact_posterior(POINTS, prior="nggp", hyperpriors=True)
    assert 1.0 < nggp.expected_k < 7.0


def test_too_many_points_are_refused_with_the_limit():
    with pytest.raises(ValueError, match="at most 12"):
        nrmm.exact_posterior(np.random.default_rng(0).normal(size=(13, 2)))


def test_unknown_settings_are_refused():
    with pytest.raises(TypeError, match="sweeps"):
        nrmm.exact_posterior(POINTS, sweeps=10)


def test_the_sampler_converges_to_the_exact_co_clustering():
    post = nrmm.exact_posterior(POINTS, alpha=1.0)
    m = nrmm.MixtureModel(
        sampler="sams", alpha=1.0, n_chains=4, sweeps=4000, burn_in=100, init="single",
        draws_per_chain=1024, random_state=11,
    ).fit(POINTS)
    # 4096 draws spaced 4 sweeps apart; a co-clustering frequency's standard error is at most
    # 0.5 / sqrt(4096) ≈ 0.008 for independent draws; 0.05 allows an effective size of a
    # tenth of that.
    err = np.abs(m.posterior_similarity_ - post.co_clustering).max()
    assert err < 0.05, err
    exact_k = {k: p for k, p in enumerate(post.k_probabilities) if p > 0}
    for k, p in exact_k.items():
        assert abs(m.k_distribution_.get(k, 0.0) - p) < 0.05, (k, p)


GIBBS_TYPE = [
    dict(prior="py", alpha=-0.2, sigma=0.4),
    dict(prior="py", hyperpriors=True),
    dict(prior="mfm", gamma=0.5, k_prior="geometric:0.3"),
    dict(prior="mfm", k_prior="poisson:2", hyperpriors=True),
]


@pytest.mark.parametrize("settings", GIBBS_TYPE)
def test_gibbs_type_priors_sample_their_exact_posterior(settings):
    post = nrmm.exact_posterior(POINTS, **settings)
    assert post.k_probabilities.sum() == pytest.approx(1.0)
    m = nrmm.MixtureModel(
        sampler="sams", n_chains=4, sweeps=4000, burn_in=100, init="single",
        draws_per_chain=1024, random_state=11, **settings,
    ).fit(POINTS)
    # The bound of test_the_sampler_converges_to_the_exact_co_clustering.
    err = np.abs(m.posterior_similarity_ - post.co_clustering).max()
    assert err < 0.05, (settings, err)
    for k, p in enumerate(post.k_probabilities):
        assert abs(m.k_distribution_.get(k, 0.0) - p) < 0.05, (settings, k, p)


@pytest.mark.parametrize("settings", GIBBS_TYPE)
def test_gibbs_type_priors_sample_their_exact_posterior_by_sub_clusters(settings):
    # The exact sub-cluster sampler, from its default start and from an SVA fit by the
    # prior's urn, with the bounds above.
    post = nrmm.exact_posterior(POINTS, **settings)
    for init in ("auto", "sva"):
        m = nrmm.MixtureModel(
            sampler="subcluster", n_chains=4, sweeps=4000, burn_in=100, init=init,
            draws_per_chain=1024, random_state=12, **settings,
        ).fit(POINTS)
        err = np.abs(m.posterior_similarity_ - post.co_clustering).max()
        assert err < 0.05, (settings, init, err)
        for k, p in enumerate(post.k_probabilities):
            assert abs(m.k_distribution_.get(k, 0.0) - p) < 0.05, (settings, init, k, p)


def test_hyperpriors_of_gibbs_type_priors_are_integrated_out():
    for prior in ("py", "mfm"):
        fixed = nrmm.exact_posterior(POINTS, prior=prior)
        random = nrmm.exact_posterior(POINTS, prior=prior, hyperpriors=True)
        assert random.k_probabilities.sum() == pytest.approx(1.0)
        assert abs(fixed.expected_k - random.expected_k) > 1e-6, prior


def test_gibbs_type_settings_are_checked():
    with pytest.raises(ValueError, match="sigma|alpha"):
        nrmm.exact_posterior(POINTS, prior="py", alpha=-0.5, sigma=0.3)
    with pytest.raises(ValueError, match="k_prior|poisson"):
        nrmm.exact_posterior(POINTS, prior="mfm", k_prior="poisson:-1")
    with pytest.raises(ValueError, match="gibbs, jain-neal, sams, tgmcmc, subcluster"):
        nrmm.MixtureModel(prior="mfm", sampler="direct", sweeps=5).fit(POINTS)
