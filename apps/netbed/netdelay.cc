// murmur-netdelay: the network test bed's delay, jitter and loss stage
// (docs/netbed.md).
//
// The kernels murmur's bed runs on have no netem, so one-way latency is held
// in user space: iptables queues every packet that enters a node's namespace
// to NFQUEUE, and this program accepts each one when its delay has passed.
// Each rule is keyed by the packet's IPv4 source address, so a receiver
// applies the whole path's latency (sender's access + receiver's access +
// the path's own) and both ends' loss, as the simulator charges a message
// (sim/net/simulator.h). Holding packets at the receiver's ingress, after veth
// has orphaned them from the sending socket, keeps TCP Small Queues from
// counting held packets against the sender (a stage in the sender's OUTPUT
// chain would throttle every flow to its TSQ limit per RTT).
//
// Per packet: dropped with probability `loss` (a verdict, drawn from one
// SplitMix64 stream of --seed), else released at
//   max(arrival + delay + U(-jitter, +jitter), the previous release of its rule)
// so jitter never reorders a flow (netem's default would; TCP reads reordering
// as loss). Only the packet's first 20 bytes (the IPv4 header) are copied to
// user space, and GSO packets are queued whole.
//
// Why by hand: no Debian package delays packets without netem; this is the
// small loop libnetfilter-queue's own example suggests, plus a timer heap.
//
// usage: murmur-netdelay --queue N [--seed S] [--ready FILE] RULE...
//   RULE = ADDR,DELAY_MS,JITTER_MS,LOSS  (ADDR an IPv4 address, or * for any
//          source no other rule names)
// SIGTERM or SIGINT: prints "netdelay: P packets, D dropped, H most held" and exits 0.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

std::int64_t NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// SplitMix64 (Steele, Lea, Flood 2014): a fully specified generator, so a
// seed drops the same packets of the same sequence on every machine.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t Next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

struct Rule {
  std::int64_t delay_ns = 0;
  std::int64_t jitter_ns = 0;
  double loss = 0;
  std::int64_t last_release = 0;  // FIFO per rule: jitter never reorders
};

struct Held {
  std::int64_t release;
  std::uint64_t order;  // arrival order: ties release first come, first served
  std::uint32_t id;
  bool operator>(const Held& o) const { return release != o.release ? release > o.release : order > o.order; }
};

struct Stage {
  std::unordered_map<std::uint32_t, Rule> by_source;  // IPv4 source, network order
  Rule any;
  bool has_any = false;
  SplitMix64 rng{1};
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held;
  nfq_q_handle* queue = nullptr;
  std::uint64_t packets = 0, dropped = 0, unmatched = 0, order = 0;
  std::size_t most_held = 0;
};

bool ParseRule(const std::string& text, Stage& stage) {
  const std::size_t a = text.find(','), b = text.find(',', a + 1), c = text.find(',', b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) return false;
  const std::string addr = text.substr(0, a);
  char* end = nullptr;
  const double delay_ms = std::strtod(text.c_str() + a + 1, &end);
  if (end != text.c_str() + b) return false;
  const double jitter_ms = std::strtod(text.c_str() + b + 1, &end);
  if (end != text.c_str() + c) return false;
  const double loss = std::strtod(text.c_str() + c + 1, &end);
  if (*end != '\0') return false;
  if (!(delay_ms >= 0 && delay_ms <= 60'000 && jitter_ms >= 0 && jitter_ms <= delay_ms && loss >= 0 &&
        loss < 1)) {
    return false;
  }
  Rule r;
  r.delay_ns = static_cast<std::int64_t>(delay_ms * 1e6);
  r.jitter_ns = static_cast<std::int64_t>(jitter_ms * 1e6);
  r.loss = loss;
  if (addr == "*") {
    stage.any = r;
    stage.has_any = true;
    return true;
  }
  in_addr ip{};
  if (inet_pton(AF_INET, addr.c_str(), &ip) != 1) return false;
  stage.by_source[ip.s_addr] = r;
  return true;
}

