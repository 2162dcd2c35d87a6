"""Bottleneck adapters in the ``adapters`` library's on-disk format, run on a transformers 5 BERT.

Paper 003's Fig. 5 compares SPECTER2 base with its adapters: ``allenai/specter2`` (proximity,
for documents) and ``allenai/specter2_adhoc_query`` (for queries), loaded in the model card by
the ``adapters`` library. That library cannot run here: every release pins transformers 4
(1.3.0: ``~=4.57.6``; 1.2.0: ``~=4.51.3``; 1.1.1: ``~=4.48.3``; 1.0.1: ``~=4.45.2``) and, installed
beside transformers 5.23 (which colbert-ai's shims need), its import fails on names transformers
5 and huggingface_hub 1 removed (``HfFolder``, ``is_remote_url``, ``_CAN_RECORD_REGISTRY``).

So this module reads what ``model.save_adapter`` writes (``adapter_config.json`` and
``adapter.safetensors`` or ``pytorch_adapter.bin``; ``adapters/loading.py``) and re-implements
the forward pass of one active sequential bottleneck adapter (``adapters/methods/modeling.py``:
``Adapter.pre_forward``, ``forward``, ``post_forward``; ``adapters/methods/bottleneck.py``).
BERT's adapters sit after the attention output projection (``mh_adapter``) and after the
feed-forward output projection (``output_adapter``), before those sub-layers' residual
LayerNorm, which the adapter configuration decides how to apply. Pfeiffer (``seq_bn``, what
SPECTER2's adapters are) and Houlsby (``double_seq_bn``) are such adapters; parallel, gated,
PHM (Compacter), LoRA, prefix-tuning and invertible adapters are refused by name.

Inference only: adapter dropout and stochastic depth are no-ops in eval mode and left out.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hybrid_ir.errors import ConfigError, InputFormatError

LOGGER = logging.getLogger(__name__)

CONFIG_NAME = "adapter_config.json"
WEIGHTS_NAMES = ("adapter.safetensors", "pytorch_adapter.bin")
"""The library's weight files, safetensors first as ``load_adapter(use_safetensors=True)``."""

# Where adapters sit (mh_adapter, output_adapter, leave_out) is read off the saved weights, which
# those keys decided, so only the keys that shape the forward pass are kept here.
_PRESETS: dict[str, dict[str, Any]] = {
    "seq_bn": {"original_ln_before": True, "non_linearity": "relu"},
    "double_seq_bn": {"original_ln_before": False, "non_linearity": "swish"},
}
_PRESETS["pfeiffer"] = _PRESETS["seq_bn"]
_PRESETS["houlsby"] = _PRESETS["double_seq_bn"]
_DEFAULTS: dict[str, Any] = {
    "original_ln_before": False,
    "original_ln_after": True,
    "residual_before_ln": True,
    "adapter_residual_before_ln": False,
    "ln_before": False,
    "ln_after": False,
    "scaling": 1.0,
    "is_parallel": False,
    "use_gating": False,
    "phm_layer": False,
}
"""``BnConfig``'s defaults for the keys read here (``adapters/configuration/adapter_config.py``)."""
_UNSUPPORTED = {"is_parallel": "parallel", "use_gating": "gated", "phm_layer": "PHM (Compacter)"}
_RENAMED_ACTIVATIONS = {"gelu": "gelu_new", "gelu_orig": "gelu"}
"""Files without a ``version`` predate the library's renaming (its ``ACTIVATION_RENAME``)."""
_LEGACY_CONTAINERS = (
    "adapters",
    "attention_text_task_adapters",
    "attention_text_lang_adapters",
    "layer_text_task_adapters",
    "layer_text_lang_adapters",
)
_SUBLAYERS = ("attention.output", "output")
"""Where a BERT layer's bottleneck adapters sit: mh_adapter, output_adapter."""


@dataclass(frozen=True)
class BottleneckConfig:
    """How one sequential bottleneck adapter meets its sub-layer's residual and LayerNorm."""

    non_linearity: str
    original_ln_before: bool
    original_ln_after: bool
    residual_before_ln: bool | str
    adapter_residual_before_ln: bool
    ln_before: bool
    ln_after: bool
    scaling: float | str


