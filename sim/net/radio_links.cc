#include "sim/net/radio_links.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace murmur::sim {

RadioLinks::RadioLinks(std::unique_ptr<Mobility> mobility, RadioRate rate)
    : mobility_(std::move(mobility)), rate_(rate) {}

void RadioLinks::AdvanceTo(Nanos t) const {
  const double s = std::chrono::duration<double>(t).count();
  if (s > mobility_->time()) mobility_->Advance(s);
}

bool RadioLinks::Wired(NodeId a, NodeId b) const {
  const NodeId cars = mobility_->vehicles(), n = mobility_->nodes();
  return a >= n || b >= n || (a >= cars && b >= cars);
}

double RadioLinks::Bps(NodeId a, NodeId b) const {
  if (Wired(a, b)) return std::numeric_limits<double>::infinity();
  const double range = mobility_->Range(a, b);
  return rate_.At(std::min(mobility_->Distance(a, b), range), range);
}

double RadioLinks::BpsAt(NodeId a, NodeId b, Nanos t) const {
  AdvanceTo(t);
  return Bps(a, b);
}

bool RadioLinks::Up(NodeId a, NodeId b, Nanos t) const {
  if (Wired(a, b)) return true;
  AdvanceTo(t);
  return mobility_->present(a) && mobility_->present(b) &&
         mobility_->Distance(a, b) <= mobility_->Range(a, b);
}

std::string RadioLinks::Describe() const {
  std::ostringstream o;
  o << "radio links: " << rate_.fast_bps / 1e6 << " Mbit/s at 0 m falling to " << rate_.slow_bps / 1e6
    << " at the range, none beyond";
  return o.str();
}

Result<RadioRate> ParseRadioRate(const std::string& text) {
  const auto colon = text.find(':');
  RadioRate r;
  auto number = [](std::string_view v, double& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size() && std::isfinite(out);
  };
  if (colon == std::string::npos || !number(std::string_view(text).substr(0, colon), r.fast_bps) ||
      !number(std::string_view(text).substr(colon + 1), r.slow_bps) || !(r.slow_bps > 0) ||
      !(r.fast_bps >= r.slow_bps) || r.fast_bps > 1e6) {
    return Status::InvalidArgument("scenario field 'radio_rate': '" + text +
                                   "' is not FAST:SLOW in Mbit/s with FAST >= SLOW > 0 (FAST at most 1e6)");
  }
  r.fast_bps *= 1e6;
  r.slow_bps *= 1e6;
  return r;
}

}  // namespace murmur::sim
