// hostile_peer: the attacker of the real-process hardening tests
// (tests/apps/daemon_*_attack_test.sh, docs/security.md "Attacks and their
// bounds"). It speaks murmur's wire protocol (docs/protocol.md) with the
// library's own encoders, so that what it sends is exactly what a peer
// written from the docs could send:
//
//   hold       open N TCP connections (from several loopback source
//              addresses), optionally send Noise message 1, then nothing;
//              reopen those the daemon closes; report the counts
//   handshake  K legitimate sessions one after another (handshake, HELLO);
//              print each one's latency from connect to the daemon's HELLO
//   takeover   a certified node that sends HELLO with another node's id,
//              then a membership "that node left" and undecodable payloads
//   gossip     a certified node that gossips fake members pointing at a
//              listener of its own, counting the connections they cause
//
// Every address is numeric; the tests use loopback only. Exit 0 when the
// attack ran (whatever the daemon did), 2 on bad usage, 1 when it could not run.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cxxopts.hpp>

#include "core/rng.h"
#include "crypto/certificate.h"
#include "crypto/frame_codec.h"
#include "crypto/handshake.h"
#include "crypto/identity.h"
#include "membership/messages.h"
#include "node/transport/address.h"
#include "node/transport/asio.h"
#include "node/transport/envelope.h"
#include "tests/apps/hostile_session.h"

namespace murmur::hostile {
namespace {

using Clock = std::chrono::steady_clock;
using asio::ip::tcp;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "hostile_peer: %s\n", why.c_str());
  std::exit(1);
}

// "127.0.1.1-200" or "127.0.0.2,127.0.0.3": the source addresses to bind.
std::vector<asio::ip::address> ParseSources(const std::string& text) {
  std::vector<asio::ip::address> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t dash = item.find('-');
    if (dash != std::string::npos) {
      const std::size_t dot = item.rfind('.', dash);
      const std::string prefix = item.substr(0, dot + 1);
      const int first = std::stoi(item.substr(dot + 1, dash - dot - 1));
      const int last = std::stoi(item.substr(dash + 1));
      for (int i = first; i <= last; ++i) out.push_back(asio::ip::make_address(prefix + std::to_string(i)));
    } else if (!item.empty()) {
      out.push_back(asio::ip::make_address(item));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) Die("--from names no address");
  return out;
}

tcp::endpoint Endpoint(const std::string& host_port) {
  auto hp = node::ParseHostPort(host_port);
  if (!hp.ok()) Die(hp.status().ToString());
  return {asio::ip::make_address(hp->host), hp->port};
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void RaiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// ---------------------------------------------------------------- hold

// N connections held open; each that the daemon closes is reopened after
// `reopen` (when set). Counts what happened to them.
class Holder {
 public:
  Holder(tcp::endpoint target, std::vector<asio::ip::address> sources, bool send_message1,
         std::optional<std::chrono::milliseconds> reopen)
      : target_(target), sources_(std::move(sources)), message1_(send_message1), reopen_(reopen) {}

  void Run(int count, std::chrono::milliseconds hold) {
    for (int i = 0; i < count; ++i) Open(static_cast<std::size_t>(i));
    io_.run_for(hold);
    const int held = open_;
    std::printf("hold: opened %d, connected %d, closed by the daemon %d, reopened %d, held at the end %d\n",
                opened_, connected_, closed_, reopened_, held);
  }

 private:
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io), timer(io) {}
    tcp::socket socket;
    asio::steady_timer timer;
    std::array<std::uint8_t, 512> buf{};
    crypto::Bytes out;
  };

  void Open(std::size_t index) {
    auto c = std::make_shared<Conn>(io_);
    const asio::ip::address& from = sources_[index % sources_.size()];
    asio::error_code ec;
    c->socket.open(target_.protocol(), ec);
    if (!ec) c->socket.bind(tcp::endpoint(from, 0), ec);
    if (ec) Die("bind " + from.to_string() + ": " + ec.message());
    ++opened_;
    c->socket.async_connect(target_, [this, c, index](const asio::error_code& e) {
      if (e) return Closed(c, index);
      ++connected_;
      ++open_;
      if (message1_) {
        // Noise message 1 is the initiator's ephemeral key, 32 bytes; any
        // 32 bytes are an X25519 point, so random ones do.
        crypto::Bytes e1(32);
        for (auto& b : e1) b = static_cast<std::uint8_t>(rng_.UniformInt(256));
        MURMUR_CHECK(crypto::AppendFrame(e1, crypto::kConnectionFrameLimits, &c->out).ok());
        asio::async_write(c->socket, asio::buffer(c->out), [](const asio::error_code&, std::size_t) {});
      }
      Drain(c, index);
    });
  }

  // Reads (and discards) whatever the daemon sends until it closes.
  void Drain(const std::shared_ptr<Conn>& c, std::size_t index) {
    c->socket.async_read_some(asio::buffer(c->buf), [this, c, index](const asio::error_code& e, std::size_t) {
      if (e) {
        --open_;
        return Closed(c, index);
      }
      Drain(c, index);
    });
  }

  void Closed(const std::shared_ptr<Conn>& c, std::size_t index) {
    ++closed_;
    asio::error_code ignored;
    c->socket.close(ignored);
    if (!reopen_) return;
    c->timer.expires_after(*reopen_);
    c->timer.async_wait([this, c, index](const asio::error_code& e) {
      if (e) return;
      ++reopened_;
      Open(index);
    });
  }

  asio::io_context io_;
  tcp::endpoint target_;
  std::vector<asio::ip::address> sources_;
  bool message1_;
  std::optional<std::chrono::milliseconds> reopen_;
  Rng rng_{7, 0, RngPurpose::kGeneric};
  int opened_ = 0, connected_ = 0, closed_ = 0, reopened_ = 0, open_ = 0;
};

