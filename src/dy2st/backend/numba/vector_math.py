"""Math functions of our own for compiled code: plain arithmetic that LLVM vectorizes.

Numba computes ``np.tanh`` and ``np.exp`` by calling the C library once per element, a call LLVM
cannot vectorize: 11.7 ns an element for tanh, where NumPy's SIMD loops take 0.16 (float32) to
0.8 ns. The functions here use only ``+ - * /``, comparisons and selects (``a if c else b``, which
LLVM turns into vector blends), ``abs``, ``copysign``, ``rint`` and ``floor``: no calls and no
branches in the hot path,
no fast-math and no fused multiply-adds (every operation rounds as IEEE says, so the results are the
same on every machine). A compiled element loop over them runs on the CPU's vector registers.

Each is within 4 ulp of NumPy's result over its whole domain, the compiled tier's contract for math
functions (``docs/compiled-tier.md``), with NumPy's NaN, infinities and signed zeros; measured on
millions of inputs of every magnitude by ``tests/backend/test_vector_math.py``:

- ``tanh`` of float32: computed in float64 and rounded once. With ``a = |x|`` (tanh of float32 is
  1.0 from 9.01 on, so ``a`` is capped at 9.5), ``t = 2a / 16``, ``m = expm1(t)`` by its Taylor
  polynomial (in Estrin's form), then squared up four times by ``m = m * (2 + m)`` (``expm1(2u) =
  expm1(u) * (2 + expm1(u))``, which keeps the relative accuracy of tiny values), so ``m =
  expm1(2a)`` and ``tanh(a) = m / (m + 2)``, within 4e-11 of the exact value before the rounding
  to float32 (checked on every float32 up to 9.6: within 1 ulp of the rounded float64 tanh).
- ``tanh`` of float64: below 0.27, ``a + a^3 P(a^2)`` with tanh's Taylor series to degree 25;
  above, ``m / (m + 2)`` with ``m = expm1(2a)``: ``2a = k ln2 + r`` (Cody and Waite's two-part
  ln2, with the rounding error of ``r`` carried), ``expm1(r)`` by its Taylor polynomial to degree
  14, and ``2^k (1 - 2^-k + expm1(r))`` summed in two parts, so that ``m`` is within 1 ulp.
  ``2^k`` is built by selects over the bits of ``k`` (no bit casts); ``a`` is capped at 22, where
  tanh is 1.0 in float64 (from 19.06 on).
- ``exp`` of float32: in float64, rounded once, as ``(e^(x/256))^256``.
- ``exp`` of float64: ``2^k e^r`` as in tanh's ``expm1``, with ``2^k`` applied in two normal halves
  so that a subnormal result is rounded once.

Measured worst distances from NumPy's: tanh 1 ulp (float32) and 2 (float64), exp 2 and 1. On one
core they cost 0.47 (tanh) and 0.72 (exp) ns an element in float32, 1.9 in float64: 2-4x NumPy's
SIMD loops, so fused groups use only the float32 ones, on every core (``pays_in_fused_groups``).

``VECTOR_MATH_PRELUDE`` is their source, written into every generated module; the generated code
calls ``vector_call`` (a scalar) and ``vector_array_call`` (an array inside a compiled loop).
"""

from __future__ import annotations

import inspect

import numpy as np


# The functions below are the source of the generated module's functions (``_numba_source``).
def _tanh_f32(x):
    a = np.abs(np.float64(x))
    a = 9.5 if a > 9.5 else a  # tanh(a) of float32 is 1.0 from 9.01 on; a NaN stays
    t = a * 0.125
    # expm1(t) for 0 <= t <= 1.19: t + t^2 q(t), Taylor to degree 8, q in Estrin's form: its
    # products do not wait on each other as Horner's do, so the vectorized loop waits less (W1 on
    # one core: 3.4 -> 2.8 ms at 4M). Four squarings make it expm1(2a); tanh's relative error
    # before the rounding to float32 is at most 4e-11 (measured), far below float32's 6e-8.
    t2 = t * t
    t4 = t2 * t2
    low = (0.5 + (1.0 / 6.0) * t) + (1.0 / 24.0 + (1.0 / 120.0) * t) * t2
    high = (1.0 / 720.0 + (1.0 / 5040.0) * t) + (1.0 / 40320.0) * t2
    m = t + t2 * (low + high * t4)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    return np.float32(np.copysign(np.divide(m, m + 2.0), np.float64(x)))


