"""The progress bar of a fit: tqdm's when installed, else one line on standard error."""

from __future__ import annotations

import sys


class _Line:
    """A one-line bar on standard error, redrawn in place."""

    def __init__(self, total):
        self.total = total

    def update(self, done, total, n_clusters):
        total = total or self.total
        if total:
            share = min(done / total, 1.0)
            bar = "#" * int(30 * share)
            text = f"\rnrmm [{bar:<30}] {100 * share:5.1f}%  K={n_clusters}"
        else:
            text = f"\rnrmm {done} sweeps  K={n_clusters}"
        sys.stderr.write(text)
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
        sys.stderr.flush()


class _Tqdm:
    def __init__(self, tqdm):
        self.bar = tqdm(total=100, unit="%", desc="nrmm", leave=True)
        self.shown = 0

    def update(self, done, total, n_clusters):
        if total:
            target = int(100 * min(done / total, 1.0))
            self.bar.update(target - self.shown)
            self.shown = target
        self.bar.set_postfix(K=n_clusters, refresh=False)

    def close(self):
        self.bar.close()


class Progress:
    """Called by the native fit about ten times a second with ``(done, total, n_clusters)``
    (``done`` and ``total`` in sweeps, or in milliseconds of sampling for a time budget), and
    once with ``None`` when sampling ends."""

    def __init__(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        self.bar = _Tqdm(tqdm) if tqdm is not None else _Line(None)

    def __call__(self, done, total=None, n_clusters=None):
        if done is None:
            self.bar.close()
            return
        self.bar.update(done, total, n_clusters)


def make_progress(enabled):
    """The callback for the native fit, or None when no bar is asked for."""
    return Progress() if enabled else None
