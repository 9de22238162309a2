"""`CompactTensor.torch`: the device gather gives the bits of `expand`. Collected only where
torch is importable (tests/conftest.py leaves this file out otherwise), so CI, which has no
torch, neither runs nor skips it."""

from __future__ import annotations

import numpy as np
import torch
from test_compact import _inkling_like, _qwen_like


def test_torch_float32_gather_equals_expand():
    c = _qwen_like(np.random.default_rng(1), 6, 14, 2)
    got = c.torch()
    assert got.dtype == torch.float32 and tuple(got.shape) == c.shape
    np.testing.assert_array_equal(got.numpy().view(np.uint32), c.expand().array.view(np.uint32))


def test_torch_bfloat16_gather_with_pad_equals_expand():
    c = _inkling_like(np.random.default_rng(2), 3, 4, 5, 2, 13, 16)
    got = c.torch(device="cpu")
    assert got.dtype == torch.bfloat16 and tuple(got.shape) == c.shape
    bits = got.contiguous().view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(bits, c.expand().array)