@dataclass(frozen=True)
class SavedAdapter:
    """An adapter directory read: its configuration and weights by (layer, sub-layer)."""

    path: Path
    name: str
    hidden_size: int | None
    config: BottleneckConfig
    weights: dict[tuple[int, str], dict[str, torch.Tensor]]


def read_adapter(directory: str | Path) -> SavedAdapter:
    """The adapter ``model.save_adapter(directory, name)`` wrote (one adapter, no head)."""
    directory = Path(directory)
    config_path = directory / CONFIG_NAME
    try:
        saved = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputFormatError(
            config_path, None, f"not an adapter configuration: {error}"
        ) from None
    if not isinstance(saved, dict) or not isinstance(saved.get("name"), str):
        raise InputFormatError(config_path, None, "no adapter 'name' (not written by save_adapter)")
    config = _bottleneck_config(config_path, saved.get("config"), "version" in saved)
    weights_path = next((directory / n for n in WEIGHTS_NAMES if (directory / n).is_file()), None)
    if weights_path is None:
        raise InputFormatError(
            directory, None, f"no adapter weights ({' or '.join(WEIGHTS_NAMES)})"
        )
    hidden_size = saved.get("hidden_size")
    return SavedAdapter(
        directory,
        saved["name"],
        hidden_size if isinstance(hidden_size, int) else None,
        config,
        _split_weights(weights_path, saved["name"], _load_state_dict(weights_path)),
    )


def _bottleneck_config(path: Path, raw: object, versioned: bool) -> BottleneckConfig:
    if isinstance(raw, str):
        if raw not in _PRESETS:
            raise InputFormatError(path, None, f"adapter config {raw!r} is not a bottleneck preset")
        raw = _PRESETS[raw]
    if not isinstance(raw, dict):
        raise InputFormatError(path, None, "'config' is neither a preset name nor a mapping")
    values = {**_DEFAULTS, **raw}
    if values.get("architecture") is not None:
        raise InputFormatError(
            path, None, f"a {values['architecture']} adapter; only bottleneck adapters are read"
        )
    for key, kind in _UNSUPPORTED.items():
        if values[key]:
            raise InputFormatError(path, None, f"{kind} bottleneck adapters are not supported")
    if "non_linearity" not in values:
        raise InputFormatError(path, None, "the adapter config has no 'non_linearity'")
    activation = str(values["non_linearity"]).lower()
    if not versioned:
        activation = _RENAMED_ACTIVATIONS.get(activation, activation)
    residual = values["residual_before_ln"]
    if residual not in (True, False, "post_add") or (
        residual == "post_add" and not values["original_ln_before"]
    ):
        raise InputFormatError(path, None, f"unsupported residual_before_ln {residual!r}")
    scaling = values["scaling"]
    if not isinstance(scaling, int | float) and scaling not in ("learned", "channel"):
        raise InputFormatError(path, None, f"unsupported scaling {scaling!r}")
    return BottleneckConfig(
        non_linearity=activation,
        original_ln_before=bool(values["original_ln_before"]),
        original_ln_after=bool(values["original_ln_after"]),
        residual_before_ln=residual,
        adapter_residual_before_ln=bool(values["adapter_residual_before_ln"]),
        ln_before=bool(values["ln_before"]),
        ln_after=bool(values["ln_after"]),
        scaling=float(scaling) if isinstance(scaling, int | float) else scaling,
    )


def _load_state_dict(path: Path) -> dict[str, torch.Tensor]:
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path), device="cpu")
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # both loaders raise their own types for a corrupt file
        raise InputFormatError(path, None, f"unreadable adapter weights: {error}") from None
    if not isinstance(loaded, dict):
        raise InputFormatError(path, None, "adapter weights are not a state dict")
    return loaded


