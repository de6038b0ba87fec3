"""Bad input and bad settings arrive as Python exceptions carrying the library's message,
never as a crash."""

import numpy as np
import pytest

import nrmm


def test_nan_names_its_row_and_column(blobs):
    X, _ = blobs
    X = X.copy()
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"row 3 column 2 = NaN: expected a finite number"):
        nrmm.MixtureModel(sweeps=5).fit(X)


def test_huge_values_are_refused_with_what_to_do(blobs):
    X, _ = blobs
    X = X.copy()
    X[0, 0] = 1e200
    with pytest.raises(ValueError, match="rescale the data"):
        nrmm.MixtureModel(sweeps=5).fit(X)


@pytest.mark.parametrize(
    "settings, pattern",
    [
        (dict(kernel="gauss"), r"invalid kernel = 'gauss'"),
        (dict(sampler="metropolis"), r"invalid sampler = 'metropolis'"),
        (dict(n_chains=0), r"invalid n_chains = 0"),
        (dict(sweeps=0), r"invalid sweeps = 0"),
        (dict(sweeps=10, seconds=1.0), "sweeps or seconds, not both"),
        (dict(seconds=-1.0), r"seconds"),
        (dict(alpha=-1.0), r"alpha"),
        (dict(prior="nggp", sigma=1.5), r"sigma"),
        (dict(sigma=0.3), r"`sigma` and `u` belong to the NGGP prior"),
        (dict(init="kmeans"), r"unknown initialisation 'kmeans'"),
        (dict(sampler_options={"leaps": 3}), r"unknown sampler_options \['leaps'\]"),
        (dict(sampler="sams", sampler_options={"proposals": 0, "gibbs_sweeps": 0}), "nothing to do"),
        (dict(burn_in=10, sweeps=10), r"burn_in"),
        (dict(nw_psi=[1.0, 0.0, 0.0, -1.0]), r"psi"),
    ],
)
def test_bad_settings_raise_value_error_naming_the_parameter(blobs, settings, pattern):
    X, _ = blobs
    with pytest.raises(ValueError, match=pattern):
        nrmm.MixtureModel(**{"sweeps": 5, **settings}).fit(X)


def test_sparse_real_input_says_sparse():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="sparse"):
        nrmm.MixtureModel(kernel="nw", sweeps=5).fit(sp.eye(10, format="csr"))
    fractional = sp.random(10, 5, density=0.5, random_state=0, format="csr")
    with pytest.raises(ValueError, match="sparse count matrix"):
        nrmm.MixtureModel(sweeps=5).fit(fractional)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="row 1 column 2 = -1"):
        nrmm.MixtureModel(kernel="md", sweeps=5).fit(np.array([[1, -1], [2, 0]]))


def test_predict_checks_the_dimension(blobs):
    X, _ = blobs
    m = nrmm.MixtureModel(sweeps=10, n_chains=1, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((2, 3)))


def test_predict_before_fit_is_not_fitted_error(blobs):
    from sklearn.exceptions import NotFittedError

    X, _ = blobs
    with pytest.raises(NotFittedError):
        nrmm.MixtureModel().predict(X)


def test_one_dimensional_input_asks_for_a_reshape():
    with pytest.raises(ValueError, match="reshape"):
        nrmm.MixtureModel(sweeps=5).fit(np.arange(10.0))


def test_empty_input():
    with pytest.raises(ValueError):
        nrmm.MixtureModel(sweeps=5).fit(np.zeros((0, 2)))
