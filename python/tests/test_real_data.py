"""The real data sets beside the repository (skipped, saying where they were looked for, when
they are absent)."""

import numpy as np
from sklearn.metrics import adjusted_rand_score

import nrmm
from conftest import real_data


def test_iris_clusters_follow_the_species():
    X, species = real_data("iris")
    m = nrmm.MixtureModel(sampler="sams", n_chains=2, sweeps=300, random_state=1).fit(X)
    assert 2 <= m.n_clusters_ <= 6
    # Versicolor and virginica overlap, so a mixture of Gaussians without labels does not
    # recover the three species exactly; chance agreement is 0.
    assert adjusted_rand_score(species, m.labels_) > 0.4
    assert np.isfinite(m.score_samples(X)).all()
