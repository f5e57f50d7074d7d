#include "sim/net/tcp_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace murmur::sim {

double TcpModel::WireBytes(double payload) {
  const double full = std::floor(payload / kMss);
  const double rest = payload - full * kMss;
  return full * kFrameBytes + (rest > 0 ? rest + (kFrameBytes - kMss) : 0);
}

double TcpModel::LossLimitedRate(double rtt, double loss) {
  if (loss <= 0 || rtt <= 0) return std::numeric_limits<double>::infinity();
  return kLossWindow / loss * kMss / rtt;
}

double TcpModel::RestartWindow(double window, double idle, double rtt, bool idle_restart) {
  if (!idle_restart) return window;
  const double restart = std::min(window, kInitialWindow);
  const double rto = Rto(rtt);
  // Linux: cwnd halves for every whole timeout the connection was idle, not below the restart window.
  for (double left = idle - rto; left > 0 && window > restart; left -= rto) window /= 2;
  return std::max(window, restart);
}

TcpModel::Transfer TcpModel::Send(double wire, double window, double rate, double rtt, double window_cap) {
  const double pipe = rate * rtt;  // bytes in flight that keep the link busy
  double seconds = 0, sent = 0;
  window = std::min(window, window_cap);
  while (sent < wire) {
    const double rest = wire - sent;
    if (window >= pipe) {  // the window fills the pipe: the rest at the rate
      seconds += rest / rate;
      window = std::min(window + rest, window_cap);
      break;
    }
    if (window >= window_cap) {  // a window that no longer grows: that much per round trip
      const double rounds = std::ceil(rest / window);
      seconds += (rounds - 1) * rtt + (rest - (rounds - 1) * window) / rate;
      break;
    }
    const double chunk = std::min(window, rest);
    sent += chunk;
    window = std::min(window + chunk, window_cap);  // every acknowledged byte grows it (slow start)
    seconds += sent < wire ? rtt : chunk / rate;    // wait for the ACKs, or the last window leaves
  }
  return Transfer{seconds, window};
}

}  // namespace murmur::sim
