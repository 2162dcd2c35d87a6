"""The settings of MLM (+NSP) further pretraining (:mod:`hybrid_ir.neural.pretrain`), checked
when made: the training loop and its data (:mod:`hybrid_ir.neural.pretrain_data`) both read
them."""

from __future__ import annotations

from dataclasses import dataclass

from hybrid_ir.errors import ConfigError

MASK_RULES = ("80/10/10", "80/20")
PAIRINGS = ("adjacent", "pya0")
SECTION = "math_models.pretraining"


@dataclass(frozen=True)
class PretrainSettings:
    steps: int | None
    batch_size: int
    lr: float
    max_length: int
    seed: int
    mlm_probability: float = 0.15
    mask_rule: str = "80/10/10"
    nsp: bool = True
    weight_decay: float = 0.01
    warmup_steps: int = 0
    checkpoint_every: int = 100
    eval_every: int = 50
    heldout: float = 0.05
    max_heldout_pairs: int = 64
    device: str = "cpu"
    epochs: float | None = None
    precision: str = "fp32"
    micro_batch_size: int | None = None
    pairs: str = "adjacent"
    pair_window: int = 3

    def __post_init__(self):
        if (self.steps is None) == (self.epochs is None):
            raise ConfigError("pretraining needs exactly one of steps and epochs")
        if self.mask_rule not in MASK_RULES:
            raise ConfigError(f"pretraining mask_rule must be one of {MASK_RULES}")
        if not 0 < self.mlm_probability < 1:
            raise ConfigError("pretraining mlm_probability must be in (0, 1)")
        if not 0 < self.heldout < 1:
            raise ConfigError("pretraining heldout must be in (0, 1)")
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ConfigError(
                f"config: {SECTION}.micro_batch_size: {self.micro_batch_size} rows; a "
                "micro-batch needs at least one row (leave it out to run a process's whole "
                "share of the batch in one forward)"
            )
        if self.pairs not in PAIRINGS:
            raise ConfigError(
                f"config: {SECTION}.pairs: {self.pairs!r} is not one of {', '.join(PAIRINGS)}"
            )
        if self.pair_window < 1:
            raise ConfigError(
                f"config: {SECTION}.pair_window: {self.pair_window}; a segment needs at least "
                "one sentence"
            )


def settings_from_config(entry: dict, **extra) -> PretrainSettings:
    """Settings from the ``pretraining`` configuration entry (``corpus`` is not a setting)."""
    values = {k: v for k, v in entry.items() if k in PretrainSettings.__dataclass_fields__}
    return PretrainSettings(**{"steps": None, **values, **extra})
