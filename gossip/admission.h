// UpdateAdmission: what a gossip node checks in every update a neighbour
// sends before it uses it (docs/security.md "Insiders").
//
// A certified peer can still send anything its codec could decode. The
// receiver refuses, counts (Env::Refuse) and never mixes:
//
//   wrong_length    an update whose size is not the model's;
//   wrong_encoding  a format the job's codec never sends: with a value coding
//                   (none, fp16, bf16, int8) only dense updates of that
//                   coding, so a sparse update in a dense job is refused;
//   not_finite      NaN or infinite values (the wire decoder refuses them
//                   already; this also covers the simulator, which moves
//                   messages without encoding them);
//   implausible     a whole model x_j farther from the receiver's own x_i
//                   than `plausibility` times ||x_i||: ||x_j - x_i|| >
//                   rho ||x_i||. Honest models of one job stay close to one
//                   another (D-PSGD keeps them near consensus; independently
//                   initialized ones are about sqrt(2) ||x|| apart), so a
//                   bound of 10 leaves honest traffic alone and stops absurd
//                   values (1e30, 3.4e38, -50 x) at the first hop, before
//                   they reach any model. A model that is 0 cannot judge
//                   distances: nothing is implausible then. rho = 0 turns
//                   the check off.
//
// Length and encoding are checked as a message arrives, so a refused one
// is the sender's (empty) answer for its round and nobody waits for it.
// Whole models are judged (not_finite, implausible) when the round is mixed,
// in the same pass over memory as the mix; with rho = 0, and for coded
// differences (CHOCO), whose size carries no scale the receiver could
// compare with, finiteness is checked on arrival.
//
// The norms are core/reduce.h's fixed-order sums over blocks of 2048 values
// added in double (in double throughout where a float sum overflows): the
// verdict is the same on every machine, in the simulator and in the daemon.
//
// Thread-safety: immutable after construction.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "compression/update.h"
#include "core/env.h"
#include "gossip/codec.h"

namespace murmur::gossip {

// The squared distance of one block of a neighbour's model from the own
// model's block, and the own block's squared norm, added to d2 and own2:
// core/reduce.h's fixed-order float sums of the block, taken again in double
// where a float sum overflows (values near 1.8e19 and up), so that only NaN
// or infinite values make d2 non-finite. Whole vectors are judged block by
// block (kAdmissionBlock values each, in order), so that a caller that mixes
// block by block can judge in the same pass and reach the same verdict.
inline constexpr std::size_t kAdmissionBlock = 2048;
// `own2` may be null (the own norm was taken with another input's block, or
// once for many inputs by BlockSquaredNorm).
void AddBlockDistances(const float* theirs, const float* own, std::size_t len, double& d2, double* own2);
// What AddBlockDistances adds to own2 over every block of `own`, in order: a
// receiver that judges many models against the same own model takes it once.
double BlockSquaredNorm(std::span<const float> own);
// What AddBlockDistances adds to d2 over every block of a against b.
double BlockSquaredDistance(std::span<const float> a, std::span<const float> b);

// Mixing and judging in one pass over a received dense fp32 vector v:
// out[i] += w v[i] for i < n, with the same roundings as
// compression::Update::AddTo, block by block (kAdmissionBlock values), each
// block then measured while it is in cache: returns BlockSquaredNorm(v).
double AddScaledSquaredNorm(float* out, const float* v, std::size_t n, float w);
// BlockSquaredNorm(a), bit for bit, taken in the pass that writes
// out = a + w v (the product rounded, then added): a node that computes
// such a vector from its own model anyway has the norm it judges with.
double BlockSquaredNormPlusScaled(std::span<const float> a, std::span<const float> v, float w,
                                  std::span<float> out);
// Whether every x_i is finite (core/reduce.h's FixedSum, summed again in
// double when the float sum overflows).
bool AllFinite(std::span<const float> x);

class UpdateAdmission {
 public:
  // `plausibility`: rho above (0: off). REQUIRES: plausibility >= 0.
  UpdateAdmission(const CodecSpec& codec, double plausibility);

  // Length, encoding and, with `values`, finiteness (of dense fp32 updates:
  // the wire decoder refuses non-finite values of every other coding) of a
  // neighbour's update of a model of `size` values: the reason to refuse
  // it, or nullopt. Reads only the update, so it runs as the message
  // arrives. `fp32`: the update must be dense fp32 whatever the codec (a
  // CHOCO resynchronisation's x^_j).
  std::optional<Refusal> Check(const compression::Update& u, std::size_t size, bool fp32 = false,
                               bool values = true) const;
  // The verdict on a whole model from its squared distance d2 to the own
  // model and the own model's squared norm own2 (AddBlockDistances over
  // every block): not_finite, implausible, or nullopt to accept it.
  std::optional<Refusal> Verdict(double d2, double own2) const;
  // Whether a model of squared norm theirs2 is within the bound of an own
  // model of squared norm own2 whatever their distance: ||x_j|| + ||x_i|| <=
  // rho ||x_i||, with a margin of 1e-3 for the roundings of both norms and
  // of the distance that Judge would take. True means Judge would accept it;
  // false means only Judge can tell.
  bool SurelyPlausible(double theirs2, double own2) const;
  // Verdict over the whole of `theirs` against `own` (same size).
  std::optional<Refusal> Judge(std::span<const float> theirs, std::span<const float> own) const;

  // Judge over the whole of update `u` (same size as `own`): its values in
  // place when it is dense fp32, else decoded into `scratch` (resized, and
  // reused from call to call, so that judging allocates nothing).
  std::optional<Refusal> JudgeUpdate(const compression::Update& u, std::span<const float> own,
                                     std::vector<float>& scratch) const;
  // The values of `u` (same size as `scratch`): in place when dense fp32,
  // else decoded into `scratch`.
  static std::span<const float> Values(const compression::Update& u, std::vector<float>& scratch);

  double plausibility() const { return plausibility_; }

 private:
  bool dense_only_ = false;
  compression::ValueType value_type_ = compression::ValueType::kF32;
  double plausibility_ = 0;
};

}  // namespace murmur::gossip
