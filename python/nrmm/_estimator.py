"""``MixtureModel``: a Bayesian nonparametric mixture fitted by MCMC, as a scikit-learn
estimator."""

from __future__ import annotations

import json
import numbers
import os
import tempfile
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _native
from ._data import is_sparse, n_features, to_native
from ._table import filled_entries, filled_table, is_frame, table_columns, table_types, wants_table
from ._progress import make_progress

KERNELS = ("auto", "nw", "diag", "md", "mixed")
PRIORS = ("dp", "nggp", "py", "mfm")
SAMPLERS = (
    "gibbs",
    "jain-neal",
    "sams",
    "tgmcmc",
    "tgmcmc-paper",
    "subcluster",
    "subcluster-dpmm",
    "direct",
    "quasi-direct",
    "quasi-collapsed",
)
NW_DEFAULTS = ("pooled", "scaled", "reference")
MOVE_OPTIONS = (
    "proposals",
    "launch_scans",
    "gibbs_sweeps",
    "gibbs_subset",
    "global_moves",
    "depth",
)
# Above this many points the posterior similarity matrix (n² float64) is not kept.
SIMILARITY_MAX_POINTS = 4000


def _one_of(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"invalid {name} = {value!r}: expected one of {', '.join(map(repr, allowed))}"
        )


def _positive_int(name, value, *, allow_none=False, minimum=1):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"invalid {name} = {value!r}: expected an integer >= {minimum}")
    return int(value)


def _budget(sweeps, seconds, max_sweeps):
    """The library's budget: a time, a number of sweeps, or automatic rounds (``sweeps`` None
    or "auto", at most ``max_sweeps``; the library fills in the defaults for the data)."""
    if sweeps is not None and seconds is not None:
        raise ValueError("give sweeps or seconds, not both")
    if seconds is not None:
        if max_sweeps is not None:
            raise ValueError("max_sweeps bounds automatic sweeps: give it without seconds")
        return {"seconds": _optional_float("seconds", seconds)}
    if sweeps is None or (isinstance(sweeps, str) and sweeps == "auto"):
        return {"auto": {"max": _positive_int("max_sweeps", max_sweeps, allow_none=True)}}
    if max_sweeps is not None:
        raise ValueError("max_sweeps bounds automatic sweeps: give it with sweeps='auto'")
    return {"sweeps": _positive_int("sweeps", sweeps)}


def _optional_float(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"invalid {name} = {value!r}: expected a number or None")
    return float(value)


def _temperatures(value):
    """A ladder of inverse temperatures as a list of floats (the library checks the ladder)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"invalid temperatures = {value!r}: expected a sequence of numbers")
    ladder = list(value)
    if not all(isinstance(b, numbers.Real) and not isinstance(b, bool) for b in ladder):
        raise ValueError(f"invalid temperatures = {value!r}: expected a sequence of numbers")
    return [float(b) for b in ladder]


def _optional_str(name, value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"invalid {name} = {value!r}: expected a string or None")
    return value


def _seed(random_state) -> int:
    """The library's 64-bit seed: an integer seed as given (so that ``random_state=3`` is the
    command line's ``--seed 3``), else one drawn from the NumPy generator."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0 or random_state >= 2**64:
            raise ValueError(
                f"invalid random_state = {random_state}: expected an integer in [0, 2^64)"
            )
        return int(random_state)
    rng = check_random_state(random_state)
    return int(rng.randint(0, 2**32, dtype=np.uint64))


