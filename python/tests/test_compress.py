"""murmur.compress / decompress: wire bytes equal an encoder written here from the documented
layout (docs/compression.md, "Wire layout (version 1)"), updates round-trip, error feedback
conserves mass, and bad arrays or bytes raise instead of crashing."""

import math
import struct

import numpy as np
import pytest

import murmur


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f32(values):
    return np.asarray(values, dtype="<f4").tobytes()


def f16(values):
    return np.asarray(values, dtype=np.float32).astype("<f2").tobytes()  # round to nearest even


def header(fmt, value_type, n):
    return bytes([1, fmt, value_type]) + varint(n)


def sparse_body(n, indices, values_bytes):
    deltas = varint(indices[0]) + b"".join(varint(b - a) for a, b in zip(indices, indices[1:]))
    bitmap = bytearray((n + 7) // 8)
    for i in indices:
        bitmap[i // 8] |= 1 << (i % 8)
    coding, index_bytes = (0, deltas) if len(deltas) <= len(bitmap) else (1, bytes(bitmap))
    return bytes([coding]) + varint(len(indices)) + index_bytes + values_bytes


def laplace(n, seed):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32)


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_dense_fp32_and_fp16_bytes_follow_the_layout(n):
    x = laplace(n, n)
    wire, _ = murmur.compress("none", x)
    assert wire == header(0, 0, n) + f32(x)
    wire, _ = murmur.compress("fp16", x)
    assert wire == header(0, 1, n) + f16(x)
    assert np.array_equal(murmur.decompress(wire), x.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("n,k", [(1000, 10), (64, 40), (300, 1)])
def test_topk_bytes_follow_the_layout_in_both_index_codings(n, k):
    x = laplace(n, k)
    wire, state = murmur.compress(f"topk:{k}", x)
    top = np.sort(np.argsort(-np.abs(x), kind="stable")[:k])
    assert wire == header(1, 0, n) + sparse_body(n, list(top), f32(x[top]))
    sent = murmur.decompress(wire)
    assert np.count_nonzero(sent) == k and np.array_equal(sent[top], x[top])
    # Error feedback (on by default for top-k): sent + e_new = e_old + x, exactly in fp32.
    assert np.array_equal(state.residual + sent, x)
    # The next call sends from x + e; mass is still conserved.
    y = laplace(n, k + 1)
    acc = state.residual + y
    wire2, state2 = murmur.compress(f"topk:{k}", y, state)
    assert state2 is state and state.round == 2
    assert np.array_equal(state.residual + murmur.decompress(wire2), acc)
    top2 = np.sort(np.argsort(-np.abs(acc), kind="stable")[:k])
    assert wire2 == header(1, 0, n) + sparse_body(n, list(top2), f32(acc[top2]))


def test_topk_with_fp16_values_and_the_sign_compressor():
    n, k = 500, 25
    x = laplace(n, 3)
    wire, _ = murmur.compress(f"topk:{k}:fp16", x)
    top = np.sort(np.argsort(-np.abs(x), kind="stable")[:k])
    assert wire == header(1, 1, n) + sparse_body(n, list(top), f16(x[top]))
    # sign: scale ||x||_1 / n, bit i set for a negative value, LSB first.
    wire, state = murmur.compress("sign", x)
    scale = np.float32(np.abs(x).astype(np.float64).sum() / n)
    bits = bytearray((n + 7) // 8)
    for i in np.flatnonzero(x < 0):
        bits[i // 8] |= 1 << (i % 8)
    assert wire[:len(header(0, 4, n))] == header(0, 4, n)
    got_scale = struct.unpack("<f", wire[len(header(0, 4, n)):len(header(0, 4, n)) + 4])[0]
    assert got_scale == pytest.approx(float(scale), rel=1e-6)
    assert wire[len(header(0, 4, n)) + 4:] == bytes(bits)
    sent = murmur.decompress(wire)
    assert np.array_equal(np.abs(sent), np.full(n, got_scale, dtype=np.float32))


def test_lossless_and_quantized_round_trips():
    x = laplace(4096, 11)
    for spec in ("none", f"topk:{x.size}", "threshold:1e-30"):
        assert np.array_equal(murmur.decompress(murmur.compress(spec, x)[0]), x), spec
    # Documented bounds: bf16 keeps 8 significant bits (relative error <= 2^-9 per value); int8
    # rounds to 1/127 of each block's max; QSGD's variance is at most ||x||^2 / (4 s^2) per
    # coordinate, so E||y - x|| / ||x|| <= sqrt(n) / (2 s) (1.5x margin for one draw).
    n = x.size
    for spec, tolerance in (("bf16", 2.0**-9), ("int8", np.abs(x).max() / 127 * math.sqrt(n) / np.linalg.norm(x)),
                            ("qsgd:127", 1.5 * math.sqrt(n) / (2 * 127))):
        y = murmur.decompress(murmur.compress(spec, x)[0])
        assert np.linalg.norm(y - x) / np.linalg.norm(x) < tolerance, spec


def test_stochastic_compressors_follow_seed_and_node():
    x = laplace(2048, 5)
    a, _ = murmur.compress("qsgd:4", x, seed=1, node=3)
    b, _ = murmur.compress("qsgd:4", x, seed=1, node=3)
    c, _ = murmur.compress("qsgd:4", x, seed=1, node=4)
    assert a == b and a != c
    # Unbiased: the mean of many independent draws approaches x.
    state = None
    total = np.zeros_like(x, dtype=np.float64)
    for _ in range(400):
        wire, state = murmur.compress("qsgd:4,no-ef", x, state)
        total += murmur.decompress(wire)
    assert np.abs(total / 400 - x).max() < 0.25 * np.abs(x).max()


def test_powersgd_takes_tensor_shapes():
    x = laplace(64 * 32 + 10, 9)
    wire, state = murmur.compress("powersgd:2", x, shapes=[(64, 32), (10,)])
    assert wire[1] == 3  # low-rank format
    y = murmur.decompress(wire)
    assert np.array_equal(y[-10:], x[-10:])  # the 1-D tensor goes dense
    # Error feedback keeps what the factors missed (e = acc - P Q^T, so e + sent = acc up to rounding).
    assert np.allclose(state.residual + y, x, rtol=0, atol=1e-6)
    assert np.linalg.norm(state.residual) > 0.1 * np.linalg.norm(x[:-10])  # rank 2 of 32 misses a lot
    with pytest.raises(murmur.CompressionError, match="shapes hold"):
        murmur.compress("powersgd:2", x, shapes=[(64, 32)])


def test_bad_arrays_raise_clear_errors():
    x = laplace(100, 1)
    with pytest.raises(TypeError, match="dtype float32, got float64"):
        murmur.compress("none", x.astype(np.float64))
    with pytest.raises(TypeError, match="must be a NumPy array of float32, got list"):
        murmur.compress("none", [1.0, 2.0])
    with pytest.raises(murmur.CompressionError, match="contiguous"):
        murmur.compress("none", x[::2])
    with pytest.raises(murmur.CompressionError, match="one-dimensional"):
        murmur.compress("none", x.reshape(10, 10))
    _, state = murmur.compress("topk:5", x)
    with pytest.raises(murmur.CompressionError, match="arrays of 100 elements, got 99"):
        murmur.compress("topk:5", x[:99], state)
    with pytest.raises(murmur.CompressionError, match="belongs to compressor 'topk:5'"):
        murmur.compress("topk:6", x, state)
    with pytest.raises(murmur.CompressionError, match="topk:2.5"):
        murmur.compress("topk:2.5", x)
    with pytest.raises(murmur.CompressionError, match="zork"):
        murmur.compress("zork", x)


@pytest.mark.parametrize("call,error,message", [
    # These raised pybind11's "incompatible function arguments" with the
    # whole array printed, or "'int' object is not iterable".
    (lambda x: murmur.compress("randk:5", x, seed=-1), ValueError, r"compress seed must be in \[0, "),
    (lambda x: murmur.compress("randk:5", x, node=2 ** 40), ValueError, r"compress node must be in \[0, "),
    (lambda x: murmur.compress("randk:5", x, seed=1.5), TypeError, "compress seed wants a whole number, got float"),
    (lambda x: murmur.compress("none", x, seed=True), TypeError, "compress seed wants a whole number, got bool"),
    (lambda x: murmur.compress("powersgd:2", x, shapes=[10, 10]), TypeError,
     r"compress shapes wants a list of tensor shapes such as \[\[rows, cols\]\], got an entry 10"),
    (lambda x: murmur.compress("powersgd:2", x, shapes=[[10, -10]]), ValueError,
     "compress shapes' dimension must be in"),
    (lambda x: murmur.compress("powersgd:2", x, shapes="10x10"), TypeError, "compress shapes wants a list"),
    (lambda x: murmur.compress(3, x), TypeError, "compress spec wants a string, got int"),
    (lambda x: murmur.compress("none", x, state="s"), TypeError, "compress state wants a CompressorState"),
    (lambda x: murmur.decompress(murmur.compress("none", x)[0], max_elements=-1), ValueError,
     r"decompress max_elements must be in \[1, "),
    (lambda x: murmur.decompress(b"", max_elements=float("nan")), TypeError,
     "decompress max_elements wants a whole number, got float"),
])
def test_bad_arguments_name_the_argument(call, error, message):
    x = laplace(100, 3)
    with pytest.raises(error, match=message) as caught:
        call(x)
    assert len(str(caught.value)) < 300  # no array printed into the message


def test_the_decoder_refuses_bad_bytes_and_never_crashes():
    x = laplace(300, 2)
    wire, _ = murmur.compress("topk:30", x)
    with pytest.raises(murmur.CompressionError):
        murmur.decompress(wire[:-1])  # truncated
    with pytest.raises(murmur.CompressionError):
        murmur.decompress(wire + b"\0")  # trailing bytes
    with pytest.raises(murmur.CompressionError):
        murmur.decompress(bytes([2]) + wire[1:])  # unknown version
    with pytest.raises(murmur.CompressionError):
        murmur.decompress(header(0, 0, 1 << 40))  # over max_elements, refused before allocating
    with pytest.raises(murmur.CompressionError):
        murmur.decompress(murmur.compress("none", laplace(2000, 1))[0], max_elements=1000)
    with pytest.raises(TypeError):
        murmur.decompress("0101")
    # Random mutations of valid updates either decode or raise CompressionError.
    rng = np.random.default_rng(0)
    decoded = refused = 0
    for spec in ("none", "topk:30", "sign", "qsgd:8", "int8"):
        good = bytearray(murmur.compress(spec, x)[0])
        for _ in range(400):
            bad = bytearray(good)
            for _ in range(rng.integers(1, 4)):
                bad[rng.integers(len(bad))] = rng.integers(256)
            try:
                y = murmur.decompress(bytes(bad))
                assert y.dtype == np.float32 and np.all(np.isfinite(y))
                decoded += 1
            except murmur.CompressionError:
                refused += 1
    assert refused > 100 and decoded > 100


def test_the_state_shows_what_it_carries():
    x = laplace(50, 4)
    _, state = murmur.compress("topk:5", x, node=7)
    assert state.spec == "topk:5" and state.size == 50 and state.node == 7 and state.round == 1
    assert state.residual.dtype == np.float32 and state.residual.shape == (50,)
    _, plain = murmur.compress("fp16", x)
    assert plain.residual.size == 0  # fp16 keeps no residual unless asked (",ef")
