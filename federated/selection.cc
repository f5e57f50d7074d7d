#include "federated/selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace murmur::federated {

Result<SelectionKind> ParseSelection(const std::string& name) {
  if (name == "uniform") return SelectionKind::kUniform;
  if (name == "available") return SelectionKind::kAvailable;
  if (name == "oort") return SelectionKind::kOort;
  return Status::InvalidArgument("selection '" + name + "' is not one of uniform, available, oort");
}

ClientSelector::ClientSelector(NodeId num_clients, SelectionOptions options, Rng rng)
    : num_clients_(num_clients),
      options_(options),
      rng_(rng),
      online_(num_clients, 1),
      utility_(num_clients, -1.0),
      duration_(num_clients, 0.0) {}

void ClientSelector::SetOnline(NodeId client, bool online) {
  if (client < num_clients_) online_[client] = online ? 1 : 0;
}

Status ClientSelector::Restore(const Rng::Position& position, std::vector<double> utilities,
                               std::vector<double> durations) {
  if (utilities.size() != num_clients_ || durations.size() != num_clients_)
    return Status::InvalidArgument("selection state of " + std::to_string(utilities.size()) +
                                   " utilities and " + std::to_string(durations.size()) + " durations for " +
                                   std::to_string(num_clients_) + " clients");
  rng_.Seek(position);
  utility_ = std::move(utilities);
  duration_ = std::move(durations);
  return Status::Ok();
}

void ClientSelector::Report(NodeId client, double samples, double loss, double duration_s) {
  if (client >= num_clients_) return;
  utility_[client] = samples * std::max(loss, 0.0);
  duration_[client] = duration_s;
}

double ClientSelector::Utility(NodeId client, double preferred) const {
  double u = utility_[client];
  const double t = duration_[client];
  if (preferred > 0 && t > preferred) u *= std::pow(preferred / t, options_.speed_alpha);
  return u;
}

std::vector<NodeId> ClientSelector::Select(std::size_t count, const std::vector<std::uint8_t>& busy) {
  std::vector<NodeId> pool;
  for (NodeId i = 0; i < num_clients_; ++i) {
    if (!busy.empty() && busy[i]) continue;
    if (options_.kind != SelectionKind::kUniform && !online_[i]) continue;
    if (available_ && !available_(i)) continue;
    pool.push_back(i);
  }
  count = std::min(count, pool.size());
  if (options_.kind != SelectionKind::kOort) {
    // Partial Fisher-Yates: the first `count` of a uniform shuffle.
    for (std::size_t i = 0; i < count; ++i) {
      std::swap(pool[i], pool[i + rng_.UniformInt(pool.size() - i)]);
    }
    pool.resize(count);
    return pool;
  }
  std::vector<NodeId> tried, fresh;
  for (NodeId c : pool) (utility_[c] < 0 ? fresh : tried).push_back(c);
  double preferred = options_.preferred_s;
  if (preferred <= 0 && !tried.empty()) {
    std::vector<double> d;
    for (NodeId c : tried) d.push_back(duration_[c]);
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    preferred = d[d.size() / 2];
  }
  std::size_t explore = std::min(
      fresh.size(), static_cast<std::size_t>(std::ceil(options_.explore * static_cast<double>(count))));
  if (tried.size() < count - explore) explore = std::min(fresh.size(), count - tried.size());
  std::vector<NodeId> out;
  for (std::size_t i = 0; i < explore; ++i) {
    std::swap(fresh[i], fresh[i + rng_.UniformInt(fresh.size() - i)]);
    out.push_back(fresh[i]);
  }
  std::stable_sort(tried.begin(), tried.end(),
                   [&](NodeId a, NodeId b) { return Utility(a, preferred) > Utility(b, preferred); });
  for (std::size_t i = 0; out.size() < count && i < tried.size(); ++i) out.push_back(tried[i]);
  return out;
}

std::vector<NodeId> ClientSelector::SelectAvoiding(std::size_t count, const std::vector<std::uint8_t>& avoid,
                                                   const std::vector<std::uint8_t>& exclude) {
  std::vector<std::uint8_t> busy(num_clients_, 0);
  for (NodeId i = 0; i < num_clients_; ++i) busy[i] = (!exclude.empty() && exclude[i]) || avoid[i];
  std::vector<NodeId> out = Select(count, busy);
  if (out.size() >= count) return out;
  for (NodeId i = 0; i < num_clients_; ++i) busy[i] = !exclude.empty() && exclude[i];
  for (NodeId c : out) busy[c] = 1;
  std::vector<NodeId> more = Select(count - out.size(), busy);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

}  // namespace murmur::federated
