"""cuLaunchKernelEx's launch attributes: those that plain stream order satisfies are
accepted, COOPERATIVE makes a cooperative launch, the others are refused by name
(CUDA_ERROR_NOT_SUPPORTED), without a program."""

from __future__ import annotations

import ctypes

import pytest

from ptxport.compat.execution import _check_launch_attributes, _LaunchAttribute
from ptxport.compat.state import NOT_SUPPORTED, CudaError


def _attributes(*pairs: tuple[int, tuple[int, ...]]):
    array = (_LaunchAttribute * len(pairs))()
    for attribute, (identifier, values) in zip(array, pairs, strict=True):
        attribute.id = identifier
        attribute.value[:len(values)] = values
    return array


def test_hints_and_trivial_values_are_accepted():
    # programmatic stream serialization (cub's launches), priority, cooperative 0,
    # a cluster of 1x1x1, an ignored entry
    array = _attributes((6, (1,)), (8, (3,)), (2, (0,)), (4, (1, 1, 1)), (0, ()))
    assert _check_launch_attributes(ctypes.addressof(array), len(array)) is False


def test_the_cooperative_attribute_makes_a_cooperative_launch():
    # (the launch itself then checks that the device makes them: test_cooperative.py)
    array = _attributes((6, (1,)), (2, (1,)))
    assert _check_launch_attributes(ctypes.addressof(array), len(array)) is True


@pytest.mark.parametrize("pair, named", [
    ((4, (2, 1, 1)), r"thread block clusters \(2x1x1\)"),
    ((12, (0,)), "launch attribute 12"),
])
def test_what_stream_order_cannot_give_is_refused(pair, named):
    array = _attributes((6, (1,)), pair)
    with pytest.raises(CudaError, match=named) as refusal:
        _check_launch_attributes(ctypes.addressof(array), len(array))
    assert refusal.value.code == NOT_SUPPORTED

