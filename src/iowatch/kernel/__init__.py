"""Kernel sources, patch series and builds: the variants a check compares.

source: the kernel git tree (Debian's linux-source-6.12 made a git repository
once, or any tree given with --source); series: a patch series from a quilt
directory, an mbox or a git range; build: the cumulative variants base,
base+p1, ... as commits, built one after another in one build directory with
ccache so each patch costs an incremental build.
"""
