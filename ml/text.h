// Byte-level text: a file cut into next-token windows, for language models.
//
// A corpus of N bytes with context length T becomes the samples
//   window k = bytes [k T, k T + T + 1),  k = 0 .. floor((N - 1) / T) - 1,
// each T + 1 token ids 0..255 (sample shape {T + 1}, SampleType::kTokens:
// kept as bytes, gathered as floats holding the ids). A model reads positions
// 0..T-1 as its input and positions 1..T as the targets, so every byte after
// the first is a target exactly once (consecutive windows share one byte).
// The label of a window is its last byte (256 classes), so that partitions
// work on text as on any dataset; since it is also the window's last value,
// only a model that returns its own loss from forward(x, y) may train on
// text (engine::CheckModelForData refuses the others; docs/torchscript.md).
//
// Files are untrusted: a file shorter than T + 1 bytes, larger than
// kMaxTextBytes, or a T outside [1, kMaxTextContext] gets a Status naming the
// file before anything is allocated.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

inline constexpr std::int64_t kMaxTextContext = 4096;
inline constexpr std::int64_t kMaxTextBytes = std::int64_t{1} << 30;

// Whether a dataset spec names byte-level text ("text:..."): a language
// model's data, read by its loss and perplexity rather than an accuracy.
inline bool IsTextDatasetSpec(const std::string& spec) { return spec.rfind("text:", 0) == 0; }

// The windows of `bytes` with context `context`, as a Dataset named `name`.
Result<Dataset> TextWindows(std::span<const std::uint8_t> bytes, std::int64_t context,
                            const std::string& name);

// The windows of the file at `path`.
Result<Dataset> ReadTextWindows(const std::string& path, std::int64_t context);

// "text:T:FILE": FILE's windows, the last tenth of them (at least one) held
// out as the test set, the text after the training text. "text:T:TRAIN:TEST":
// the test windows from TEST. `rest` is what follows "text:".
Result<TrainTest> LoadTextDataset(const std::string& rest);

}  // namespace murmur::ml
