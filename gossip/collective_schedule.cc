#include "gossip/collective_schedule.h"

#include "core/check.h"

namespace murmur::gossip {

Result<Collective> ParseCollective(const std::string& name) {
  if (name == "ring") return Collective::kRing;
  if (name == "halving-doubling") return Collective::kHalvingDoubling;
  return Status::InvalidArgument("unknown collective '" + name + "' (one of: ring, halving-doubling)");
}

const char* CollectiveName(Collective c) { return c == Collective::kRing ? "ring" : "halving-doubling"; }

std::pair<std::size_t, std::size_t> RingSegment(std::size_t size, std::size_t n, std::size_t k) {
  MURMUR_CHECK(n >= 1 && k < n);
  return {k * size / n, (k + 1) * size / n};
}

CollectiveSchedule::CollectiveSchedule(Collective kind, NodeId n, NodeId position, std::size_t size)
    : kind_(kind), n_(n), position_(position), size_(size) {
  MURMUR_CHECK(n >= 1 && position < n);
  if (kind_ == Collective::kRing) {
    steps_ = 2 * (static_cast<std::size_t>(n_) - 1);
    gather_step_ = n_ - 1;
    const auto [b, e] = RingSegment(size_, n_, (position_ + 1) % n_);
    owned_ = {b, e};
    return;
  }
  while (p_ * 2 <= n_) {
    p_ *= 2;
    ++levels_;
  }
  r_ = n_ - p_;
  f_ = r_ > 0 ? 1 : 0;
  steps_ = 2 * levels_ + 2 * f_;
  gather_step_ = f_ + levels_;
  if (position_ >= 2 * r_) {
    rank_ = position_ - r_;
  } else if (position_ % 2 == 1) {
    rank_ = position_ / 2;
  }
  if (rank_ != CollectiveStep::kNobody) owned_ = Segments(rank_, rank_ + 1);
}

ValueRange CollectiveSchedule::Segments(std::size_t lo, std::size_t hi) const {
  return {RingSegment(size_, p_, lo).first, hi == 0 ? 0 : RingSegment(size_, p_, hi - 1).second};
}

CollectiveStep CollectiveSchedule::At(std::size_t step) const {
  MURMUR_CHECK(step < steps_);
  CollectiveStep s;
  if (kind_ == Collective::kRing) {
    const std::size_t n = n_, i = position_;
    s.send_to = static_cast<NodeId>((i + 1) % n);
    s.recv_from = static_cast<NodeId>((i + n - 1) % n);
    std::size_t sent, received;
    if (step < n - 1) {
      sent = (i + n - step % n) % n;              // i - s
      received = (i + 2 * n - 1 - step % n) % n;  // i - s - 1
    } else {
      const std::size_t g = step - (n - 1);
      sent = (i + 1 + n - g % n) % n;  // i + 1 - s'
      received = (i + n - g % n) % n;  // i - s'
      s.overwrite = true;
    }
    const auto [sb, se] = RingSegment(size_, n, sent);
    const auto [rb, re] = RingSegment(size_, n, received);
    s.send = {sb, se};
    s.recv = {rb, re};
    return s;
  }
  const ValueRange whole{0, size_};
  if (f_ == 1 && (step == 0 || step == steps_ - 1)) {  // the fold and its return
    if (position_ >= 2 * r_) return s;
    const bool even = position_ % 2 == 0;
    if ((step == 0) == even) {
      s.send_to = even ? position_ + 1 : position_ - 1;
      s.send = whole;
    } else {
      s.recv_from = even ? position_ + 1 : position_ - 1;
      s.recv = whole;
      s.overwrite = even;
    }
    return s;
  }
  if (rank_ == CollectiveStep::kNobody) return s;  // folded: sits out
  const std::size_t k = rank_;
  const std::size_t j = step - f_;
  if (j < levels_) {  // reduce-scatter: halve [lo, hi) around bit d
    std::size_t lo = 0, hi = p_;
    for (std::size_t t = 0;; ++t) {
      const std::size_t d = p_ >> (t + 1), mid = lo + (hi - lo) / 2;
      const bool upper = (k & d) != 0;
      if (t == j) {
        s.send_to = s.recv_from = PositionOfRank(static_cast<NodeId>(k ^ d));
        s.send = upper ? Segments(lo, mid) : Segments(mid, hi);
        s.recv = upper ? Segments(mid, hi) : Segments(lo, mid);
        return s;
      }
      (upper ? lo : hi) = mid;
    }
  }
  const std::size_t d = std::size_t{1} << (j - levels_);  // all-gather: double around bit d
  const std::size_t mine = k - k % d, theirs = (k ^ d) - (k ^ d) % d;
  s.send_to = s.recv_from = PositionOfRank(static_cast<NodeId>(k ^ d));
  s.send = Segments(mine, mine + d);
  s.recv = Segments(theirs, theirs + d);
  s.overwrite = true;
  return s;
}

}  // namespace murmur::gossip