def _split_weights(
    path: Path, name: str, state: Mapping[str, torch.Tensor]
) -> dict[tuple[int, str], dict[str, torch.Tensor]]:
    """Group ``encoder.layer.<i>.<sub-layer>.adapters.<name>.<parameter>`` keys (with or without
    the ``bert.`` prefix of an AdapterModel, or the library's legacy container names)."""
    key_pattern = re.compile(
        r"(?:^|\.)encoder\.layer\.(\d+)\.(attention\.output|output)\."
        rf"(?:{'|'.join(_LEGACY_CONTAINERS)})\.{re.escape(name)}\.(.+)$"
    )
    grouped: dict[tuple[int, str], dict[str, torch.Tensor]] = {}
    for key, tensor in state.items():
        match = key_pattern.search(key)
        if match is None:
            raise InputFormatError(
                path, None, f"weight {key!r} is not a bottleneck adapter weight of {name!r}"
            )
        grouped.setdefault((int(match[1]), match[2]), {})[match[3]] = tensor
    if not grouped:
        raise InputFormatError(path, None, f"no weights for adapter {name!r}")
    return grouped


def _activation(name: str) -> nn.Module:
    if name == "leakyrelu":  # the library's one name outside transformers' table
        return nn.LeakyReLU()
    from transformers.activations import get_activation

    try:
        return get_activation(name)
    except KeyError:
        raise ConfigError(f"adapter non_linearity {name!r} is unknown to transformers") from None


class Bottleneck(nn.Module):
    """One sequential bottleneck adapter, with the library's module and parameter names so that
    its saved weights load as they are: ``adapter_down`` (optional ``adapter_norm_before``, Linear,
    activation), ``adapter_up``, optional ``adapter_norm_after`` and learned ``scaling``."""

    def __init__(self, config: BottleneckConfig, hidden_size: int, bottleneck_size: int):
        super().__init__()
        self.config = config
        down: list[nn.Module] = []
        if config.ln_before:
            # Registered twice, as the library does, so its state dict has both names.
            self.adapter_norm_before = nn.LayerNorm(hidden_size)
            down.append(self.adapter_norm_before)
        self.adapter_down = nn.Sequential(
            *down, nn.Linear(hidden_size, bottleneck_size), _activation(config.non_linearity)
        )
        self.adapter_up = nn.Linear(bottleneck_size, hidden_size)
        if config.ln_after:
            self.adapter_norm_after = nn.LayerNorm(hidden_size)
        self.scaling: float | nn.Parameter = (
            config.scaling
            if isinstance(config.scaling, float)
            else nn.Parameter(torch.ones(hidden_size if config.scaling == "channel" else 1))
        )

    def forward(
        self, hidden: torch.Tensor, residual_input: torch.Tensor, layer_norm: nn.Module
    ) -> torch.Tensor:
        """The sub-layer's output with the adapter applied: ``hidden`` is its projection (after
        dropout), ``residual_input`` its input, ``layer_norm`` its residual LayerNorm."""
        config = self.config
        residual = hidden
        if config.original_ln_before:
            hidden = hidden + residual_input
            if config.residual_before_ln == "post_add":
                residual = hidden
            hidden = layer_norm(hidden)
        if not config.residual_before_ln:
            residual = hidden
        output = self.adapter_up(self.adapter_down(hidden)) * self.scaling
        if config.adapter_residual_before_ln:
            output = output + residual
        if config.ln_after:
            output = self.adapter_norm_after(output)
        if not config.adapter_residual_before_ln:
            output = output + residual
        if config.original_ln_after:
            output = layer_norm(output + residual_input)
        return output


class AdapterSet:
    """The adapters attached to one encoder; ``use`` picks the active one (``None``: none, which
    gives the base model's outputs exactly)."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.active: str | None = None

    def use(self, name: str | None) -> None:
        if name is not None and name not in self.names:
            raise ConfigError(f"no adapter {name!r} attached (attached: {', '.join(self.names)})")
        self.active = name


class AdaptedOutput(nn.Module):
    """A BERT sub-layer output (projection, dropout, residual LayerNorm) with the adapter set's
    active adapter applied where the library's ``BertOutputWithAdapters`` applies it."""

    def __init__(self, base: nn.Module, adapter_set: AdapterSet):
        super().__init__()
        # Any: BERT's sub-layer attributes (dense, dropout, LayerNorm) are not in nn.Module's type.
        self.base: Any = base
        self.adapters = nn.ModuleDict()
        self.adapter_set = adapter_set

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden = self.base.dropout(self.base.dense(hidden_states))
        active = self.adapter_set.active
        if active is None or active not in self.adapters:
            return self.base.LayerNorm(hidden + input_tensor)
        return self.adapters[active](hidden, input_tensor, self.base.LayerNorm)