def _expm1_tail(r):
    # (expm1(r) - r) / r^2 for |r| <= ln2 / 2: Taylor to degree 12 (expm1's to degree 14), whose
    # truncation error is below 1e-19 relative to expm1(r).
    q = 1.0 / 87178291200.0
    q = q * r + 1.0 / 6227020800.0
    q = q * r + 1.0 / 479001600.0
    q = q * r + 1.0 / 39916800.0
    q = q * r + 1.0 / 3628800.0
    q = q * r + 1.0 / 362880.0
    q = q * r + 1.0 / 40320.0
    q = q * r + 1.0 / 5040.0
    q = q * r + 1.0 / 720.0
    q = q * r + 1.0 / 120.0
    q = q * r + 1.0 / 24.0
    q = q * r + 1.0 / 6.0
    return q * r + 0.5


def _powers_of_two(k):
    # 2^k and 2^-k, exactly, for an integral float 0 <= k < 128: a product over the bits of k,
    # each picked by a select (a vector blend), where a bit cast would need integer vectors.
    up = 1.0
    down = 1.0
    bit = k >= 64.0
    up = up * (1.8446744073709552e19 if bit else 1.0)
    down = down * (5.421010862427522e-20 if bit else 1.0)
    k = k - (64.0 if bit else 0.0)
    bit = k >= 32.0
    up = up * (4294967296.0 if bit else 1.0)
    down = down * (2.3283064365386963e-10 if bit else 1.0)
    k = k - (32.0 if bit else 0.0)
    bit = k >= 16.0
    up = up * (65536.0 if bit else 1.0)
    down = down * (1.52587890625e-05 if bit else 1.0)
    k = k - (16.0 if bit else 0.0)
    bit = k >= 8.0
    up = up * (256.0 if bit else 1.0)
    down = down * (0.00390625 if bit else 1.0)
    k = k - (8.0 if bit else 0.0)
    bit = k >= 4.0
    up = up * (16.0 if bit else 1.0)
    down = down * (0.0625 if bit else 1.0)
    k = k - (4.0 if bit else 0.0)
    bit = k >= 2.0
    up = up * (4.0 if bit else 1.0)
    down = down * (0.25 if bit else 1.0)
    k = k - (2.0 if bit else 0.0)
    bit = k >= 1.0
    up = up * (2.0 if bit else 1.0)
    down = down * (0.5 if bit else 1.0)
    return up, down


def _large_powers_of_two(k):
    # 2^k and 2^-k, exactly, for an integral float 0 <= k < 1024: the bits from 128 up here.
    up = 1.0
    down = 1.0
    bit = k >= 512.0
    up = up * (1.3407807929942597e154 if bit else 1.0)
    down = down * (7.458340731200207e-155 if bit else 1.0)
    k = k - (512.0 if bit else 0.0)
    bit = k >= 256.0
    up = up * (1.157920892373162e77 if bit else 1.0)
    down = down * (8.636168555094445e-78 if bit else 1.0)
    k = k - (256.0 if bit else 0.0)
    bit = k >= 128.0
    up = up * (3.402823669209385e38 if bit else 1.0)
    down = down * (2.938735877055719e-39 if bit else 1.0)
    k = k - (128.0 if bit else 0.0)
    rest_up, rest_down = _powers_of_two(k)
    return up * rest_up, down * rest_down


