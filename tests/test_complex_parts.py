"""Complex parts behave as in NumPy: ``x.real``/``x.imag`` (and ``np.real``/``np.imag``) are views
that follow later updates of ``x`` and write their own updates into it, ``x.real = v`` and
``x.imag = v`` update ``x`` in place (the caller's array, for an argument), also inside tensor
branches and loops; ``np.angle``, ``conj``, ``np.iscomplex`` and friends give eager's results."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager

COMPLEX = [np.complex64, np.complex128]


def signal(dtype, n: int = 8) -> np.ndarray:
    rng = np.random.default_rng(1)
    return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)


# --- reading the parts -------------------------------------------------------------------------
def power_spectrum(X):
    return X.real**2 + X.imag**2


def normalized_power(X):
    power = np.real(X) ** 2 + np.imag(X) ** 2
    return power / power.sum()


def parts_and_polar_form(z):
    return z.real, z.imag, np.abs(z), np.angle(z), np.angle(z, deg=True)


def conjugates(z):
    return np.conj(z), np.conjugate(z), z.conj(), z.conjugate()


def complex_predicates(z):
    return np.iscomplexobj(z), np.isrealobj(z), np.iscomplex(z), np.isreal(z)


def parts_of_a_numpy_scalar(z):
    s = z[0]
    return s.real, s.imag, np.angle(s), np.iscomplex(s), s.conj()


def parts_of_a_0d_array(z):
    a = np.array(2.0 + 1.0j) * z[0]
    a.real = 3.0
    return a, a.real, a.imag, np.angle(a)


def phase_mask(z):
    # Points outside the unit circle are projected onto it, the others kept.
    r = np.abs(z)
    return np.where(r > 1.0, z / r, z), np.where(z.imag > 0, z, z.conj())


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize(
    "fn",
    [
        power_spectrum,
        normalized_power,
        parts_and_polar_form,
        conjugates,
        complex_predicates,
        parts_of_a_numpy_scalar,
        parts_of_a_0d_array,
        phase_mask,
    ],
)
def test_reading_complex_parts_is_eager(fn, dtype):
    assert_like_eager(fn, signal(dtype))


def fft_style_spectrum_of_a_real_signal(x):
    # What an FFT returns for a real signal, spelled with real arithmetic.
    n = x.shape[0]
    k = np.arange(n)
    w = np.exp(-2j * np.pi * np.outer(k, k) / n)
    X = w @ x
    return np.sqrt(X.real**2 + X.imag**2), np.angle(X)


def test_spectrum_of_a_real_signal():
    assert_like_eager(fft_style_spectrum_of_a_real_signal, np.cos(np.arange(8.0)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("fn", [parts_and_polar_form, conjugates, complex_predicates, parts_of_a_numpy_scalar])
def test_parts_of_a_real_array(fn, dtype):
    # x.real is x's values, x.imag zeros of x's dtype; np.angle of a real array is 0 or pi.
    assert_like_eager(fn, np.array([1.5, -2.0, 0.0, 3.0]).astype(dtype))


# --- the parts are views -----------------------------------------------------------------------
def part_follows_an_update(z):
    r = z.real
    i = np.imag(z)
    z[0] = 5.0 + 1.0j
    return r.copy(), i.copy()


def updates_through_the_parts(z):
    r = z.real
    r += 1.0
    r[0] = 2.0
    i = z.imag
    i[1:3] = 7.0
    return z


def part_updated_in_a_tensor_loop(z, n):
    im = z.imag
    for k in range(n):
        im[k] = -k
    return z, im.sum()


def part_read_after_a_tensor_loop_wrote_the_base(z, n):
    re = z.real
    i = 0
    while i < n:
        z[i] = z[i] * 2.0
        i += 1
    return re.copy()


def part_indexed_and_written_in_a_branch(z, flag):
    if flag > 0:
        z.real[2:] = 0.0
    else:
        z.imag[::2] *= 3.0
    return z


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize(
    ("fn", "extra"),
    [
        (part_follows_an_update, ()),
        (updates_through_the_parts, ()),
        (part_updated_in_a_tensor_loop, (np.array(3),)),
        (part_updated_in_a_tensor_loop, (np.array(0),)),
        (part_read_after_a_tensor_loop_wrote_the_base, (np.array(4),)),
        (part_indexed_and_written_in_a_branch, (np.array(1),)),
        (part_indexed_and_written_in_a_branch, (np.array(0),)),
    ],
)
def test_parts_are_views_of_the_array(fn, extra, dtype):
    assert_like_eager(fn, signal(dtype), *extra)


def real_part_of_a_real_array_is_a_view(x):
    r = x.real
    r[0] = 9.0
    c = x.conj()  # a real array's conj() is the array itself
    c[1] = -1.0
    return x, r.sum()


def test_real_part_and_conj_of_a_real_array_write_into_it():
    assert_like_eager(real_part_of_a_real_array_is_a_view, np.arange(4.0))


def write_into_imag_of_a_real_array(x):
    i = x.imag
    i[0] = 1.0
    return x


def add_into_imag_of_a_real_array(x):
    i = np.imag(x)
    i += 1.0
    return x


@pytest.mark.parametrize("fn", [write_into_imag_of_a_real_array, add_into_imag_of_a_real_array])
def test_imag_of_a_real_array_is_read_only(fn):
    assert_like_eager(fn, np.arange(3.0))
    with pytest.raises(ValueError, match="read-only") as info:
        dy2st.to_static(fn)(np.arange(3.0))
    assert isinstance(info.value, dy2st.GraphBuildError)


# --- assigning the parts -----------------------------------------------------------------------
def conjugate_in_place(z):
    z.imag *= -1
    return z


def test_in_place_conjugation_writes_the_array_once():
    # Python runs ``z.imag *= -1`` as ``tmp = z.imag; tmp *= -1; z.imag = tmp``: the last step
    # assigns the view to itself, which changes nothing and emits nothing.
    graph = dy2st.to_static(conjugate_in_place).graph(signal(np.complex128), optimize=False)
    ops = [op.name for op in graph.walk()]
    assert ops.count("with_imag_part") == 1 and "setitem" not in ops


def clip_real_parts(z):
    z.real = np.clip(z.real, -1, 1)
    return z


def assign_parts_that_broadcast(z):
    z.real = z.imag[0]
    z.imag = 0
    return z


def assign_parts_of_a_matrix(z):
    z.real = np.arange(3.0)  # broadcast along rows
    z.imag[1] = z.real[0] + 1.0
    return z


def assign_masked_parts(z):
    big = np.abs(z) > 1.0
    z.real = np.where(big, 0.0, z.real)
    z.imag = np.where(big, -z.imag, z.imag)
    return z, big.sum()


def assign_in_a_tensor_if(z):
    if np.abs(z).max() > 1.0:
        z.real = z.real / 2.0
    else:
        z.imag = z.imag + 1.0
    return z


def assign_in_a_tensor_loop(z, n):
    for _ in range(n):
        z.imag = z.imag * 0.5
        z.real -= 0.25
    return z


def assign_in_a_while_loop(z):
    steps = 0
    while np.abs(z).max() > 0.5:
        z.real = z.real * 0.9
        z.imag *= 0.9
        steps += 1
    return z, steps


def assign_parts_of_a_local_array(x):
    z = np.zeros(x.shape, dtype=np.complex128)
    z.real = x
    z.imag = -x
    return z, z.conj() * z


def assign_real_of_a_real_array(x):
    x.real = x * 2.0
    return x


def assign_to_a_helpers_argument(z):
    _conjugate_rows(z)
    return z


def _conjugate_rows(rows):
    rows.imag = -rows.imag


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize(
    ("fn", "extra"),
    [
        (conjugate_in_place, ()),
        (clip_real_parts, ()),
        (assign_parts_that_broadcast, ()),
        (assign_masked_parts, ()),
        (assign_in_a_tensor_if, ()),
        (assign_in_a_tensor_loop, (np.array(3),)),
        (assign_in_a_tensor_loop, (np.array(0),)),
        (assign_in_a_tensor_loop, (2,)),
        (assign_in_a_while_loop, ()),
        (assign_to_a_helpers_argument, ()),
    ],
)
def test_assigning_parts_updates_the_array(fn, extra, dtype):
    assert_like_eager(fn, signal(dtype), *extra)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_assigning_parts_of_a_matrix(dtype):
    assert_like_eager(assign_parts_of_a_matrix, signal(dtype, 6).reshape(2, 3))


def test_assigning_parts_in_a_tensor_if_takes_the_other_branch_too():
    assert_like_eager(assign_in_a_tensor_if, signal(np.complex128) * 0.1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_assigning_parts_of_arrays_made_inside(dtype):
    assert_like_eager(assign_parts_of_a_local_array, np.arange(4.0).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_assigning_the_real_part_of_a_real_array(dtype):
    assert_like_eager(assign_real_of_a_real_array, np.arange(4).astype(dtype))


def assign_imag_of_a_real_array(x):
    x.imag = 1.0
    return x


def assign_real_of_a_numpy_scalar(z):
    s = z[0]
    s.real = 1.0
    return s


def test_assigning_imag_of_a_real_array_is_numpys_type_error():
    assert_like_eager(assign_imag_of_a_real_array, np.arange(3.0))
    with pytest.raises(TypeError, match="array does not have imaginary part to set") as info:
        dy2st.to_static(assign_imag_of_a_real_array)(np.arange(3.0))
    assert isinstance(info.value, dy2st.GraphBuildError)
    assert "x.imag = 1.0" in str(info.value)


def test_assigning_a_part_of_a_numpy_scalar_is_numpys_attribute_error():
    assert_like_eager(assign_real_of_a_numpy_scalar, signal(np.complex128))
    with pytest.raises(AttributeError, match="not writable") as info:
        dy2st.to_static(assign_real_of_a_numpy_scalar)(signal(np.complex128))
    assert "s.real = 1.0" in str(info.value)
