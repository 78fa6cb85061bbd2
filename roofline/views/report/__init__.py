"""HTML reports (plotly): the main Pareto report and the single-sweep frontier page.

The only code besides the CLI that formats for people.  plotly is imported inside the
functions that build figures or pages, so importing this package stays cheap.
"""

from __future__ import annotations

from roofline.views.report.pareto_report import build_report, write_frontier_page, write_report
from roofline.views.report.scenario import HardwareRef, Scenario, hardware_refs

__all__ = ["HardwareRef", "Scenario", "build_report", "hardware_refs", "write_frontier_page", "write_report"]
