"""Pictures and tables from results: rooflines, simulator timelines, sweep heatmaps and lines.

Every plotting function returns a matplotlib `Figure` built without pyplot (no global state, the
Agg canvas, works headless and in notebooks alike); `save_png` writes it atomically. Tests check the
returned figures' axes and labels, not pixels.
"""

from fusesim.report.compare import ErrorStats, error_stats, plot_agreement
from fusesim.report.figures import new_figure, save_png
from fusesim.report.measured import load_measured
from fusesim.report.roofline import Ceilings, RooflinePoint, plot_roofline, points_from_rows, roofline_rows
from fusesim.report.sweepplots import SweepTable, load_sweep, plot_heatmap, plot_speedup_lines, speedups
from fusesim.report.timeline import load_trace, plot_timeline

__all__ = [
    "Ceilings", "ErrorStats", "RooflinePoint", "SweepTable", "error_stats", "load_measured", "load_sweep",
    "load_trace", "new_figure", "plot_agreement", "plot_heatmap", "plot_roofline", "plot_speedup_lines",
    "plot_timeline", "points_from_rows", "roofline_rows", "save_png", "speedups",
]