def resolve_adapter(name: str) -> Path:
    """A local adapter directory as it is; anything else is a hub repository id, fetched (or read
    from the cache under ``HF_HUB_OFFLINE=1``) with only the adapter's files."""
    if Path(name).is_dir():
        return Path(name)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return Path(snapshot_download(name, allow_patterns=[CONFIG_NAME, *WEIGHTS_NAMES]))
    except (OSError, ValueError, HfHubHTTPError) as error:
        raise ConfigError(
            f"adapter {name!r} is neither a local directory nor a reachable hub repository "
            f"({type(error).__name__}); fetch it with `hf download {name} --local-dir DIR` and "
            "give DIR"
        ) from None


def attach_adapters(model: Any, adapters: Mapping[str, str | Path]) -> AdapterSet:
    """Attach each ``{role: directory or hub id}`` adapter to ``model`` (a BERT-style encoder:
    ``encoder.layer[i].attention.output`` and ``.output``) and return the set that activates
    them; none is active until ``use`` picks one."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ConfigError(f"adapters need a BERT-style encoder, not {type(model).__name__}")
    hidden_size = int(model.config.hidden_size)
    adapter_set = AdapterSet(tuple(adapters))
    sublayers = {
        (index, where): _wrap(layer, where, adapter_set)
        for index, layer in enumerate(layers)
        for where in _SUBLAYERS
    }
    for role, source in adapters.items():
        saved = read_adapter(resolve_adapter(str(source)))
        if saved.hidden_size not in (None, hidden_size):
            raise ConfigError(
                f"adapter {role} ({saved.path}) is for hidden size {saved.hidden_size}, "
                f"the model has {hidden_size}"
            )
        for (index, where), weights in saved.weights.items():
            if (index, where) not in sublayers:
                raise ConfigError(
                    f"adapter {role} ({saved.path}) has weights for layer {index}; the model has "
                    f"{len(layers)} layers"
                )
            target = sublayers[index, where]
            target.adapters[role] = _bottleneck(saved, weights, hidden_size).to(
                target.base.dense.weight.device, target.base.dense.weight.dtype
            )
        LOGGER.info(
            "adapter %s: %s (%r) in %d sub-layers", role, saved.path, saved.name, len(saved.weights)
        )
    return adapter_set


def _wrap(layer: Any, where: str, adapter_set: AdapterSet) -> AdaptedOutput:
    parent = layer.attention if where == "attention.output" else layer
    current = parent.output
    if isinstance(current, AdaptedOutput):
        raise ConfigError("adapters are already attached to this model")
    if not all(hasattr(current, name) for name in ("dense", "dropout", "LayerNorm")):
        raise ConfigError(f"adapters need BERT's sub-layer outputs, not {type(current).__name__}")
    wrapped = AdaptedOutput(current, adapter_set)
    parent.output = wrapped
    return wrapped


def _bottleneck(saved: SavedAdapter, weights: dict[str, torch.Tensor], hidden: int) -> Bottleneck:
    linear = f"adapter_down.{1 if saved.config.ln_before else 0}.weight"
    if linear not in weights or weights[linear].ndim != 2:
        raise ConfigError(f"adapter {saved.path}: no down-projection {linear!r} in its weights")
    module = Bottleneck(saved.config, hidden, int(weights[linear].shape[0]))
    try:
        module.load_state_dict(weights, strict=True)
    except RuntimeError as error:
        problem = " ".join(str(error).split())
        raise ConfigError(f"adapter {saved.path}: weights do not fit: {problem}") from None
    return module.eval()
