// ClientSelector: which clients a federated server asks to train in a round.
//
//   uniform       K clients uniformly without replacement from all clients,
//                 online or not (the textbook FedAvg assumption; offline ones never answer)
//   available     K uniformly from the clients the server believes online
//   oort          Oort-style guided selection (Lai et al., OSDI 2021, Sec. 4):
//                 utility U_i = n_i sqrt(mean loss_i^2) (we use n_i * loss_i) times
//                 (T / t_i)^alpha when the client's last duration t_i exceeds the
//                 preferred duration T (alpha = 2); a fraction epsilon (0.1) of the
//                 slots explores clients never tried, the rest exploit the highest
//                 utilities, among online clients.
// Draws come from the server's kSelection stream, so selection is reproducible.
//
// Thread-safety: owned by one server.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/rng.h"
#include "core/status.h"

namespace murmur::federated {

enum class SelectionKind { kUniform, kAvailable, kOort };

Result<SelectionKind> ParseSelection(const std::string& name);

// Rounds a straggler (still busy with a closed round's task) is left out of
// selection at most, when its late result never arrives.
inline constexpr std::uint64_t kStragglerRounds = 5;

struct SelectionOptions {
  SelectionKind kind = SelectionKind::kUniform;
  double explore = 0.1;      // Oort: fraction of slots for never-tried clients
  double speed_alpha = 2.0;  // Oort: straggler penalty exponent
  double preferred_s = 0;    // Oort: preferred round duration T (0: the median of known durations)
};

class ClientSelector {
 public:
  ClientSelector(NodeId num_clients, SelectionOptions options, Rng rng);

  void SetOnline(NodeId client, bool online);
  // A failure detector's view (empty: everyone): a client it returns false for
  // is left out of every selection kind, uniform included.
  void SetAvailable(std::function<bool(NodeId client)> available) { available_ = std::move(available); }
  bool online(NodeId client) const { return online_[client] != 0; }
  // What a client reported: its samples, mean training loss and the seconds from task to result.
  void Report(NodeId client, double samples, double loss, double duration_s);

  // Up to `count` distinct clients, none of them in `busy` (may be empty).
  std::vector<NodeId> Select(std::size_t count, const std::vector<std::uint8_t>& busy);
  // Up to `count` clients, none in `exclude` (may be empty), those not in
  // `avoid` first (stragglers still busy with an older task): clients in
  // `avoid` are taken only when too few others are left.
  std::vector<NodeId> SelectAvoiding(std::size_t count, const std::vector<std::uint8_t>& avoid,
                                     const std::vector<std::uint8_t>& exclude);

  // What selection learned and where its stream stands, for checkpoints
  // (online_ and the failure detector are the runtime's, not saved).
  Rng::Position rng_position() const { return rng_.position(); }
  const std::vector<double>& utilities() const { return utility_; }
  const std::vector<double>& durations() const { return duration_; }
  // InvalidArgument when a vector is not one value per client.
  Status Restore(const Rng::Position& position, std::vector<double> utilities, std::vector<double> durations);

 private:
  double Utility(NodeId client, double preferred) const;

  NodeId num_clients_;
  SelectionOptions options_;
  Rng rng_;
  std::vector<std::uint8_t> online_;
  std::function<bool(NodeId)> available_;
  std::vector<double> utility_;   // n_i * loss_i, -1 when never reported
  std::vector<double> duration_;  // last duration, seconds
};

}  // namespace murmur::federated
