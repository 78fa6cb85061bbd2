"""Layer 9, views: the command line (``cli/``), HTML reports (``report/``) and ``explain``: the only code
that formats for people.  They read results and terms and never recompute them.
"""
