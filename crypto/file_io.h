// Small files for keys and certificates: atomic writes and bounded reads.
//
// WriteFileAtomic writes a temporary file beside the target, fsyncs it,
// renames it over the target and fsyncs the directory, so a crash leaves
// either the old file or the new one, never a torn one. ReadSmallFile checks
// the size before it allocates, so a huge or special file is refused.
//
// Thread-safety: thread-safe (no shared state); concurrent writers of one
// path race as rename(2) does: the last rename wins.
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <string>

#include "core/status.h"
#include "crypto/bytes.h"

namespace murmur::crypto {

// Writes `data` to `path` atomically with permission bits `mode` (e.g. 0600).
Status WriteFileAtomic(const std::string& path, ByteSpan data, mode_t mode);

// Reads a regular file of at most max_bytes. NotFound, InvalidArgument (not a
// regular file), ResourceExhausted (over max_bytes) or DataLoss (read error).
Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes);

// The permission bits of `path` (st_mode & 0777), or NotFound.
Result<mode_t> FilePermissions(const std::string& path);

}  // namespace murmur::crypto
