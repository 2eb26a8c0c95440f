"""reporting: renders a run's summary (metrics.summary.RunSummary) for people: tables for
the terminal (`formalbench report DIR`) and a self-contained report.html with plots.
It sits at the top layer beside cli and dashboard: it only renders, it computes nothing."""

from formalbench.reporting.html import write_html
from formalbench.reporting.tables import print_report, render_tables

__all__ = ["print_report", "render_tables", "write_html"]
