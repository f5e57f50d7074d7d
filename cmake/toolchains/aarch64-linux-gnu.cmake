# Cross build for 64-bit ARM (aarch64) with Debian's toolchain and arm64
# multiarch libraries: crossbuild-essential-arm64 and the :arm64 -dev
# packages `./dev arm64` installs (docs/edge.md). Programs and tests run
# under qemu-aarch64 user emulation (Debian qemu-user): ctest and doctest's
# test discovery go through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: libraries under /usr/lib/aarch64-linux-gnu, headers shared in
# /usr/include (the arm64 ones under /usr/include/aarch64-linux-gnu).
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # protoc and the like run on the build machine
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# The arm64 C library of the multiarch packages (libc6:arm64, with its loader at
# /lib/ld-linux-aarch64.so.1), not the cross toolchain's older copy under
# /usr/aarch64-linux-gnu: the libraries murmur links were built against the
# former, and mixing the two loaders hangs the first pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
