"""Figure creation without pyplot: a Figure on an Agg canvas, saved with an atomic write."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fusesim.yamlio import atomic_write

STRATEGY_COLORS = {"unfused": "#d62728", "smem": "#ff7f0e", "dsm": "#1f77b4", "best": "#2ca02c"}


def color_of(strategy: str) -> str:
    """One colour per strategy across all figures; measured baselines (pytorch-*) in greys."""
    if strategy in STRATEGY_COLORS:
        return STRATEGY_COLORS[strategy]
    return "#555555" if "eager" in strategy else "#999999" if strategy.startswith("pytorch") else "#9467bd"


def new_figure(width_in: float = 7.0, height_in: float = 4.5) -> Figure:
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    """PNG via an in-memory buffer, then an atomic write: never a half-written image."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    atomic_write(path, buf.getvalue())
    return Path(path)
