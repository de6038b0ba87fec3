"""Tables: pandas DataFrames (or 2-D arrays with ``kernel="mixed"``) to the columns of text the
native module reads as the command line reads a CSV file, and imputations back to frames.

A column travels as its name and its entries written as text (``None`` where missing: NaN,
None, ``pd.NA``, ``NaT``), so that the library types it exactly as it types the same column of
a CSV file (``nrmm run --data table.csv``): at most two distinct values binary, words
categorical, small integers categories or counts, other numbers real. A ``category``, object
or string column with more than two values is given as categorical whatever its values look
like; ``types`` overrides any column's type as ``--types`` does. pandas is imported only when
a DataFrame is given.
"""

from __future__ import annotations

import numbers

import numpy as np

TYPES = ("real", "binary", "cat", "count")


def is_frame(X) -> bool:
    """Whether ``X`` is a pandas DataFrame (without importing pandas)."""
    return type(X).__module__.startswith("pandas") and type(X).__name__ == "DataFrame"


def _is_missing(v) -> bool:
    if v is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(v))
    except ImportError:  # pragma: no cover - only frames reach here, and they bring pandas
        return isinstance(v, float) and v != v


def _text(v) -> str | None:
    """One entry as the CSV writer of pandas writes it (floats by ``repr``, so that they read
    back exactly)."""
    if _is_missing(v):
        return None
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    return str(v)


def _is_levels_dtype(dtype) -> bool:
    """Whether a pandas column's dtype holds categories by name: ``category``, object or
    string."""
    return dtype.kind in "OSU" or str(dtype) in ("category", "string")


def wants_table(X, kernel: str, types) -> bool:
    """Whether ``X`` is fitted as a table (the product kernel): with ``kernel="mixed"`` or
    ``types`` given, or a DataFrame under ``kernel="auto"`` that is not a complete matrix of
    numbers (a column of categories, booleans, words or a missing entry), as the command line
    reads a CSV file."""
    if kernel == "mixed" or types:
        return True
    if kernel != "auto" or not is_frame(X):
        return False
    for name in X.columns:
        col = X[name]
        if col.dtype.kind not in "iuf" or col.isna().any():
            return True
    return False


def _names(X):
    if is_frame(X):
        names = [str(c) for c in X.columns]
    else:
        names = [str(j + 1) for j in range(np.shape(X)[1])]
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"the table has two columns named {n!r}: name each column once")
        seen.add(n)
    return names


def table_columns(X):
    """The columns of ``X`` (a DataFrame, or a 2-D array whose columns are named by number
    from 1, as the command line names a CSV file's without a header) as ``(name, entries as
    text)``."""
    names = _names(X)
    if is_frame(X):
        return [(n, [_text(v) for v in X.iloc[:, j].tolist()]) for j, n in enumerate(names)]
    a = np.asarray(X, dtype=object)
    if a.ndim != 2:
        raise ValueError(f"a table is 2-D (rows by columns), got an array of shape {a.shape}")
    return [(n, [_text(v) for v in a[:, j].tolist()]) for j, n in enumerate(names)]


def _given_types(types) -> list:
    """``types`` as the library's ``name:type`` entries: a dict by column name, or a list of
    ``"name:type"`` strings as ``--types`` takes."""
    if types is None:
        return []
    if isinstance(types, dict):
        entries = [f"{name}:{kind}" for name, kind in types.items()]
    elif isinstance(types, (list, tuple)) and all(isinstance(t, str) for t in types):
        entries = list(types)
    else:
        raise ValueError(
            f"invalid types = {types!r}: expected a dict such as {{'legs': 'count'}} or a list "
            "such as ['legs:count']"
        )
    for e in entries:
        kind = e.rpartition(":")[2]
        if ":" not in e or kind not in TYPES:
            raise ValueError(
                f"invalid types entry {e!r}: expected name:type with a type among "
                f"{', '.join(TYPES)}"
            )
    return entries