// ---------------------------------------------------------------- sessions

struct Identity {
  crypto::Credentials credentials;
  crypto::TrustPolicy policy;
};

Identity LoadIdentity(const cxxopts::ParseResult& a) {
  for (const char* required : {"identity", "cert", "coordinator-key", "network"})
    if (!a.count(required)) Die(std::string("missing --") + required);
  auto id = crypto::Identity::LoadKeyFile(a["identity"].as<std::string>());
  if (!id.ok()) Die(id.status().ToString());
  auto cert = crypto::LoadCertificateFile(a["cert"].as<std::string>());
  if (!cert.ok()) Die(cert.status().ToString());
  auto coordinator = crypto::PublicKeyFromArg(a["coordinator-key"].as<std::string>());
  if (!coordinator.ok()) Die(coordinator.status().ToString());
  auto creds = crypto::Credentials::Make(*id, *cert);
  if (!creds.ok()) Die(creds.status().ToString());
  return {*creds, crypto::TrustPolicy{a["network"].as<std::string>(), *coordinator, crypto::kRoleNode}};
}

crypto::Bytes Encode(const Message& m) {
  crypto::Bytes out;
  m.EncodeTo(out);
  return out;
}

class IdentitySigner final : public membership::MembershipSigner {
 public:
  explicit IdentitySigner(const crypto::Identity& id) : id_(id) {}
  crypto::Signature Sign(std::span<const std::uint8_t> bytes) const override { return id_.Sign(bytes); }

 private:
  const crypto::Identity& id_;
};

// K sequential legitimate sessions; prints each latency (connect to the daemon's HELLO).
int RunHandshakes(const cxxopts::ParseResult& a) {
  Identity me = LoadIdentity(a);
  const tcp::endpoint target = Endpoint(a["daemon"].as<std::string>());
  std::optional<asio::ip::address> from;
  if (a.count("from")) from = ParseSources(a["from"].as<std::string>()).front();
  const NodeId as = a["as"].as<NodeId>();
  const int count = a["count"].as<int>();
  double worst = 0, sum = 0;
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    Session s(me.credentials, me.policy);
    const auto start = Clock::now();
    Status st = s.Connect(target, from);
    if (st.ok()) st = s.Handshake();
    if (st.ok()) st = s.SendRecord(node::HelloRecord(as));
    if (st.ok()) st = s.AwaitHello(std::chrono::seconds(5)).status();
    const double ms = Ms(Clock::now() - start);
    if (!st.ok()) {
      ++failed;
      std::printf("handshake %d failed after %.1f ms: %s\n", i, ms, st.ToString().c_str());
    } else {
      std::printf("handshake %d: %.1f ms\n", i, ms);
    }
    worst = std::max(worst, ms);
    sum += ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(a["interval-ms"].as<int>()));
  }
  std::printf("handshakes: %d of %d completed, mean %.1f ms, max %.1f ms\n", count - failed, count,
              sum / count, worst);
  return 0;
}

