"""Input conversion: NumPy arrays and SciPy sparse matrices to what the native module takes.

Real vectors travel as a C-contiguous ``float64`` matrix; counts (the multinomial kernel) as
the parts of a compressed-row matrix ``(indptr, indices, counts, n_features)`` of ``int64``.
Values the library refuses (NaN, infinities, magnitudes beyond 1e150) are left for it to
refuse, so that its message, naming row and column, reaches the user.
"""

from __future__ import annotations

import numpy as np

SPARSE_FOR_REAL = (
    "sparse input is for count data (kernel='md'): for real vectors pass a dense array "
    "(X.toarray())"
)


def is_sparse(X) -> bool:
    """Whether ``X`` is a SciPy sparse matrix or array (without importing SciPy)."""
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - SciPy comes with scikit-learn
        return False
    return sp.issparse(X)


def _counts_csr(X):
    """The compressed-row parts of a sparse or dense count matrix, checked to hold
    non-negative integers."""
    import scipy.sparse as sp

    csr = sp.csr_matrix(X)
    csr.sum_duplicates()
    data = np.asarray(csr.data)
    if data.dtype.kind == "c":
        raise ValueError("sparse count matrix: complex values are not counts")
    if data.dtype.kind not in "biu":
        values = data.astype(np.float64)
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            row, col = _position(csr, int(np.flatnonzero(bad)[0]))
            raise ValueError(
                f"invalid count in row {row} column {col} = {values[bad][0]}: the multinomial "
                "kernel takes a sparse count matrix of non-negative integers"
            )
        data = values
    if (data < 0).any():
        row, col = _position(csr, int(np.flatnonzero(data < 0)[0]))
        raise ValueError(
            f"invalid count in row {row} column {col} = {data[data < 0][0]}: counts are "
            "non-negative integers"
        )
    return (
        np.ascontiguousarray(csr.indptr, dtype=np.int64),
        np.ascontiguousarray(csr.indices, dtype=np.int64),
        np.ascontiguousarray(data, dtype=np.int64),
        int(csr.shape[1]),
    )


def _position(csr, k: int):
    """1-based row and column of stored value ``k`` of a CSR matrix."""
    row = int(np.searchsorted(csr.indptr, k, side="right"))
    return row, int(csr.indices[k]) + 1


def to_native(X, kernel: str):
    """``X`` as the native module takes it for ``kernel`` ("auto", "nw", "diag" or "md"):
    counts for "md" or sparse input under "auto", a dense ``float64`` matrix otherwise."""
    if is_sparse(X):
        if kernel in ("nw", "diag"):
            raise TypeError(SPARSE_FOR_REAL + f", not kernel={kernel!r}")
        return _counts_csr(X)
    if kernel == "md":
        return _counts_csr(np.asarray(X))
    return np.ascontiguousarray(X, dtype=np.float64)


def n_features(data) -> int:
    """The dimension (or vocabulary size) of converted data."""
    if isinstance(data, tuple):
        return data[3]
    return data.shape[1]