def table_types(X, types) -> list:
    """The ``name:type`` entries for ``X``: those of ``types``, then ``cat`` for a column of
    ``category``, object or string dtype with more than two distinct values that ``types``
    does not name (two values are binary, as inferred)."""
    entries = _given_types(types)
    if not is_frame(X):
        return entries
    named = {e.rpartition(":")[0] for e in entries}
    for name in X.columns:
        col = X[name]
        if str(name) in named or not _is_levels_dtype(col.dtype):
            continue
        if col.dropna().astype(str).nunique() > 2:
            entries.append(f"{name}:cat")
    return entries


def filled_table(X, filled, columns):
    """``X`` with every missing entry replaced by its filled value: a DataFrame with the same
    index, columns and dtypes (categories kept, a category's filled value its category by
    name), or for an array, a float array (levels by their names read as numbers).
    ``filled`` holds the native module's entries ``(row, column, text, number, ...)`` and
    ``columns`` the library's ``(name, type, levels)``."""
    kinds = {name: kind for name, kind, _ in columns}
    if not is_frame(X):
        out = np.array(X, dtype=np.float64)
        index = {name: j for j, (name, _, _) in enumerate(columns)}
        for row, column, text, number, *_ in filled:
            value = float(text) if kinds[column] in ("binary", "cat") else number
            out[row, index[column]] = value
        return out
    out = X.copy()
    for j, name in enumerate(X.columns):
        here = [(row, text, number) for row, column, text, number, *_ in filled if column == str(name)]
        if not here:
            continue
        col = out[name]
        dtype = col.dtype
        if kinds[str(name)] in ("binary", "cat"):
            if str(dtype) == "category":
                by_name = {str(c): c for c in dtype.categories}
            else:
                by_name = {str(v): v for v in col.dropna().tolist()}
            values = [
                by_name[text] if text in by_name else _number_or_text(text, dtype)
                for _, text, _ in here
            ]
        else:
            values = [number for _, _, number in here]
        rows = [row for row, _, _ in here]
        if dtype.kind in "iu" or str(dtype).startswith(("Int", "UInt")):
            values = [int(round(v)) for v in values]
        column = col.copy()
        # Positional assignment keeps the column's dtype (a category stays a category).
        column.iloc[rows] = values
        out[name] = column
    return out


def _number_or_text(text: str, dtype):
    """A level's name as a value of a column of ``dtype``: a number for a numeric column."""
    if dtype.kind in "iufb" or str(dtype).startswith(("Int", "UInt", "Float")):
        return float(text)
    return text


def filled_entries(X, filled, table):
    """The filled entries, one row each: ``row`` (the frame's index label, or the array's row
    from 0), ``column``, ``value`` (as ``table``, the filled table, holds it),
    ``probability`` (the filled level's posterior predictive probability: binary and
    categorical columns), ``mean`` and ``sd`` (the posterior predictive mean and standard
    deviation: real and count columns; NaN where they do not apply). A DataFrame when pandas
    is installed, else a dict of arrays."""
    frame = is_frame(X)
    names = [str(c) for c in X.columns] if frame else _names(X)
    position = {n: j for j, n in enumerate(names)}
    nan = float("nan")
    data = {
        "row": [X.index[f[0]] if frame else f[0] for f in filled],
        "column": [X.columns[position[f[1]]] if frame else f[1] for f in filled],
        "value": [
            table.iloc[f[0], position[f[1]]] if frame else table[f[0], position[f[1]]]
            for f in filled
        ],
        "probability": np.array([nan if f[4] is None else f[4] for f in filled]),
        "mean": np.array([nan if f[5] is None else f[5] for f in filled]),
        "sd": np.array([nan if f[6] is None else f[6] for f in filled]),
    }
    try:
        import pandas as pd
    except ImportError:
        return {k: np.asarray(v, dtype=object) if k in ("row", "column", "value") else v
                for k, v in data.items()}
    return pd.DataFrame(data)