// A certified node claims another node's id.
int RunTakeover(const cxxopts::ParseResult& a) {
  Identity me = LoadIdentity(a);
  const NodeId as = a["as"].as<NodeId>();
  const NodeId victim = a["victim-id"].as<NodeId>();
  Session s(me.credentials, me.policy);
  Status st = s.Connect(Endpoint(a["daemon"].as<std::string>()), std::nullopt);
  if (st.ok()) st = s.Handshake();
  if (!st.ok()) Die("handshake: " + st.ToString());
  st = s.SendRecord(node::HelloRecord(as));
  // "Node `as` left", signed with this node's key under the claimed id.
  IdentitySigner signer(me.credentials.identity);
  membership::MemberUpdate left{membership::MemberState::kLeft, as, 1u << 20, as, ""};
  auto sync = membership::MembershipMessage::Make({membership::MembershipType::kSync, as, victim, 0, kNoNode},
                                                  {left}, signer);
  if (st.ok()) st = s.SendMessage(membership::kMembershipMessageKind, Encode(*sync));
  // Undecodable gossip payloads, each an offence booked against the claimed id.
  for (int i = 0; st.ok() && i < a["offences"].as<int>(); ++i)
    st = s.SendMessage(0x10, crypto::Bytes{9, 9, 9, static_cast<std::uint8_t>(i)});
  const bool closed = !st.ok() || s.ClosedWithin(std::chrono::seconds(2));
  std::printf("takeover as node %u: %s\n", as,
              closed ? "the daemon closed the session" : "the session stayed up");
  return 0;
}

