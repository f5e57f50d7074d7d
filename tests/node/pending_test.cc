// PendingConnections (node/transport/pending.h): the bounds on connections
// still in their handshake, and whom a full set sheds.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "node/transport/pending.h"

namespace murmur::node {
namespace {

TEST_CASE(
    "Pending connections: the per-address limit refuses, a full set sheds the busiest address's oldest") {
  PendingConnections p({/*max_total=*/6, /*max_per_address=*/3});
  std::vector<std::string> closed;
  auto admit = [&](const std::string& who) {
    return p.Admit(who, [&closed, who] { closed.push_back(who); });
  };
  const auto a1 = admit("a");
  REQUIRE(a1 != 0);
  REQUIRE(admit("a") != 0);
  REQUIRE(admit("a") != 0);
  CHECK(admit("a") == 0);  // a fourth from "a": refused, nothing shed
  CHECK(closed.empty());
  REQUIRE(admit("b") != 0);
  REQUIRE(admit("b") != 0);
  const auto op = admit("operator");
  REQUIRE(op != 0);
  CHECK(p.size() == 6);
  // Full: the next sheds the oldest of "a", the address holding the most.
  REQUIRE(admit("c") != 0);
  CHECK(closed == std::vector<std::string>{"a"});
  CHECK(p.count("a") == 2);
  p.Remove(a1);  // already shed: nothing happens
  CHECK(p.count("a") == 2);
  // Equal counts (a 2, b 2): the older of the two addresses' oldest goes.
  REQUIRE(admit("d") != 0);
  CHECK(closed == std::vector<std::string>{"a", "a"});
  // However many come from a few addresses, each soon holds more than one,
  // and the operator's single pending connection is never the one shed.
  for (int i = 0; i < 40; ++i) REQUIRE(admit("flood-" + std::to_string(i % 2)) != 0);
  CHECK(p.count("operator") == 1);
  CHECK(std::count(closed.begin(), closed.end(), "operator") == 0);
  CHECK(p.count("flood-0") + p.count("flood-1") == 3);  // c, d and the operator kept
  p.Remove(op);
  CHECK(p.count("operator") == 0);
  CHECK(p.size() == 5);
  // Shed on demand (the listener out of descriptors) until none is left.
  int shed = 0;
  while (p.Shed()) ++shed;
  CHECK(shed == 5);
  CHECK(p.size() == 0);
  CHECK_FALSE(p.Shed());
}

TEST_CASE("Pending connections: a full set sheds silent connections before a handshake under way") {
  PendingConnections p({/*max_total=*/4, /*max_per_address=*/4});
  std::vector<std::string> closed;
  auto admit = [&](const std::string& who) {
    return p.Admit(who, [&closed, who] { closed.push_back(who); });
  };
  const auto peer = admit("peer");  // the oldest, and alone at its address
  REQUIRE(peer != 0);
  p.Spoke(peer);
  p.Spoke(peer);  // twice: no-op
  REQUIRE(admit("a") != 0);
  REQUIRE(admit("b") != 0);
  REQUIRE(admit("c") != 0);
  // Without the silent rule the peer (oldest of four one-connection
  // addresses) would go first; here every flood connection goes before it.
  for (int i = 0; i < 20; ++i) REQUIRE(admit("flood-" + std::to_string(i)) != 0);
  CHECK(std::count(closed.begin(), closed.end(), "peer") == 0);
  CHECK(p.count("peer") == 1);
  CHECK(closed.size() == 20);
  CHECK(closed[0] == "a");  // among the silent: equal counts, the oldest first
  // Once every pending connection has spoken, the busiest-then-oldest rule holds over all.
  std::vector<PendingConnections::Ticket> more;
  for (const char* who : {"x", "x"}) more.push_back(admit(who));
  for (auto t : more) p.Spoke(t);
  closed.clear();
  while (p.size() > 3) REQUIRE(p.Shed());  // the last silent flood connection goes first
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].rfind("flood-", 0) == 0);
  REQUIRE(p.Shed());
  CHECK(closed.back() == "x");  // "x" holds two, the peer one
  p.Spoke(0);                   // no ticket: no-op
  p.Remove(peer);
  CHECK(p.size() == 1);
}

}  // namespace
}  // namespace murmur::node
