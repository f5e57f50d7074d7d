// TcpModel: how long a message takes over one TCP connection, for the
// simulator's `transport: tcp` links (sim/net/simulator.h, docs/simulator.md
// "Links that behave like TCP").
//
// murmurd sends every message over one TCP connection per peer. What a line
// rate alone does not say, and what this model adds:
//   - framing: a segment carries at most kMss = 1448 payload bytes (1500-byte
//     MTU less IPv4, TCP and the timestamp option) in a kFrameBytes = 1514-
//     byte Ethernet frame; the link carries frames;
//   - slow start (RFC 5681): a connection starts with an initial window of
//     10 segments (RFC 6928, Linux's default) and doubles it every round
//     trip until the window covers the path's bandwidth-delay product. A
//     connection idle for longer than its retransmission timeout halves its
//     window once per timeout elapsed, down to the initial window (Linux's
//     tcp_cwnd_restart, net.ipv4.tcp_slow_start_after_idle = 1, the
//     default); with idle_restart false (the sysctl at 0) it keeps it;
//   - packet loss: a path that drops a share q of packets costs a message
//     two things. Its rate: a connection holds at most kLossWindow / q
//     segments in flight, so it carries at most that window per round trip.
//     The classic models (Mathis et al. 1997, Padhye et al. 1998: a window of
//     sqrt(3 / (2bq)) segments, Reno halving on every loss) predict 8 to 100
//     times less than Linux's CUBIC with SACK, RACK and PRR measured in
//     murmur's network bed (docs/netbed.md "Packet loss": 100 Mbit/s, 200
//     ms, 4% lost per packet carried 6 Mbit/s where Padhye et al. give 0.2);
//     there the window sustained scales as about 1/q, and kLossWindow = 6.5
//     is within a factor 2 of 15 measured windows. And its recovery: each
//     segment is lost with probability q (drawn from the sender's stream)
//     and is in again one round trip after it left (fast retransmit), two
//     if it is among the message's last 3 (Linux's tail loss probe), one
//     more if the resend is lost too (RACK detects a lost retransmission by
//     time); the message ends when its bytes have left and every lost
//     segment is in again.
// The retransmission timeout is Linux's: the round trip plus 200 ms (its
// minimum variance term, tcp_rto_min).
//
// Pure functions of their arguments, in double, with only +, -, *, / and
// sqrt (correctly rounded): the same bits on every machine.
#pragma once

#include <algorithm>
#include <cstdint>

namespace murmur::sim {

struct TcpModel {
  static constexpr double kMss = 1448;                 // payload bytes per segment
  static constexpr double kFrameBytes = 1514;          // what a full segment occupies on the link
  static constexpr double kInitialWindow = 10 * kMss;  // bytes
  static constexpr double kMaxWindow = 4 << 20;        // Linux's largest send buffer (tcp_wmem[2])
  static constexpr double kMinRto = 0.2;               // seconds
  static constexpr double kLossWindow = 6.5;           // segments x loss rate (see above)

  // Bytes on the link for `payload` bytes of stream: whole segments' frames.
  static double WireBytes(double payload);
  // Seconds the retransmission timer waits on a path of round trip `rtt`.
  static double Rto(double rtt) { return rtt + kMinRto; }
  // The most payload bytes per second a connection carries on a path of round
  // trip `rtt` s that loses a share `loss` of packets: kLossWindow / loss
  // segments per round trip; infinity at 0.
  static double LossLimitedRate(double rtt, double loss);
  // Seconds a message of `segments` segments, whose bytes take `transfer`
  // seconds to leave, ends later for its lost ones on a path of round trip
  // `rtt` that loses a share `loss`: segment i leaves at i / segments of
  // the transfer, and a lost one is in again one round trip later (two for
  // one of the last 3, one more if the resend is lost too); the message ends
  // when its last byte has left and every lost segment is in again.
  // `draw` gives uniform numbers in [0, 1), one per segment and per resend.
  template <typename Draw>
  static double RecoverySeconds(double segments, double transfer, double rtt, double loss, Draw&& draw) {
    if (loss <= 0) return 0;
    double end = transfer;
    for (double i = 0; i < segments; ++i) {
      if (draw() < loss) {
        const double trips = (segments - 1 - i < 3 ? 2 : 1) + (draw() < loss ? 1 : 0);
        end = std::max(end, i / segments * transfer + trips * rtt);
      }
    }
    return end - transfer;
  }
  // The window a connection that last sent `idle` seconds ago starts with.
  static double RestartWindow(double window, double idle, double rtt, bool idle_restart);

  struct Transfer {
    double seconds;  // from the first byte leaving to the last byte leaving
    double window;   // the congestion window after it (bytes)
  };
  // Sends `wire` link bytes at `rate` link bytes/s from window `window` on a
  // path of round trip `rtt`: one round trip per slow-start window that does
  // not yet fill the pipe (rate x rtt), then the rest at the rate.
  static Transfer Send(double wire, double window, double rate, double rtt, double window_cap);
};

}  // namespace murmur::sim
