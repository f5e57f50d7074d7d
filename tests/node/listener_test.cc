// The Listener's kernel-side filter (node/transport/listener.h): on Linux a
// connection that speaks at once is handed over before earlier ones that say
// nothing, which wait about `defer_accept_seconds` in the kernel and are then
// handed over all the same; with the option off they are taken at once.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "node/transport/listener.h"

namespace murmur::node {
namespace {

using Clock = std::chrono::steady_clock;

struct Accepted {
  std::vector<std::uint16_t> ports;  // the clients' local ports, in the order taken
  std::vector<Clock::time_point> when;
  std::vector<asio::ip::tcp::socket> sockets;
};

// Runs `io` until `done` or `limit` passes.
template <typename Done>
void RunUntil(asio::io_context& io, Done done, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!done() && Clock::now() < end) {
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
}

std::uint16_t LocalPort(const asio::ip::tcp::socket& s) { return s.local_endpoint().port(); }

TEST_CASE("A listener takes a connection that speaks before earlier silent ones, which come in later") {
  asio::io_context io;
  Accepted got;
  Listener listener(io, "test", [&](asio::ip::tcp::socket s) {
    got.ports.push_back(s.remote_endpoint().port());
    got.when.push_back(Clock::now());
    got.sockets.push_back(std::move(s));
  });
  REQUIRE(listener.Listen("127.0.0.1", 0).ok());
  const asio::ip::tcp::endpoint at(asio::ip::make_address("127.0.0.1"), listener.port());
  asio::io_context client_io;
  asio::ip::tcp::socket silent(client_io), speaker(client_io);
  const auto opened = Clock::now();
  silent.connect(at);  // the kernel completes the TCP handshake; nothing is sent
  speaker.connect(at);
  const std::uint8_t hello = 1;
  asio::write(speaker, asio::buffer(&hello, 1));
#if defined(__linux__)
  RunUntil(
      io, [&] { return got.ports.size() == 2; }, std::chrono::milliseconds(400));
  REQUIRE(got.ports.size() == 1);
  CHECK(got.ports[0] == LocalPort(speaker));
  // The silent one after the kernel's wait (one SYN-ACK retransmission, about 1 s).
  RunUntil(
      io, [&] { return got.ports.size() == 2; }, std::chrono::seconds(6));
  REQUIRE(got.ports.size() == 2);
  CHECK(got.ports[1] == LocalPort(silent));
  CHECK(got.when[1] - opened > std::chrono::milliseconds(800));
#endif
}

TEST_CASE("With the kernel filter off a listener takes connections in the order they opened") {
  asio::io_context io;
  Accepted got;
  ListenerOptions options;
  options.defer_accept_seconds = 0;
  Listener listener(
      io, "test",
      [&](asio::ip::tcp::socket s) {
        got.ports.push_back(s.remote_endpoint().port());
        got.sockets.push_back(std::move(s));
      },
      nullptr, options);
  REQUIRE(listener.Listen("127.0.0.1", 0).ok());
  const asio::ip::tcp::endpoint at(asio::ip::make_address("127.0.0.1"), listener.port());
  asio::io_context client_io;
  asio::ip::tcp::socket silent(client_io), speaker(client_io);
  silent.connect(at);
  speaker.connect(at);
  const std::uint8_t hello = 1;
  asio::write(speaker, asio::buffer(&hello, 1));
  RunUntil(
      io, [&] { return got.ports.size() == 2; }, std::chrono::seconds(2));
  REQUIRE(got.ports.size() == 2);
  CHECK(got.ports[0] == LocalPort(silent));
  CHECK(got.ports[1] == LocalPort(speaker));
}

}  // namespace
}  // namespace murmur::node
