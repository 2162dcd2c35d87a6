"""Where the workflow's jobs import this package from: the workflow's own ``src/``.

The ``Snakefile`` puts ``src/`` first on its own ``sys.path`` and calls :func:`share_with_jobs`,
so that the code that runs is the checkout's, whatever copy of the package an environment has
installed, and a conda environment (``envs/hybrid-ir.yaml``) needs only the package's
dependencies: rule scripts, job servers and cluster jobs inherit ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from pathlib import Path

SOURCE = str(Path(__file__).resolve().parents[2])


def share_with_jobs() -> str:
    """Put :data:`SOURCE` first on ``PYTHONPATH`` (once) and return it."""
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    os.environ["PYTHONPATH"] = os.pathsep.join([SOURCE, *(e for e in entries if e != SOURCE)])
    return SOURCE
