"""Tables in and out: pandas DataFrames with categories, words, booleans and missing entries
fitted by the product kernel, typed as the command line types a CSV file, predicted by column
name, and imputed, the same seed filling the same entries as `nrmm run` + `nrmm impute`."""

import json
import subprocess

import numpy as np
import pytest

import nrmm

pd = pytest.importorskip("pandas", reason="pandas is needed for the DataFrame tests")


@pytest.fixture
def frame():
    """60 rows in two groups: a real column, words (three levels), a yes/no column, a small
    integer column (categories by the command line's inference) and a `category` column, with
    missing entries in each; an index that is not 0..n."""
    rng = np.random.default_rng(11)
    g = np.repeat([0, 1], 30)
    x = np.where(g == 0, rng.normal(-3, 1, 60), rng.normal(3, 1, 60))
    colour = np.where(g == 0, rng.choice(["red", "blue"], 60, p=[0.9, 0.1]), "green")
    colour[rng.random(60) < 0.1] = "blue"
    yes = np.where(rng.random(60) < np.where(g == 0, 0.85, 0.15), "yes", "no")
    legs = np.where(g == 0, 2, 4) + 2 * (rng.random(60) < 0.1)
    size = np.where(g == 0, "small", rng.choice(["large", "huge"], 60))
    df = pd.DataFrame(
        {
            "x": x,
            "colour": colour.astype(object),
            "yes": yes.astype(object),
            "legs": legs.astype(float),
            "size": pd.Categorical(size, categories=["small", "large", "huge", "unseen"]),
        },
        index=[f"r{i}" for i in range(60)],
    )
    for j, col in enumerate(df.columns):
        rows = rng.choice(60, 5, replace=False)
        df.iloc[rows, j] = np.nan
    return df


def small(**kw):
    return nrmm.MixtureModel(n_chains=2, sweeps=60, random_state=5, **kw)


def test_a_frame_is_typed_as_the_command_line_types_its_csv(frame):
    m = small().fit(frame)
    assert m.kernel_ == "mixed"
    assert m.column_types_ == {
        "x": "real", "colour": "cat", "yes": "binary", "legs": "cat", "size": "cat"
    }
    assert list(m.feature_names_in_) == list(frame.columns)
    assert m.n_features_in_ == 5
    m = small(types={"legs": "count", "yes": "cat"}).fit(frame)
    assert m.column_types_["legs"] == "count" and m.column_types_["yes"] == "cat"
    assert small(types=["legs:real"]).fit(frame).column_types_["legs"] == "real"


def test_a_complete_numeric_frame_is_still_real_vectors(blobs):
    X, _ = blobs
    m = small().fit(pd.DataFrame(X, columns=["a", "b"]))
    assert m.kernel_ in ("nw", "diag") and m.column_types_ is None
    np.testing.assert_array_equal(m.labels_, small().fit(X).labels_)


def check_filled(m, given, table, entries):
    """`table` is `given` with every missing entry filled, dtypes and labels kept, and
    `entries` lists each filled entry with its probability (levels) or mean and sd (reals)."""
    assert not table.isna().any().any()
    assert list(table.index) == list(given.index) and list(table.columns) == list(given.columns)
    assert (table.dtypes == given.dtypes).all()
    observed = given.notna()
    pd.testing.assert_frame_equal(table[observed], given[observed])
    assert len(entries) == int(given.isna().sum().sum())
    assert set(entries.columns) == {"row", "column", "value", "probability", "mean", "sd"}
    for e in entries.itertuples():
        assert table.loc[e.row, e.column] == e.value
        if m.column_types_[e.column] == "real":
            assert np.isnan(e.probability) and e.sd > 0 and e.value == e.mean
        else:
            assert 0 < e.probability <= 1 and np.isnan(e.mean)


def test_impute_fills_every_missing_entry_keeping_dtypes_and_categories(frame):
    m = small().fit(frame)
    table, entries = m.impute()
    check_filled(m, frame, table, entries)
    assert list(table["size"].cat.categories) == ["small", "large", "huge", "unseen"]
    # A level is filled by its most probable level: at least the share of a uniform guess.
    levels = entries[entries.column == "colour"]
    assert (levels.probability >= 1 / 3).all()


def test_impute_fills_new_rows_matched_by_name(frame):
    m = small().fit(frame)
    new = frame.iloc[:6].copy()
    new.iloc[0, :] = np.nan  # a row with nothing observed
    new.iloc[1, [0, 2]] = np.nan
    table, entries = m.impute(new)
    check_filled(m, new, table, entries)
    assert set(entries["row"]) <= set(new.index)
    # Columns in another order fill the same entries; the training table is still the default.
    again, _ = m.impute(new[new.columns[::-1]])
    pd.testing.assert_frame_equal(again[new.columns], table)
    assert not m.impute()[0].isna().any().any()
    bad = new.copy()
    bad["colour"] = "purple"
    with pytest.raises(ValueError, match="purple"):
        m.impute(bad)