int OnPacket(nfq_q_handle* queue, nfgenmsg*, nfq_data* data, void* arg) {
  auto& stage = *static_cast<Stage*>(arg);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header == nullptr) return 0;
  const std::uint32_t id = ntohl(header->packet_id);
  ++stage.packets;
  unsigned char* payload = nullptr;
  const int length = nfq_get_payload(data, &payload);
  Rule* rule = nullptr;
  if (length >= 20 && (payload[0] >> 4) == 4) {
    std::uint32_t source = 0;
    std::memcpy(&source, payload + 12, 4);
    auto it = stage.by_source.find(source);
    if (it != stage.by_source.end()) rule = &it->second;
  }
  if (rule == nullptr && stage.has_any) rule = &stage.any;
  if (rule == nullptr) {  // a source no rule names (IPv6, ARP never come here): as it is
    ++stage.unmatched;
    return nfq_set_verdict(queue, id, NF_ACCEPT, 0, nullptr);
  }
  if (rule->loss > 0 && stage.rng.Uniform() < rule->loss) {
    ++stage.dropped;
    return nfq_set_verdict(queue, id, NF_DROP, 0, nullptr);
  }
  std::int64_t delay = rule->delay_ns;
  if (rule->jitter_ns > 0) {
    delay += static_cast<std::int64_t>((2 * stage.rng.Uniform() - 1) * static_cast<double>(rule->jitter_ns));
  }
  const std::int64_t now = NowNs();
  const std::int64_t release = std::max(now + delay, rule->last_release);
  rule->last_release = release;
  if (release <= now) return nfq_set_verdict(queue, id, NF_ACCEPT, 0, nullptr);
  stage.held.push(Held{release, stage.order++, id});
  stage.most_held = std::max(stage.most_held, stage.held.size());
  return 0;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "murmur-netdelay: %s\nusage: murmur-netdelay --queue N [--seed S] [--ready FILE] "
               "ADDR,DELAY_MS,JITTER_MS,LOSS...\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Stage stage;
  int queue_number = -1;
  std::string ready;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--queue" || arg == "--seed" || arg == "--ready") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--queue") queue_number = std::atoi(value.c_str());
      if (arg == "--seed") stage.rng.state = std::strtoull(value.c_str(), nullptr, 10);
      if (arg == "--ready") ready = value;
    } else if (!ParseRule(arg, stage)) {
      return Usage(
          ("not a rule ADDR,DELAY_MS,JITTER_MS,LOSS (0 <= jitter <= delay <= 60000, 0 <= loss < 1): " + arg)
              .c_str());
    }
  }
  if (queue_number < 0 || queue_number > 65535) return Usage("--queue N (0..65535) is required");
  if (stage.by_source.empty() && !stage.has_any) return Usage("no rule");
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake at the release time, not up to 50 us after it

  nfq_handle* handle = nfq_open();
  if (handle == nullptr) return Usage("nfq_open failed (root, and a kernel with NFQUEUE?)");
  nfq_q_handle* queue = nfq_create_queue(handle, static_cast<std::uint16_t>(queue_number), &OnPacket, &stage);
  if (queue == nullptr) return Usage("cannot bind the queue (is another program on it?)");
  stage.queue = queue;
  // The IPv4 header is all this stage reads; GSO packets stay whole (the
  // kernel would otherwise segment them before queueing).
  if (nfq_set_mode(queue, NFQNL_COPY_PACKET, 20) < 0) return Usage("nfq_set_mode failed");
  nfq_set_queue_flags(queue, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  // 100 Mbit/s held for 200 ms is 2.5 MB: about 1,700 full-size packets,
  // far more when small; the kernel's default (1,024) would drop them.
  nfq_set_queue_maxlen(queue, 1 << 20);
  nfnl_rcvbufsiz(nfq_nfnlh(handle), 64 << 20);
  const int fd = nfq_fd(handle);

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  if (!ready.empty()) std::ofstream(ready) << "ready\n";

  std::vector<char> buffer(1 << 16);
  std::uint64_t overruns = 0;
  while (g_stop == 0) {
    const std::int64_t now = NowNs();
    while (!stage.held.empty() && stage.held.top().release <= now) {
      nfq_set_verdict(queue, stage.held.top().id, NF_ACCEPT, 0, nullptr);
      stage.held.pop();
    }
    timespec wait{0, 100'000'000};  // wakes now and then to see a signal
    if (!stage.held.empty()) {
      const std::int64_t until = stage.held.top().release - NowNs();
      wait.tv_sec = 0;
      wait.tv_nsec = std::clamp<std::int64_t>(until, 0, 100'000'000);
    }
    pollfd p{fd, POLLIN, 0};
    if (ppoll(&p, 1, &wait, nullptr) <= 0) continue;
    for (;;) {  // every packet waiting, without blocking
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n < 0) {
        if (errno == ENOBUFS) {  // the kernel dropped queue messages: report, carry on
          ++overruns;
          continue;
        }
        break;
      }
      nfq_handle_packet(handle, buffer.data(), static_cast<int>(n));
    }
  }
  while (!stage.held.empty()) {  // release what is held, so nothing is lost by stopping
    nfq_set_verdict(queue, stage.held.top().id, NF_ACCEPT, 0, nullptr);
    stage.held.pop();
  }
  std::fprintf(stderr, "netdelay: %llu packets, %llu dropped, %zu most held, %llu unmatched, %llu overruns\n",
               static_cast<unsigned long long>(stage.packets), static_cast<unsigned long long>(stage.dropped),
               stage.most_held, static_cast<unsigned long long>(stage.unmatched),
               static_cast<unsigned long long>(overruns));
  nfq_destroy_queue(queue);
  nfq_close(handle);
  return 0;
}
