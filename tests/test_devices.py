"""Where torch steps run: the configured device against the machine, and autocast precision."""

from __future__ import annotations

import logging

import pytest
import torch

from hybrid_ir.errors import ConfigError
from hybrid_ir.neural import devices


def test_cpu_is_always_cpu():
    assert devices.resolve_device("cpu") == "cpu"


def test_auto_without_cuda_falls_back_to_cpu_with_a_warning(monkeypatch, caplog):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    with caplog.at_level(logging.WARNING):
        assert devices.resolve_device("auto") == "cpu"
    assert "math_models.device is auto and torch sees no CUDA device" in caplog.text


def test_auto_with_cuda_takes_it(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    assert devices.resolve_device("auto") == "cuda"


def test_forced_cuda_without_cuda_is_an_error_naming_the_key(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    with pytest.raises(ConfigError, match=r"math_models\.device: cuda is forced but torch sees"):
        devices.resolve_device("cuda")


def test_unknown_device_and_precision_are_errors():
    with pytest.raises(ConfigError, match="'tpu' is not one of auto, cpu, cuda"):
        devices.resolve_device("tpu")
    with pytest.raises(ConfigError, match="'fp8' is not one of fp32, bf16, fp16"):
        devices.autocast("cpu", "fp8")
    with pytest.raises(ConfigError, match="fp16 needs CUDA"):
        devices.autocast("cpu", "fp16")


def test_fp32_is_no_autocast_and_bf16_computes_in_bfloat16_on_cpu():
    a = torch.randn(4, 8)
    b = torch.randn(8, 3)
    with devices.autocast("cpu", "fp32"):
        assert (a @ b).dtype == torch.float32
        assert torch.equal(a @ b, torch.matmul(a, b))
    with devices.autocast("cpu", "bf16"):
        product = a @ b
    assert product.dtype == torch.bfloat16
    assert torch.allclose(product.float(), a @ b, atol=0.1, rtol=0.05)


def test_the_gradient_scaler_is_enabled_for_fp16_only():
    assert not devices.grad_scaler("cpu", "fp32").is_enabled()
    assert not devices.grad_scaler("cpu", "bf16").is_enabled()
