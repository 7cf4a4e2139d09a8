"""Other npbench-style applications: sparse matrix-vector product over CSR arrays, a Mandelbrot
set with masked updates, an MLP forward pass, PolyBench's Deriche edge detector (recursive filters
along rows and columns), a direct 2-D convolution, a trace-then-add loop, and a CRC-16 checksum
computed bit by bit."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def spmv(row_ptr, col_idx, values, x):
    n_rows = row_ptr.size - 1
    y = np.empty(n_rows, dtype=values.dtype)
    for i in range(n_rows):
        start, stop = row_ptr[i], row_ptr[i + 1]
        y[i] = values[start:stop] @ x[col_idx[start:stop]]
    return y


def mandelbrot(c, max_iterations, horizon):
    counts = np.zeros(c.shape, dtype=np.int64)
    z = np.zeros(c.shape, dtype=np.complex128)
    for n in range(max_iterations):
        inside = np.less(abs(z), horizon)
        counts[inside] = n
        z[inside] = z[inside] ** 2 + c[inside]
    counts[counts == max_iterations - 1] = 0
    return z, counts


def _relu(x):
    return np.maximum(x, 0)


def _softmax_rows(x):
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def mlp(inputs, w1, b1, w2, b2, w3, b3):
    hidden = _relu(inputs @ w1 + b1)
    hidden = _relu(hidden @ w2 + b2)
    return _softmax_rows(hidden @ w3 + b3)


def deriche(alpha, image):
    width, height = image.shape
    k = (1.0 - np.exp(-alpha)) ** 2 / (1.0 + 2.0 * alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = k
    a2 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0 ** (-alpha)
    b2 = -np.exp(-2.0 * alpha)
    forward = np.zeros_like(image)
    backward = np.zeros_like(image)

    x_prev = np.zeros(width, dtype=image.dtype)
    y_prev = np.zeros(width, dtype=image.dtype)
    y_prev2 = np.zeros(width, dtype=image.dtype)
    for j in range(height):
        forward[:, j] = a1 * image[:, j] + a2 * x_prev + b1 * y_prev + b2 * y_prev2
        x_prev = image[:, j]
        y_prev2 = y_prev
        y_prev = forward[:, j]
    x_next = np.zeros(width, dtype=image.dtype)
    x_next2 = np.zeros(width, dtype=image.dtype)
    y_next = np.zeros(width, dtype=image.dtype)
    y_next2 = np.zeros(width, dtype=image.dtype)
    for j in range(height - 1, -1, -1):
        backward[:, j] = a3 * x_next + a4 * x_next2 + b1 * y_next + b2 * y_next2
        x_next2 = x_next
        x_next = image[:, j]
        y_next2 = y_next
        y_next = backward[:, j]
    horizontal = forward + backward

    x_prev = np.zeros(height, dtype=image.dtype)
    y_prev = np.zeros(height, dtype=image.dtype)
    y_prev2 = np.zeros(height, dtype=image.dtype)
    for i in range(width):
        forward[i, :] = a1 * horizontal[i, :] + a2 * x_prev + b1 * y_prev + b2 * y_prev2
        x_prev = horizontal[i, :]
        y_prev2 = y_prev
        y_prev = forward[i, :]
    x_next = np.zeros(height, dtype=image.dtype)
    x_next2 = np.zeros(height, dtype=image.dtype)
    y_next = np.zeros(height, dtype=image.dtype)
    y_next2 = np.zeros(height, dtype=image.dtype)
    for i in range(width - 1, -1, -1):
        backward[i, :] = a3 * x_next + a4 * x_next2 + b1 * y_next + b2 * y_next2
        x_next2 = x_next
        x_next = horizontal[i, :]
        y_next2 = y_next
        y_next = backward[i, :]
    return forward + backward


def conv2d(inputs, weights, bias):
    batch, height, width, _ = inputs.shape
    size = weights.shape[0]
    out_height = height - size + 1
    out_width = width - size + 1
    output = np.empty((batch, out_height, out_width, weights.shape[3]), dtype=inputs.dtype)
    for i in range(out_height):
        for j in range(out_width):
            window = inputs[:, i : i + size, j : j + size, :, np.newaxis]
            output[:, i, j, :] = np.sum(window * weights[np.newaxis, :, :, :], axis=(1, 2, 3))
    return output + bias


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def crc16(data, poly):
    crc = 0xFFFF
    for byte in data:
        current = 0xFF & byte
        for _ in range(8):
            if (crc & 0x0001) ^ (current & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            current >>= 1
    crc = ~crc & 0xFFFF
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


def _spmv_args(rng: np.random.Generator, rows: int, cols: int, per_row: int) -> tuple[Any, ...]:
    offsets = rng.integers(-per_row, per_row + 1, rows // 2)
    counts = rng.permutation(np.concatenate([per_row + offsets, per_row - offsets, np.full(rows % 2, per_row)]))
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    col_idx = np.concatenate([np.sort(rng.choice(cols, count, replace=False)) for count in counts]).astype(np.int64)
    return row_ptr, col_idx, rng.random(row_ptr[-1]), rng.random(cols)


def _mandelbrot_args(rng: np.random.Generator, nx: int, ny: int, iterations: int) -> tuple[Any, ...]:
    shift = rng.uniform(-0.05, 0.05, 2)
    real = np.linspace(-2.25 + shift[0], 0.75, nx)
    imag = np.linspace(-1.5 + shift[1], 1.5, ny)
    return real + imag[:, None] * 1j, iterations, 2.0


def _mlp_args(rng: np.random.Generator, batch: int, features: int, hidden: int, classes: int) -> tuple[Any, ...]:
    def layer(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
        scale = np.float32(1.0 / np.sqrt(n_in))
        return rng.standard_normal((n_in, n_out), dtype=np.float32) * scale, rng.random(n_out, dtype=np.float32)

    inputs = rng.random((batch, features), dtype=np.float32)
    return (inputs, *layer(features, hidden), *layer(hidden, hidden), *layer(hidden, classes))


def _deriche_args(rng: np.random.Generator, width: int, height: int) -> tuple[Any, ...]:
    return 0.25, rng.random((width, height), dtype=np.float32)


def _conv2d_args(rng: np.random.Generator, batch: int, n: int, size: int, c_in: int, c_out: int) -> tuple[Any, ...]:
    inputs = rng.random((batch, n, n, c_in), dtype=np.float32)
    return inputs, rng.random((size, size, c_in, c_out), dtype=np.float32), rng.random(c_out, dtype=np.float32)


def _go_fast_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.random((n, n)),)


def _crc16_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return rng.integers(0, 256, n, dtype=np.uint8), 0x8408


KERNELS = [
    Kernel(
        "spmv",
        "misc",
        spmv,
        _spmv_args,
        {
            "test": dict(rows=10, cols=12, per_row=3),
            "resized": dict(rows=14, cols=9, per_row=3),
            "small": dict(rows=1000, cols=1200, per_row=10),
        },
    ),
    Kernel(
        "mandelbrot",
        "misc",
        mandelbrot,
        _mandelbrot_args,
        {
            "test": dict(nx=12, ny=10, iterations=8),
            "resized": dict(nx=9, ny=13, iterations=8),
            "small": dict(nx=200, ny=150, iterations=40),
        },
    ),
    Kernel(
        "mlp",
        "misc",
        mlp,
        _mlp_args,
        {
            "test": dict(batch=4, features=12, hidden=16, classes=5),
            "resized": dict(batch=6, features=9, hidden=11, classes=4),
            "small": dict(batch=256, features=512, hidden=512, classes=64),
        },
    ),
    Kernel(
        "deriche",
        "misc",
        deriche,
        _deriche_args,
        {
            "test": dict(width=8, height=9),
            "resized": dict(width=11, height=7),
            "small": dict(width=160, height=120),
        },
    ),
    Kernel(
        "conv2d",
        "misc",
        conv2d,
        _conv2d_args,
        {
            "test": dict(batch=2, n=8, size=3, c_in=2, c_out=3),
            "resized": dict(batch=3, n=10, size=3, c_in=3, c_out=2),
            "small": dict(batch=4, n=24, size=3, c_in=8, c_out=16),
        },
    ),
    Kernel(
        "go_fast",
        "misc",
        go_fast,
        _go_fast_args,
        {"test": dict(n=10), "resized": dict(n=13), "small": dict(n=1500)},
    ),
    Kernel(
        "crc16",
        "misc",
        crc16,
        _crc16_args,
        {"test": dict(n=12), "resized": dict(n=17), "small": dict(n=600)},
    ),
]