// Fake members pointing at listeners of this process: the JOIN of
// `join-updates` members at port P of --listen, fake member i at port P+1+i.
// With --statements (directories of certified identities: identity.key,
// node.cert), those members' own signed alive statements all point at port
// P+fake+1. Counts the connections each port gets.
int RunGossip(const cxxopts::ParseResult& a) {
  Identity me = LoadIdentity(a);
  const NodeId as = a["as"].as<NodeId>();
  const NodeId victim = a["victim-id"].as<NodeId>();
  const tcp::endpoint base = Endpoint(a["listen"].as<std::string>());
  const int fake = a["fake"].as<int>();
  std::vector<std::string> certified;
  if (a.count("statements")) {
    std::string list = a["statements"].as<std::string>();
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      certified.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  const int ports = fake + 1 + (certified.empty() ? 0 : 1);
  asio::io_context io;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<int> connections(static_cast<std::size_t>(ports), 0);
  std::function<void(std::size_t)> accept = [&](std::size_t i) {
    acceptors[i]->async_accept([&, i](const asio::error_code& e, tcp::socket socket) {
      if (e) return;
      ++connections[i];
      asio::error_code ignored;
      socket.close(ignored);
      accept(i);
    });
  };
  auto address = [&](int i) { return base.address().to_string() + ":" + std::to_string(base.port() + i); };
  for (int i = 0; i < ports; ++i) {
    acceptors.push_back(std::make_unique<tcp::acceptor>(
        io, tcp::endpoint(base.address(), static_cast<std::uint16_t>(base.port() + i))));
    accept(static_cast<std::size_t>(i));
  }
  Session s(me.credentials, me.policy);
  Status st = s.Connect(Endpoint(a["daemon"].as<std::string>()), std::nullopt);
  if (st.ok()) st = s.Handshake();
  if (st.ok()) st = s.SendRecord(node::HelloRecord(as));
  if (!st.ok()) Die("session: " + st.ToString());
  IdentitySigner signer(me.credentials.identity);
  auto join = [&](NodeId first, int n, const std::function<std::string(int)>& where) {
    std::vector<membership::MemberUpdate> fakes;
    for (int i = 0; i < n; ++i) {
      const NodeId id = first + static_cast<NodeId>(i);
      fakes.push_back({membership::MemberState::kAlive, id, 1, id, where(i)});
    }
    auto m = membership::MembershipMessage::Make({membership::MembershipType::kJoin, as, victim, 0, kNoNode},
                                                 std::move(fakes), signer);
    return s.SendMessage(membership::kMembershipMessageKind, Encode(*m));
  };
  const NodeId first = a["fake-base"].as<NodeId>();
  st = join(first, fake, [&](int i) { return address(1 + i); });
  const int more = a["join-updates"].as<int>();
  if (st.ok() && more > 0) st = join(first + 1000, more, [&](int) { return address(0); });
  std::printf("gossip: sent %d fake members and a JOIN of %d more: %s\n", fake, more,
              st.ok() ? "sent" : st.ToString().c_str());
  if (!certified.empty()) {
    // Certified members' own statements, all pointing at one address of this process.
    std::vector<membership::MemberUpdate> own;
    for (const std::string& dir : certified) {
      auto id = crypto::Identity::LoadKeyFile(dir + "/identity.key");
      auto cert = crypto::LoadCertificateFile(dir + "/node.cert");
      if (!id.ok() || !cert.ok()) Die("--statements " + dir + ": no identity.key and node.cert");
      membership::MemberUpdate u{membership::MemberState::kAlive, cert->node_id, 1, cert->node_id,
                                 address(fake + 1)};
      u.statement = id->Sign(membership::StatementBytes(u));
      const crypto::Bytes encoded = crypto::EncodeCertificate(*cert);
      u.credential.assign(encoded.begin(), encoded.end());
      own.push_back(std::move(u));
    }
    auto m = membership::MembershipMessage::Make({membership::MembershipType::kJoin, as, victim, 0, kNoNode},
                                                 std::move(own), signer);
    st = s.SendMessage(membership::kMembershipMessageKind, Encode(*m));
    std::printf("gossip: sent %zu certified members' own statements pointing at %s: %s\n", certified.size(),
                address(fake + 1).c_str(), st.ok() ? "sent" : st.ToString().c_str());
  }
  // Count while the session stays open (its records are not read).
  const double seconds = a["seconds"].as<double>();
  io.run_for(std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  for (int i = 0; i < ports; ++i) {
    const std::string whose = i == 0      ? "the JOIN's members"
                              : i <= fake ? "member " + std::to_string(first + i - 1)
                                          : std::to_string(certified.size()) + " certified members";
    std::printf("gossip: port %s %d connections in %.1f s (%s)\n", address(i).c_str(),
                connections[static_cast<std::size_t>(i)], seconds, whose.c_str());
  }
  return 0;
}

int Main(int argc, char** argv) {
  cxxopts::Options options("hostile_peer", "the attacker of murmur's hardening tests (loopback only)");
  // clang-format off
  options.add_options()
    ("mode", "hold, handshake, takeover or gossip", cxxopts::value<std::string>())
    ("daemon", "the daemon's HOST:PORT", cxxopts::value<std::string>())
    ("from", "source addresses: A.B.C.X-Y or a comma-separated list", cxxopts::value<std::string>())
    ("count", "connections (hold) or sessions (handshake)", cxxopts::value<int>()->default_value("1"))
    ("message1", "hold: send Noise message 1 on each connection")
    ("reopen-ms", "hold: reopen a closed connection after this many ms (default: never)", cxxopts::value<int>())
    ("seconds", "how long to hold / count", cxxopts::value<double>()->default_value("5"))
    ("interval-ms", "handshake: pause between sessions", cxxopts::value<int>()->default_value("100"))
    ("identity", "identity.key", cxxopts::value<std::string>())
    ("cert", "certificate file", cxxopts::value<std::string>())
    ("coordinator-key", "coordinator identity.pub or hex", cxxopts::value<std::string>())
    ("network", "network id", cxxopts::value<std::string>())
    ("as", "node id to announce in HELLO", cxxopts::value<NodeId>())
    ("victim-id", "the daemon's node id (receiver of membership messages)", cxxopts::value<NodeId>())
    ("offences", "takeover: undecodable payloads to send", cxxopts::value<int>()->default_value("12"))
    ("fake", "gossip: fake members", cxxopts::value<int>()->default_value("20"))
    ("fake-base", "gossip: the first fake member id", cxxopts::value<NodeId>()->default_value("1000"))
    ("join-updates", "gossip: updates of a second JOIN", cxxopts::value<int>()->default_value("256"))
    ("listen", "gossip: HOST:PORT, the first of the ports the fake members point at", cxxopts::value<std::string>())
    ("statements", "gossip: directories of certified members whose own statements point at one port", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"mode"});
  cxxopts::ParseResult a;
  try {
    a = options.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hostile_peer: %s\n", e.what());
    return 2;
  }
  if (a.count("help") || !a.count("mode") || !a.count("daemon")) {
    std::printf("%s\n", options.help().c_str());
    return a.count("help") ? 0 : 2;
  }
  RaiseFileLimit();
  const std::string mode = a["mode"].as<std::string>();
  if (mode == "hold") {
    std::optional<std::chrono::milliseconds> reopen;
    if (a.count("reopen-ms")) reopen = std::chrono::milliseconds(a["reopen-ms"].as<int>());
    Holder h(Endpoint(a["daemon"].as<std::string>()),
             ParseSources(a.count("from") ? a["from"].as<std::string>() : "127.0.0.1"),
             a.count("message1") > 0, reopen);
    h.Run(a["count"].as<int>(),
          std::chrono::milliseconds(static_cast<int>(a["seconds"].as<double>() * 1000)));
    return 0;
  }
  if (mode == "handshake") return RunHandshakes(a);
  if (mode == "takeover") return RunTakeover(a);
  if (mode == "gossip") return RunGossip(a);
  std::fprintf(stderr, "hostile_peer: unknown mode '%s'\n", mode.c_str());
  return 2;
}

}  // namespace
}  // namespace murmur::hostile

int main(int argc, char** argv) { return murmur::hostile::Main(argc, argv); }