class MixtureModel(ClusterMixin, DensityMixin, BaseEstimator):
    """A Bayesian nonparametric mixture model (Dirichlet process or normalized generalized
    gamma process prior, conjugate kernel) fitted by Markov chain Monte Carlo.

    The number of clusters is not fixed: the posterior over partitions of the data is
    sampled by ``n_chains`` independent chains, each on its own random stream of
    ``random_state``, so that results do not depend on the number of threads. The chains'
    draws give a point estimate of the clustering (``labels_``: the partition minimising the
    posterior expected Variation of Information, Wade & Ghahramani 2018, beside the minimisers
    of Binder's loss and one minus the ARI and Dahl's least-squares draw in
    ``estimates_by_loss_``), the best state visited (``map_labels_``), the posterior similarity of every pair of
    points, the distribution of the number of clusters, convergence diagnostics (bulk and
    tail ESS, split R-hat), and the posterior predictive density of new points.

    Parameters
    ----------
    kernel : {"auto", "nw", "diag", "md", "mixed"}, default="auto"
        Normal-Wishart (full covariance), diagonal covariance, Multinomial-Dirichlet (word
        counts, sparse input), or the product kernel over a table's typed columns with
        missing entries ("mixed"). "auto" follows the data: a table for a pandas DataFrame
        that is not a complete matrix of numbers (a column of categories, booleans or words,
        or a missing entry), counts for sparse input, else Normal-Wishart unless a full
        covariance cannot be estimated, then diagonal.
    prior : {"dp", "nggp", "py", "mfm"}, default="dp"
        Dirichlet process, normalized generalized gamma process, Pitman-Yor process or
        mixture of finite mixtures (Miller & Harrison 2018).
    sampler : str or None, default=None
        None: chosen by size as on the command line ("tgmcmc" below 50,000 points,
        "subcluster" from there). Else one of "gibbs", "jain-neal", "sams", "tgmcmc",
        "tgmcmc-paper", "subcluster",
        "subcluster-dpmm", "direct", "quasi-direct", "quasi-collapsed". "tgmcmc-paper",
        "subcluster-dpmm", "direct", "quasi-direct" and "quasi-collapsed" are approximate.
    n_chains : int, default=4
        Chains, run in parallel.
    sweeps : int or "auto", default=None
        Sweeps per chain, or "auto" (also when neither ``sweeps`` nor ``seconds`` is given):
        1000 sweeps, then the chains' length doubled until they agree (every traced quantity
        with R-hat at most 1.01 and a bulk effective sample size of at least 400), up to
        ``max_sweeps``. The rounds depend on the traces only, so ``random_state`` gives the
        same fit on every machine.
    max_sweeps : int, default=None
        With automatic sweeps, the most sweeps per chain; None: 16,000, fewer for large data
        (at most 1e9 / (n_samples * n_features**2), never below 1000).
    seconds : float, default=None
        Sampling time per chain instead of a number of sweeps (results then depend on the
        machine's speed).
    burn_in : int, default=None
        Sweeps per chain left out of the estimates; None leaves out the first half, or fewer
        where every chain reached the median log joint of the chains' second halves sooner
        and the chains agree better without those sweeps.
    init : str, default="auto"
        How chains start: "auto" (the better of one cluster and a one-pass SVA fit), "single",
        "singletons", "sva", "noisy-ibhc" or "exact-ibhc".
    alpha, sigma, u : float, default=None
        Initial (or, without ``hyperpriors``, fixed) concentration (for ``prior="py"`` the
        Pitman-Yor theta > -sigma), discount (NGGP in (0, 1), Pitman-Yor in [0, 1)) and NGGP
        auxiliary variable; None: 1, 0.5, 1.
    gamma : float, default=None
        ``prior="mfm"`` only: the Dirichlet parameter of the weights given K components;
        None: 1.
    k_prior : str, default=None
        ``prior="mfm"`` only: the prior on the number of components K, "poisson:LAMBDA"
        (K - 1 ~ Poisson(LAMBDA)) or "geometric:P"; None: "poisson:1".
    hyperpriors : bool, default=False
        Resample alpha (and sigma) under Gamma(1, 1) (and Beta(1.5, 1.5)) hyperpriors; for
        the MFM, gamma under Gamma(1, 1). The Pitman-Yor and MFM priors are taken by the
        samplers "gibbs", "jain-neal", "sams", "tgmcmc" and "subcluster" (and by the "sva"
        start, through their urns).
    kernel_hyperpriors : bool, default=False
        Resample the kernel's scale (Normal-Wishart) or concentration (counts). A table's
        kernel resamples its scale and its levels' concentration whatever this says.
    types : dict or list of str, default=None
        A table's column types by name, overriding those inferred: ``{"legs": "count"}`` or
        ``["legs:count"]``, each among "real", "binary", "cat", "count" (the command line's
        ``--types``). Without it a column is typed as the command line types the same column
        of a CSV file (at most two values binary, words categorical, small integers
        categories or counts, other numbers real), except that a ``category``, object or
        string column with more than two values is categorical. Giving it fits a table.
    beta : float, default=None
        Dirichlet concentration of the count kernel (None: 0.1).
    nw_xi, nw_psi, nw_r, nw_nu : default=None
        Normal-Wishart hyperparameters; None derives them from the data (``nw_defaults``).
    nw_defaults : {"pooled", "scaled", "reference"}, default="pooled"
        "pooled": as "scaled", then the cluster scale set by a short pilot run (2 chains of
        200 sweeps, fewer for the full covariance kernel above 64 dimensions, and from 5,000
        points stopped at 50 or 100 when both chains' best states are one partition) so that a cluster's expected covariance is the pooled within-cluster
        covariance of the pilot's best partition; "scaled": unit-equivariant defaults (a
        cluster's expected covariance a share of the data's); "reference": the tgMCMC paper
        code's (depends on the data's units).
    sampler_options : dict, default=None
        Move settings: ``proposals``, ``launch_scans``, ``gibbs_sweeps``, ``gibbs_subset``,
        ``global_moves``, ``depth``. Without ``proposals``, one split-merge proposal per 100
        points (between 1 and 100) per sweep, as on the command line.
    temperatures : sequence of float, default=None
        Parallel tempering (the command line's ``--temperatures``): the inverse temperatures
        of each chain's ladder, 1 first and strictly decreasing (``[1, 0.9, 0.8]``). Each
        chain then sweeps hotter copies whose likelihood is raised to those powers and swaps
        states with them after every sweep; only the chain's own (1) draws are reported, and
        the traces get each adjacent pair's swaps (``swap_0_1_accepted``, ...). Collapsed
        samplers only ("gibbs", "jain-neal", "sams", "tgmcmc"), without
        ``kernel_hyperpriors``; a sweep costs about one untempered sweep per replica. None:
        no tempering.
    thin : int, default=1
        Every ``thin``-th sweep is traced and may be kept as a draw.
    draws_per_chain : int, default=256
        Partition draws kept per chain (evenly spaced) for the estimates.
    run_dir : str or path, default=None
        Directory that keeps the run (trace, draws, checkpoints) for :meth:`resume` and the
        command line (``nrmm diagnose``, ``nrmm predict``); None uses a temporary directory.
    checkpoint_every : int, default=None
        Sweeps between checkpoints in ``run_dir``, from which :meth:`resume` continues exactly.
    loss_a : float, default=1.0
        The parameter a, in (0, 2), of the generalised Variation of Information and Binder's
        loss whose minimisers ``labels_`` and ``estimates_by_loss_`` give: 1 the plain losses,
        larger makes splitting a cluster of the posterior dearer (fewer clusters), smaller
        makes merging two dearer (more clusters).
    random_state : int, RandomState instance or None, default=None
        Seed of every random draw. An integer is the command line's ``--seed``: the same
        integer gives the same chains from Python, the command line and Rust.
    progress : bool, default=False
        Show a progress bar (tqdm's when installed) while sampling.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        The point estimate of the clustering (canonical labels 0..K-1): the partition
        minimising the posterior expected Variation of Information over the draws (as
        ``estimates_by_loss_["vi"]``); where the draws part the points into too many groups
        that never separate (beyond 2,000,000 groups times clusters), so that the search is
        not made, Dahl's least-squares draw. ``summary_["default_estimate"]`` says which.
    n_clusters_ : int
        Clusters of the point estimate.
    map_labels_ : ndarray of shape (n_samples,)
        The best state (highest log joint) any chain visited.
    estimates_by_loss_ : dict
        The partitions minimising the posterior expected loss over the draws, by the loss's
        name (``"vi"``, ``"binder"``, ``"1-ari"``; Wade & Ghahramani 2018, searched as SALSO,
        Dahl, Johnson & Müller 2022; none beyond 2,000,000 groups of points that never
        separate times clusters), then Dahl's least-squares draw
        (``"dahl"``) and the best state (``"map"``), each an
        ndarray of shape (n_samples,). Their expected losses and the credible ball are in
        ``summary_["by_loss"]``.
    posterior_similarity_ : ndarray of shape (n_samples, n_samples) or None
        Share of draws in which two points are together (None above 4000 points).
    k_distribution_ : dict
        Posterior probability of each number of clusters after burn-in.
    draws_ : ndarray of shape (n_draws, n_samples)
        The partition draws after burn-in, every chain.
    hyper_ : dict
        Hyperparameters of Dahl's draw (the fixed values without hyperpriors), which
        :meth:`predict` uses with the clusters of ``labels_``.
    summary_ : dict
        The run's summary: per chain (sweeps, speed, acceptance, ESS), and per quantity
        (``log_joint``, ``n_clusters``, hyperparameters) the multi-chain bulk and tail ESS and
        split R-hat under ``summary_["diagnostics"]``; ``summary_["warnings"]``; the point
        estimates minimising the expected Variation of Information, Binder's loss and one minus
        the ARI, every estimate's expected loss under each loss, and the 95 % credible ball
        (its radius and bounds, each with its number of clusters) under
        ``summary_["by_loss"]`` (up to 2,000,000 groups of points that never separate times
        clusters).
    traces_ : list
        Per chain its trace (sweep, seconds, n_clusters, log_joint, hyperparameters, move
        acceptance): a pandas DataFrame when pandas is installed, else a dict of arrays.
    kernel_ : str
        The kernel used ("nw", "diag", "md" or "mixed").
    column_types_ : dict or None
        For a table, each column's type by name ("real", "binary", "cat", "count"), as the
        library typed it; None otherwise.
    n_features_in_ : int
        Dimension (or vocabulary size) of the training data.
    """

    def __init__(
        self,
        kernel="auto",
        prior="dp",
        sampler=None,
        *,
        n_chains=4,
        sweeps=None,
        max_sweeps=None,
        seconds=None,
        burn_in=None,
        init="auto",
        alpha=None,
        sigma=None,
        u=None,
        gamma=None,
        k_prior=None,
        hyperpriors=False,
        kernel_hyperpriors=False,
        types=None,
        beta=None,
        nw_xi=None,
        nw_psi=None,
        nw_r=None,
        nw_nu=None,
        nw_defaults="pooled",
        sampler_options=None,
        temperatures=None,
        thin=1,
        draws_per_chain=256,
        run_dir=None,
        checkpoint_every=None,
        loss_a=1.0,
        random_state=None,
        progress=False,
    ):
        self.kernel = kernel
        self.prior = prior
        self.sampler = sampler
        self.n_chains = n_chains
        self.sweeps = sweeps
        self.max_sweeps = max_sweeps
        self.seconds = seconds
        self.burn_in = burn_in
        self.init = init
        self.alpha = alpha
        self.sigma = sigma
        self.u = u
        self.gamma = gamma
        self.k_prior = k_prior
        self.hyperpriors = hyperpriors
        self.kernel_hyperpriors = kernel_hyperpriors
        self.types = types
        self.beta = beta
        self.nw_xi = nw_xi
        self.nw_psi = nw_psi
        self.nw_r = nw_r
        self.nw_nu = nw_nu
        self.nw_defaults = nw_defaults
        self.sampler_options = sampler_options
        self.temperatures = temperatures
        self.thin = thin
        self.draws_per_chain = draws_per_chain
        self.run_dir = run_dir
        self.checkpoint_every = checkpoint_every
        self.loss_a = loss_a
        self.random_state = random_state
        self.progress = progress

    # ----------------------------------------------------------------- settings

    def _model_json(self) -> str:
        """The model's settings in the library's form (its ``ModelSpec``)."""
        _one_of("kernel", self.kernel, KERNELS)
        _one_of("prior", self.prior, PRIORS)
        _one_of("nw_defaults", self.nw_defaults, NW_DEFAULTS)

        def vector(name, value):
            if value is None:
                return None
            a = np.asarray(value, dtype=np.float64)
            return [float(v) for v in a.ravel()]

        spec = {
            "kernel": None if self.kernel == "auto" else self.kernel,
            "beta": _optional_float("beta", self.beta),
            "nw_xi": vector("nw_xi", self.nw_xi),
            "nw_psi": vector("nw_psi", self.nw_psi),
            "nw_r": _optional_float("nw_r", self.nw_r),
            "nw_nu": _optional_float("nw_nu", self.nw_nu),
            "nw_defaults": self.nw_defaults,
            "prior": self.prior,
            "alpha": _optional_float("alpha", self.alpha),
            "sigma": _optional_float("sigma", self.sigma),
            "u": _optional_float("u", self.u),
            "gamma": _optional_float("gamma", self.gamma),
            "k_prior": _optional_str("k_prior", self.k_prior),
            "hyperpriors": bool(self.hyperpriors),
            "kernel_hyperpriors": bool(self.kernel_hyperpriors),
        }
        return json.dumps({k: v for k, v in spec.items() if v is not None})

    def _sampler_json(self, seed: int) -> str:
        """What to run, in the library's form (its ``SamplerSpec``; ``init`` by name)."""
        if self.sampler is not None:
            _one_of("sampler", self.sampler, SAMPLERS)
        if not isinstance(self.init, str):
            raise ValueError(f"invalid init = {self.init!r}: expected a string such as 'auto'")
        options = dict(self.sampler_options or {})
        unknown = sorted(set(options) - set(MOVE_OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown sampler_options {unknown}: expected some of {list(MOVE_OPTIONS)}"
            )
        if self.temperatures is not None:
            options["temperatures"] = _temperatures(self.temperatures)
        budget = _budget(self.sweeps, self.seconds, self.max_sweeps)
        spec = {
            "sampler": {**({} if self.sampler is None else {"sampler": self.sampler}), **options},
            "seed": seed,
            "chain_offset": 0,
            "chains": _positive_int("n_chains", self.n_chains),
            "init": self.init,
            "thin": _positive_int("thin", self.thin),
            "budget": budget,
            "burn_in": _positive_int("burn_in", self.burn_in, allow_none=True, minimum=0),
            "checkpoint_every": _positive_int(
                "checkpoint_every", self.checkpoint_every, allow_none=True
            ),
            "draws_per_chain": _positive_int("draws_per_chain", self.draws_per_chain),
        }
        return json.dumps(spec)

    def _check_input(self, X, reset: bool):
        """``X`` checked for shape and feature names (scikit-learn's bookkeeping) and
        converted for the native module; values are left to the library to refuse. A table
        (see ``wants_table``) travels as its columns of text with the types given."""
        table = (
            wants_table(X, self.kernel, self.types)
            if reset
            else getattr(self, "column_types_", None) is not None
        )
        if reset:
            # A table is given back filled by `impute`, in its own form.
            self._table_X = X if table else None
        if table:
            return self._table_input(X, reset)
        sparse = is_sparse(X)
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=None if sparse else np.float64,
            ensure_all_finite=False,
            ensure_min_samples=1,
        )
        kernel = self.kernel if reset else getattr(self, "kernel_", self.kernel)
        return to_native(X, kernel)

    def _table_input(self, X, reset: bool):
        """A table's columns of text and types for the native module; new rows (``reset``
        false) are matched to the training columns by name (a DataFrame's) or by position
        (an array's)."""
        if reset:
            columns = table_columns(X)
            self.n_features_in_ = len(columns)
            if is_frame(X) and all(isinstance(c, str) for c in X.columns):
                self.feature_names_in_ = np.asarray(X.columns, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return (columns, table_types(X, self.types))
        columns = table_columns(X)
        if not is_frame(X):
            names = list(self.column_types_)
            if len(columns) != len(names):
                raise ValueError(
                    f"X has {len(columns)} columns, but the model was fitted on a table of "
                    f"{len(names)} ({', '.join(names)})"
                )
            columns = [(n, c) for n, (_, c) in zip(names, columns)]
        return (columns, [])

    # ----------------------------------------------------------------- fitting

    def fit(self, X, y=None):
        """Samples the posterior of the mixture over the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), sparse matrix, or DataFrame
            Real vectors, or (kernel "md") non-negative integer counts, dense or sparse; or a
            table (a pandas DataFrame with columns of categories, booleans, words or missing
            entries, or any 2-D array with ``kernel="mixed"``), whose missing entries (NaN,
            None, ``pd.NA``) the kernel marginalises and :meth:`impute` fills.
        y : ignored

        Returns
        -------
        self : MixtureModel
        """
        data = self._check_input(X, reset=True)
        model_json = self._model_json()
        sampler_json = self._sampler_json(_seed(self.random_state))
        return self._run(data, model_json, sampler_json, budget=None)

    def resume(self, X, sweeps=None, seconds=None, max_sweeps=None):
        """Continues the run in ``run_dir`` from its checkpoints, to ``sweeps`` (a new total
        per chain, or "auto" with at most ``max_sweeps``) or ``seconds``: exactly as if it had
        never stopped (after a ``KeyboardInterrupt`` too). ``X`` must be the data the run was
        fitted on.

        Returns
        -------
        self : MixtureModel
        """
        if self.run_dir is None:
            raise ValueError("resume needs run_dir: the run's directory with its checkpoints")
        budget = None
        if sweeps is not None or seconds is not None or max_sweeps is not None:
            budget = _budget(sweeps, seconds, max_sweeps)
        data = self._check_input(X, reset=True)
        return self._run(data, self._model_json(), None, budget=budget)

    def _run(self, data, model_json, sampler_json, budget):
        """Runs ``sampler_json`` (None: resumes the run in ``run_dir``) and keeps the results."""
        callback = make_progress(self.progress)
        if self.run_dir is None:
            with tempfile.TemporaryDirectory(prefix="nrmm-") as tmp:
                out = _native.fit(
                    data, model_json, sampler_json, os.path.join(tmp, "run"),
                    _budget_json(budget), callback, float(self.loss_a),
                )
        else:
            out = _native.fit(
                data, model_json, sampler_json, os.fspath(self.run_dir),
                _budget_json(budget), callback, float(self.loss_a),
            )
        self._store(data, model_json, out)
        return self

    def _store(self, data, model_json, out):
        self._data = data
        # The model as the run recorded it: with the cluster scale its pilot chose, which
        # prediction must use.
        self._model_spec = out["model"]
        self.kernel_ = out["kernel"]
        columns = out.get("columns")
        self._columns = columns
        self.column_types_ = None if columns is None else {n: t for n, t, _ in columns}
        self.labels_ = np.asarray(out["labels"], dtype=np.int64)
        self.n_clusters_ = int(self.labels_.max()) + 1 if self.labels_.size else 0
        self.hyper_ = dict(out["hyper"])
        self.map_labels_ = np.asarray(out["map_labels"], dtype=np.int64)
        self.map_hyper_ = dict(out["map_hyper"])
        self.estimates_by_loss_ = {
            name: np.asarray(labels, dtype=np.int64)
            for name, labels in out["estimates_by_loss"].items()
        }
        draws = out["draws"]
        self._draws = [(np.asarray(l, dtype=np.int64), dict(h)) for l, h in draws]
        n = self.labels_.shape[0]
        self.draws_ = (
            np.stack([l for l, _ in self._draws]) if self._draws else np.empty((0, n), np.int64)
        )
        self.posterior_similarity_ = (
            _similarity(self.draws_) if n <= SIMILARITY_MAX_POINTS and len(self._draws) else None
        )
        self.summary_ = json.loads(out["summary"])
        self.k_distribution_ = {
            int(k): float(p) for k, p in self.summary_.get("k_distribution", {}).items()
        }
        self.traces_ = [_frame(t) for t in out["traces"]]
        self.n_iter_ = max((c["sweeps"] for c in self.summary_.get("chains", [])), default=0)
        for note in out["notes"]:
            warnings.warn(note, UserWarning, stacklevel=4)
        if self.summary_.get("warnings"):
            warnings.warn(
                "; ".join(self.summary_["warnings"]), ConvergenceWarning, stacklevel=4
            )

    # ----------------------------------------------------------------- prediction

    def _predict_native(self, X, with_draws: bool):
        check_is_fitted(self, "labels_")
        data = self._check_input(X, reset=False)
        estimate = (self.labels_, self.hyper_)
        draws = self._draws if with_draws else []
        return _native.predict(self._data, self._model_spec, estimate, draws, data)

    def predict_proba(self, X):
        """Probability of each new point joining each cluster of the point estimate, and
        (last column) of opening a new cluster, given the training data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_clusters_ + 1)
        """
        ln_probs, _ = self._predict_native(X, with_draws=False)
        return np.exp(ln_probs)

    def predict(self, X):
        """The most probable cluster of each new point under the point estimate:
        a label in ``0..n_clusters_ - 1``, or ``n_clusters_`` for a new cluster.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        ln_probs, _ = self._predict_native(X, with_draws=False)
        return np.argmax(ln_probs, axis=1).astype(np.int64)

    def score_samples(self, X):
        """Log posterior predictive density of each point, averaged over the draws.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        _, ln_density = self._predict_native(X, with_draws=True)
        return ln_density

    def score(self, X, y=None):
        """Mean log posterior predictive density of the points of ``X``."""
        return float(np.mean(self.score_samples(X)))

    # ----------------------------------------------------------------- tables

    def _check_table_fit(self):
        check_is_fitted(self, "labels_")
        if self.column_types_ is None:
            raise ValueError(
                f"impute fills a table's missing entries, but this model was fitted on "
                f"{'counts' if self.kernel_ == 'md' else 'real vectors'} (kernel "
                f"{self.kernel_!r}): fit a DataFrame, or an array with kernel='mixed'"
            )

    def _impute_native(self):
        self._check_table_fit()
        return _native.impute(self._data, self._model_spec, (self.labels_, self.hyper_), self._draws)

    def impute(self, X=None):
        """The training table (or the new rows ``X``) with every missing entry filled from
        the posterior predictive over the draws, as ``nrmm impute`` fills it: a binary or
        categorical entry by its most probable level, a real entry by its mean, a count by its
        mean rounded. Given a draw, a missing entry follows its column's predictive law in its
        row's cluster (Student t, negative binomial, or the levels' Dirichlet predictive);
        averaged over the draws this is its posterior predictive law. A new row's cluster is
        not known: given a draw it joins each cluster, or a new one, with its probability
        given the row's observed entries (as ``predict_proba`` weighs them), and its missing
        entries follow the mixture over those clusters.

        Parameters
        ----------
        X : DataFrame or array, optional
            New rows with the training table's columns (matched by name and levels by name,
            as ``predict`` matches them), missing entries as NaN. Without it, the training
            table.

        Returns
        -------
        table : DataFrame or ndarray
            For a DataFrame fitted, a copy with the same index, columns and dtypes (a
            ``category`` column keeps its categories; a filled level is its category by
            name); for an array, a float array (levels by their names read as numbers).
        entries : DataFrame (a dict of arrays without pandas)
            One row per filled entry: ``row`` (the index label), ``column``, ``value`` (as
            filled), ``probability`` (a filled level's posterior predictive probability),
            ``mean`` and ``sd`` (a real or count entry's posterior predictive mean and
            standard deviation); NaN where they do not apply.
        """
        if X is None:
            out, rows = self._impute_native(), self._table_X
        else:
            self._check_table_fit()
            data = self._check_input(X, reset=False)
            out = _native.impute_new(self._data, self._model_spec, self._draws, data)
            rows = X
        table = filled_table(rows, out["filled"], self._columns)
        return table, filled_entries(rows, out["filled"], table)

    def cluster_profiles(self):
        """Each cluster of ``labels_`` with its size and, per column by name, its posterior
        predictive law given the cluster's rows (at the hyperparameters of ``hyper_``): a
        real or count column's ``{"mean", "sd"}``, a binary or categorical column's
        probability of each level by name.

        Returns
        -------
        profiles : list of dict
            ``{"cluster": k, "size": n_k, "columns": {name: law}}`` for k in
            ``0..n_clusters_ - 1``.
        """
        return json.loads(self._impute_native()["profiles"])

    def log_joint(self, X, labels):
        """``ln p(X, partition)`` of ``X`` clustered by ``labels`` under this model's settings
        (hyperparameters at their initial values)."""
        data = to_native(
            X if is_sparse(X) else np.asarray(X, dtype=np.float64),
            self.kernel,
        )
        return _native.log_joint(
            data, self._model_json(), np.ascontiguousarray(labels, dtype=np.int64)
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Sparse input is word counts: real vectors are dense (a sparse float matrix is refused
        # with a message that says so).
        tags.input_tags.sparse = self.kernel == "md"
        # A table's missing entries are NaN.
        tags.input_tags.allow_nan = self.kernel == "mixed"
        tags.non_deterministic = self.seconds is not None
        return tags


def _budget_json(budget):
    return None if budget is None else json.dumps(budget)


def _similarity(draws: np.ndarray) -> np.ndarray:
    """Share of draws in which each pair of points shares a cluster."""
    n = draws.shape[1]
    s = np.zeros((n, n))
    for labels in draws:
        onehot = np.zeros((n, int(labels.max()) + 1))
        onehot[np.arange(n), labels] = 1.0
        s += onehot @ onehot.T
    return s / draws.shape[0]


def _frame(columns: dict):
    """A chain's trace as a pandas DataFrame when pandas is installed, else a dict of arrays."""
    arrays = {k: np.asarray(v) for k, v in columns.items()}
    try:
        import pandas as pd
    except ImportError:
        return arrays
    return pd.DataFrame(arrays)
