"""Two costs of every Snakemake start that the workflow does not need, removed without changing
what Snakemake decides.

- **pandas for parameters.** To tell whether a job's parameters changed, Snakemake 9 serializes
  them with a function that imports pandas (0.5-0.7 s on 2 cores) whenever pandas is installed,
  so that a DataFrame parameter can be hashed. A value can only be a pandas object if pandas is
  already imported, so :func:`serialize_params_lazily` imports nothing: it hands values to the
  pandas-aware serializer only once pandas is in ``sys.modules``.
- **Pure-Python YAML for the configuration file.** Snakemake reads the ``configfile:`` file
  with PyYAML's pure-Python loader, through yte (0.3-0.5 s for config.yaml; ``--configfile``
  files are read before the Snakefile runs, by that reader still).
  :func:`read_configfiles_with_libyaml` reads it with the package's loader
  (:data:`hybrid_ir.formats.YAML_LOADER`, libyaml's parser) and the same checks as ``hybrid-ir
  config`` (alias bombs, non-UTF-8 text, a top level that is not a mapping); a file that asks
  for yte's templating (``__use_yte__``) or is JSON goes to Snakemake's own reader as before.

Both replace one function of Snakemake each and return whether it was there; a Snakemake
without it is left alone (tests fail if Snakemake renames them).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_PATCHED_MARK = "_hybrid_ir_startup"


def serialize_params_lazily(persistence_class: Any | None = None) -> bool:
    """Replace ``PersistenceBase._serialize_param`` (a property) with one that imports nothing."""
    if persistence_class is None:
        from snakemake.persistence import PersistenceBase

        persistence_class = PersistenceBase
    original = persistence_class.__dict__.get("_serialize_param")
    if not isinstance(original, property) or not all(
        hasattr(persistence_class, name)
        for name in ("_serialize_param_pandas", "_serialize_param_builtin")
    ):
        return False
    if getattr(original.fget, _PATCHED_MARK, False):
        return True

    def serializer(self: Any):
        if "pandas" in sys.modules:
            return self._serialize_param_pandas
        return self._serialize_param_builtin

    setattr(serializer, _PATCHED_MARK, True)
    persistence_class._serialize_param = property(serializer)
    return True


def read_configfiles_with_libyaml(configfile_module: Any = None) -> bool:
    """Replace ``snakemake.common.configfile.load_configfile`` (which the ``configfile:``
    directive calls) with one that reads YAML through :mod:`hybrid_ir.config`."""
    if configfile_module is None:
        from snakemake.common import configfile

        configfile_module = configfile
    original = getattr(configfile_module, "load_configfile", None)
    if original is None:
        return False
    if getattr(original, _PATCHED_MARK, False):
        return True

    def load_configfile(configpath: Any) -> dict:
        from hybrid_ir.config import read_config_file
        from hybrid_ir.errors import ConfigError

        if not isinstance(configpath, (str, Path)):
            return original(configpath)
        try:
            data = Path(configpath).read_bytes()
        except OSError:
            data = b""  # read_config_file names the file and the problem
        if data.lstrip()[:1] in (b"{", b"[") or b"__use_yte__" in data:
            return original(configpath)
        try:
            return dict(read_config_file(configpath))
        except ConfigError as error:
            from snakemake_interface_common.exceptions import WorkflowError

            raise WorkflowError(str(error)) from None

    setattr(load_configfile, _PATCHED_MARK, True)
    configfile_module.load_configfile = load_configfile
    return True