def test_cluster_profiles_name_columns_and_levels(frame):
    m = small().fit(frame)
    profiles = m.cluster_profiles()
    assert [p["cluster"] for p in profiles] == list(range(m.n_clusters_))
    assert sum(p["size"] for p in profiles) == len(frame)
    for p in profiles:
        assert set(p["columns"]) == set(frame.columns)
        assert set(p["columns"]["x"]) == {"mean", "sd"}
        colour = p["columns"]["colour"]
        assert set(colour) == {"blue", "green", "red"}
        assert abs(sum(colour.values()) - 1) < 1e-12


def test_predict_matches_columns_by_name_and_takes_missing_entries(frame):
    m = small().fit(frame)
    new = frame.iloc[:6].copy()
    new.iloc[0, :] = np.nan  # a row with nothing observed
    new["colour"] = np.nan  # a column missing in every new row
    proba = m.predict_proba(new)
    assert proba.shape == (6, m.n_clusters_ + 1)
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_array_equal(proba, m.predict_proba(new[new.columns[::-1]]))
    np.testing.assert_array_equal(m.predict(new), np.argmax(proba, axis=1))
    assert np.isfinite(m.score_samples(new)).all()
    bad = frame.iloc[:2].copy()
    bad["colour"] = ["red", "purple"]
    with pytest.raises(ValueError, match="purple"):
        m.predict(bad)
    with pytest.raises(ValueError, match="lacks"):
        m.predict(frame.drop(columns=["x"]))


def test_an_array_with_kernel_mixed_is_a_table():
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
    X[3, 0] = X[30, 1] = np.nan
    m = small(kernel="mixed").fit(X)
    assert m.column_types_ == {"1": "real", "2": "real"}
    table, entries = m.impute()
    assert isinstance(table, np.ndarray) and not np.isnan(table).any()
    assert list(entries["row"]) == [3, 30]
    assert m.predict(X[:4]).shape == (4,)


def test_an_array_with_yes_no_columns_coded_1_0_models_them_as_binary():
    rng = np.random.default_rng(3)
    g = np.repeat([0, 1], 30)
    answers = (rng.random((60, 2)) < np.where(g == 0, 0.9, 0.1)[:, None]).astype(float)
    X = np.column_stack([rng.normal(6 * g, 1.0), answers])
    m = small().fit(X)
    assert m.kernel_ == "mixed"
    assert m.column_types_ == {"1": "real", "2": "binary", "3": "binary"}
    np.testing.assert_array_equal(m.predict(X), m.labels_)
    assert small(kernel="nw").fit(X).column_types_ is None


def test_impute_refuses_a_fit_on_real_vectors(blobs):
    with pytest.raises(ValueError, match="table"):
        small().fit(blobs[0]).impute()


def test_bad_tables_are_refused_clearly(frame):
    empty = frame.copy()
    empty["x"] = np.nan
    with pytest.raises(ValueError, match='"x" has no observed value'):
        small().fit(empty)
    with pytest.raises(ValueError, match="types"):
        small(types={"x": "float"}).fit(frame)
    with pytest.raises(ValueError, match="types"):
        small(types={"nope": "real"}).fit(frame)


def test_the_same_seed_imputes_as_the_command_line(frame, cli, tmp_path):
    data = tmp_path / "table.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "cli"
    subprocess.run(
        [cli, "run", "--data", str(data), "--chains", "2", "--sweeps", "60", "--seed", "5",
         "--out", str(out), "--types", "size:cat"],
        check=True, capture_output=True,
    )
    filled = tmp_path / "filled.csv"
    subprocess.run(
        [cli, "impute", "--run", str(out), "--out", str(filled)], check=True,
        capture_output=True,
    )
    py_dir = tmp_path / "py"
    m = small(run_dir=py_dir).fit(frame)
    for c in (0, 1):
        assert (out / f"chain-{c}" / "draws.jsonl").read_text() == (
            py_dir / f"chain-{c}" / "draws.jsonl"
        ).read_text()
    table, entries = m.impute()
    cli_table = pd.read_csv(filled, keep_default_na=False, na_values=[""])
    cli_entries = pd.read_csv(tmp_path / "filled.filled.csv", keep_default_na=False,
                              na_values=[""])
    assert len(cli_entries) == len(entries)
    for e, c in zip(entries.itertuples(), cli_entries.itertuples()):
        assert (frame.index.get_loc(e.row) + 1, e.column) == (c.row, c.column)
        assert str(e.value) == str(c.value) or float(e.value) == float(c.value)
        for field in ("probability", "mean", "sd"):
            a, b = getattr(e, field), getattr(c, field)
            assert (np.isnan(a) and np.isnan(b)) or a == b, (field, a, b)
    for name in frame.columns:
        if table[name].dtype.kind == "f":
            np.testing.assert_array_equal(table[name].to_numpy(), cli_table[name].to_numpy())
        else:
            assert [str(v) for v in table[name]] == [str(v) for v in cli_table[name]]
    # The profiles are those of the same clusters when the estimates agree.
    cli_profiles = json.loads((tmp_path / "filled.profiles.json").read_text())
    dahl = m.estimates_by_loss_["dahl"]
    if np.array_equal(dahl, m.labels_):
        assert cli_profiles == m.cluster_profiles()
