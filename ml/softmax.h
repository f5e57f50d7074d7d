// Softmax cross-entropy over a chunk of logits, shared by the native models.
//
// Each row's maximum is subtracted before exponentiating, and the loss is
// log(sum exp(z - max)) - (z_y - max), so neither overflows.
//
// Thread-safety: a free function over caller-owned memory.
#pragma once

#include <cstdint>
#include <span>

#include "core/param_vector.h"
#include "ml/dataset.h"

namespace murmur::ml {

// Turns `logits` (one row per sample of `rows`, one column per class) into
// probabilities in place and returns the summed cross-entropy against the
// samples' labels in `data`. Counts correct argmax predictions (the first
// largest logit) into *correct and writes them to pred[i] when those are
// non-null. The exponentials are ml/exp.h's and each row's sum has the
// fixed order of core/reduce.h, so the probabilities are the same bits on
// every machine; the loss takes the C library's log in double.
double SoftmaxCrossEntropy(MatrixMap logits, const Dataset& data, std::span<const SampleIndex> rows,
                           std::int64_t* correct, std::int32_t* pred);

// Turns the probabilities left by SoftmaxCrossEntropy into the gradient of
// the batch's mean loss with respect to the logits, (P - Y) / batch, in place.
void SoftmaxGradient(MatrixMap probabilities, const Dataset& data, std::span<const SampleIndex> rows,
                     std::size_t batch);

}  // namespace murmur::ml