def _expm1_f64(y):
    # expm1(y) for 0 <= y <= 44, within 1 ulp: y = k ln2 + r with |r| <= ln2 / 2, then
    # expm1(y) = 2^k (1 - 2^-k + expm1(r)).
    k = np.rint(y * 1.4426950408889634)
    high = y - k * 6.93147180369123816490e-01  # ln2's leading 32 bits: exact for k < 2^20
    low = k * 1.90821492927058770002e-10  # the rest of ln2
    r = high - low
    carried = (high - r) - low  # the rounding error of r
    up, down = _powers_of_two(k)
    lead = 1.0 - down  # exact; 0 for k == 0
    head = lead + r  # with head_error, exactly lead + r (Fast2Sum: |lead| >= |r| or lead == 0)
    head_error = (lead - head) + r
    tail = (r * r) * _expm1_tail(r)
    tail = tail + carried * (1.0 + r + tail)  # expm1(r + carried) = expm1(r) + carried e^r
    return up * (head + (head_error + tail))


def _exp_f64(x):
    # exp(x) = 2^k e^r with x = k ln2 + r, |r| <= ln2 / 2, and e^r = 1 + r + r^2 q(r) summed in two
    # parts (within 1 ulp). 2^k is applied as 2^h 2^(k-h), h = floor(k / 2), each a normal number:
    # the first product is exact, so a subnormal result is rounded once.
    y = -746.0 if x < -746.0 else x  # exp is 0.0 below -745.14 and inf above 709.79; a NaN stays
    y = 710.0 if y > 710.0 else y
    k = np.rint(y * 1.4426950408889634)
    high = y - k * 6.93147180369123816490e-01  # ln2's leading 32 bits: exact for |k| < 2^20
    low = k * 1.90821492927058770002e-10
    r = high - low
    carried = (high - r) - low  # the rounding error of r
    head = 1.0 + r  # with head_error, exactly 1 + r (Fast2Sum: 1 >= |r|)
    head_error = (1.0 - head) + r
    tail = (r * r) * _expm1_tail(r)
    tail = tail + carried * (1.0 + r + tail)  # e^(r + carried) = e^r + carried e^r
    mantissa = head + (head_error + tail)
    half = np.floor(k * 0.5)
    up, down = _large_powers_of_two(np.abs(half))
    scale = up if half >= 0.0 else down
    odd = (k - half) - half  # 0.0 or 1.0
    return (mantissa * scale) * (scale * (2.0 if odd > 0.5 else 1.0))


def _exp_f32(x):
    # exp(x) of float32 in float64, rounded once: e^x = (e^t)^256 with t = x / 256, e^t by its
    # Taylor polynomial to degree 11 (|t| < 0.41: relative error below 5e-14), squared eight
    # times, which scales the relative error by 256 at most: 1e-11, far below float32's 6e-8.
    wide = np.float64(x)
    y = -104.0 if wide < -104.0 else wide  # exp of float32 is 0.0 below -103.98 and inf above 88.73
    y = 89.0 if y > 89.0 else y  # a NaN stays
    t = y * 0.00390625
    p = 1.0 / 39916800.0
    p = p * t + 1.0 / 3628800.0
    p = p * t + 1.0 / 362880.0
    p = p * t + 1.0 / 40320.0
    p = p * t + 1.0 / 5040.0
    p = p * t + 1.0 / 720.0
    p = p * t + 1.0 / 120.0
    p = p * t + 1.0 / 24.0
    p = p * t + 1.0 / 6.0
    p = p * t + 1.0 / 2.0
    p = p * t + 1.0
    p = p * t + 1.0
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return np.float32(p)


def _tanh_small_f64(a):
    # tanh(a) for |a| <= 0.27: a + a^3 P(a^2), tanh's Taylor series to degree 25, whose
    # truncation error is below 1e-19 relative.
    s = a * a
    p = 1.5918905069328964e-05
    p = p * s - 3.927832388331683e-05
    p = p * s + 9.691537956929451e-05
    p = p * s - 0.00023912911424355248
    p = p * s + 0.000590027440945586
    p = p * s - 0.0014558343870513183
    p = p * s + 0.003592128036572481
    p = p * s - 0.008863235529902197
    p = p * s + 0.021869488536155203
    p = p * s - 0.05396825396825397
    p = p * s + 0.13333333333333333
    p = p * s - 0.3333333333333333
    return a + a * (s * p)


