#!/usr/bin/python3
# Writes the NumPy fixtures of tests/ml/npy_test.cc (NumPy 1.24, Debian 12's
# python3-numpy). Run from this folder; the files are committed.
import numpy as np

np.savez("keras_layout.npz",
         x_train=np.arange(36, dtype=np.uint8).reshape(6, 2, 3) * 7,
         y_train=np.array([0, 1, 2, 0, 1, 2], dtype=np.int64),
         x_test=np.array([[[255, 0, 1], [2, 3, 4]]] * 3, dtype=np.uint8),
         y_test=np.array([2, 1, 0], dtype=np.uint8))
np.savez_compressed("train_f16.npz", x=(np.arange(12, dtype=np.float16) / 8 - 0.5).reshape(4, 3),
                    y=np.array([[1], [0], [1], [0]], dtype=np.int32))
np.savez_compressed("test_f16.npz", x=np.array([[65504, -0.0, 6e-8]], dtype=np.float16),
                    y=np.array([1], dtype=np.int32))
# Channels last, as tensorflow-datasets exports images: (N, H, W, C), value
# 100 * c + 10 * h + w of sample 0 and that plus 1 for sample 1.
hwc = np.fromfunction(lambda n, h, w, c: 100 * c + 10 * h + w + n, (2, 5, 6, 3), dtype=np.int64)
np.savez("channels_last.npz", x=hwc.astype(np.uint8), y=np.array([0, 1], dtype=np.int64))
# Four .npy files for npy:X:Y:X_TEST:Y_TEST, and test images of another shape.
np.save("pair_x.npy", np.arange(36, dtype=np.uint8).reshape(4, 3, 3))
np.save("pair_y.npy", np.array([0, 1, 2, 1], dtype=np.int64))
np.save("pair_x_test.npy", np.full((2, 3, 3), 255, dtype=np.uint8))
np.save("pair_y_test.npy", np.array([3, 0], dtype=np.int32))
np.save("pair_x_wide.npy", np.zeros((2, 1, 9), dtype=np.uint8))
np.save("f4_v1.npy", np.array([[1.5, -2.25, 3e-39], [np.inf, 0, 7]], dtype=np.float32))
with open("i8_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([-1, 2**40, 3], dtype=np.int64), version=(2, 0))
np.save("big_endian.npy", np.array([1, 2], dtype=">f4"))
np.save("fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
np.save("bool.npy", np.array([True, False]))

# A learnable dataset for the CLI test: 3 Gaussian blobs in 4 dimensions.
rng = np.random.default_rng(7)


def blobs(n):
    y = rng.integers(0, 3, n)
    centers = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], dtype=np.float32)
    x = centers[y] + rng.normal(0, 0.5, (n, 4)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


xt, yt = blobs(600)
xs, ys = blobs(200)
np.savez_compressed("blobs.npz", x_train=xt, y_train=yt, x_test=xs, y_test=ys)
