"""Snakemake's logger plugin ``hybrid-ir`` (``snakemake --logger hybrid-ir``): the console of a
run, :mod:`hybrid_ir.monitor.console`. Snakemake finds logger plugins as top-level packages named
``snakemake_logger_plugin_<name>`` holding a ``LogHandler`` (and its ``LogHandlerSettings``)."""

from hybrid_ir.monitor.console import ConsoleSettings as LogHandlerSettings
from hybrid_ir.monitor.console import RunConsole as LogHandler

__all__ = ["LogHandler", "LogHandlerSettings"]
