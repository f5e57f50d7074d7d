// Convolutional model specs: the text after "cnn:" and the named presets.
//
//   cnn:LAYER,LAYER,...   layers in order; a dense classifier is added last
//     c<N>k<K>[s<S>][p<P>]  convolution: N output channels, K x K kernel,
//                           stride S (default 1), zero padding P (default 0), ReLU
//     d<N>                  dense layer of N units, ReLU
//     pool<K> or max<K>     K x K max pooling, stride K
//     avg<K>                K x K average pooling, stride K
//     gn<G>                 group normalization in G groups of the channels; placed
//                           after a convolution or dense layer it normalizes that
//                           layer's output before its ReLU (conv, norm, ReLU)
//     drop<P>               dropout, each value dropped with probability P in [0, 1)
//   cnn-fedavg  = cnn:c32k5p2,pool2,c64k5p2,pool2,d512 (McMahan et al. 2017's CNN;
//                 1,663,370 parameters on 1x28x28 input, 10 classes)
//   lenet5      = cnn:c6k5p2,pool2,c16k5,pool2,d120,d84 (LeCun et al. 1998 with
//                 ReLU and max pooling; 61,706 parameters on 1x28x28)
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string_view>

#include "core/status.h"
#include "ml/cnn.h"

namespace murmur::ml {

// Largest network a spec may ask for: layers, and values of one sample's activations.
inline constexpr std::size_t kMaxCnnLayers = 64;
inline constexpr std::int64_t kMaxActivationValues = std::int64_t{1} << 24;

// True when `spec` names a convolutional model ("cnn:..." or a preset).
bool IsCnnSpec(std::string_view spec);

// The layers of `spec` (its syntax only; the shapes depend on the data), or
// InvalidArgument naming the token that is wrong.
Result<std::vector<CnnLayer>> ParseCnnLayers(std::string_view spec);

// Parses `spec` into the layers of a Cnn for `input` samples and
// `num_classes` classes, checking every shape, or InvalidArgument naming the
// token or layer that is wrong. `max_params` bounds the parameter count.
Result<CnnOptions> ParseCnnSpec(std::string_view spec, Shape3 input, int num_classes,
                                std::int64_t max_params);

}  // namespace murmur::ml