def _tanh_f64(x):
    a = np.abs(x)
    a = 22.0 if a > 22.0 else a  # tanh(a) is 1.0 in float64 from 19.06 on; a NaN stays
    m = _expm1_f64(a + a)
    large = np.divide(m, m + 2.0)
    small = _tanh_small_f64(a)
    return np.copysign(small if a < 0.27 else large, x)


# Arrays inside compiled loops: a new C-ordered array of the argument's shape, as NumPy's ufunc
# gives. ``np.ascontiguousarray`` copies a strided view first, so that the loop runs over one
# contiguous buffer.
_ARRAY_FUNCTION = """
@numba.njit
def {name}_array(x):
    source = np.ascontiguousarray(x)
    out = np.empty(source.shape, source.dtype)
    values = source.reshape(source.size)
    results = out.reshape(out.size)
    for k in range(results.size):
        results[k] = {name}(values[k])
    return out
"""

# ufunc -> dtype -> the generated module's function computing it on a scalar of that dtype.
_FUNCTIONS: dict[np.ufunc, dict[np.dtype, str]] = {
    np.tanh: {np.dtype(np.float32): "_tanh_f32", np.dtype(np.float64): "_tanh_f64"},
    np.exp: {np.dtype(np.float32): "_exp_f32", np.dtype(np.float64): "_exp_f64"},
}

# The functions a compiled fused group computes with ours, on a machine's cores, rather than on the
# NumPy tier: NumPy's SIMD loops compute float64 tanh and exp 2-3x faster than ours (0.8 and 0.6
# against 1.9 ns an element; float32: 0.16 and 0.32 against 0.47 and 0.72), which two cores do not
# make up for. Compiled loops use them all: Numba's own calls the C library (11.7 ns an element
# for tanh, 1.7 to 2.9 for exp).
_FUSED = frozenset({(np.tanh, np.dtype(np.float32)), (np.exp, np.dtype(np.float32))})


def has_vector_form(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Is there a function of our own computing ``ufunc`` on values of ``dtype``?"""
    return _name(ufunc, dtype) is not None


def pays_in_fused_groups(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Does a compiled fused group compute ``ufunc`` on ``dtype`` with our function (on every core
    of large arrays) faster than the NumPy tier's SIMD loops?"""
    return (ufunc, np.dtype(dtype)) in _FUSED


def vector_call(ufunc: np.ufunc, dtype: np.dtype, operand: str) -> str | None:
    """Source computing ``ufunc`` on the scalar ``operand`` of ``dtype`` with our function, or None
    where there is none."""
    name = _name(ufunc, dtype)
    return None if name is None else f"{name}({operand})"


def vector_array_call(ufunc: np.ufunc, dtype: np.dtype, operand: str) -> str | None:
    """Source computing ``ufunc`` on the array ``operand`` of ``dtype`` (a new array), or None."""
    name = _name(ufunc, dtype)
    return None if name is None else f"{name}_array({operand})"


def _name(ufunc: np.ufunc, dtype: np.dtype) -> str | None:
    """The generated module's function computing ``ufunc`` on a scalar of ``dtype``, if any."""
    by_dtype = _FUNCTIONS.get(ufunc)
    return None if by_dtype is None else by_dtype.get(np.dtype(dtype))


def _numba_source(function) -> str:
    """A function above, decorated to be inlined into the generated code that calls it."""
    return f'\n\n@numba.njit(inline="always")\n{inspect.getsource(function)}'


_SCALAR_FUNCTIONS = (
    _expm1_tail,
    _powers_of_two,
    _large_powers_of_two,
    _expm1_f64,
    _tanh_small_f64,
    _tanh_f32,
    _tanh_f64,
    _exp_f32,
    _exp_f64,
)

VECTOR_MATH_PRELUDE = "".join(_numba_source(f) for f in _SCALAR_FUNCTIONS) + "".join(
    _ARRAY_FUNCTION.format(name=name) for by_dtype in _FUNCTIONS.values() for name in by_dtype.values()
)
"""The source of the functions, written into each generated module."""
