// FedClient (federated/client.h) against hand-computed local steps.
#include "federated/client.h"

#include <doctest/doctest.h>

#include "core/manual_env.h"
#include "tests/gossip/quadratic.h"

namespace murmur::federated {
namespace {

MessagePtr Task(std::uint64_t round, std::vector<float> global) {
  auto none = compression::MakeCompressor("none").value();
  compression::CompressorState s;
  Rng rng(0);
  FedHeader h;
  h.kind = FedKind::kTask;
  h.round = round;
  return std::make_shared<const FedMessage>(h,
                                            std::vector<UpdatePtr>{none->Compress(global, Layout(), s, rng)});
}

std::vector<float> LastDelta(ManualEnv& env) {
  REQUIRE(!env.outbox().empty());
  const auto& m = static_cast<const FedMessage&>(*env.outbox().back().msg);
  REQUIRE(m.header().kind == FedKind::kResult);
  return m.updates()[0]->ToDense();
}

TEST_CASE("FedBN: with local buffers a client trains its second task on its own buffer values") {
  // x = (w0, w1, buffer:s), f(x) = 0.5 ||x - 1||^2, one step at rate 0.5 per task.
  Layout layout;
  layout.Add("w", {2});
  layout.Add("buffer:s", {1});
  for (bool local : {false, true}) {
    CAPTURE(local);
    ManualEnv env(1);
    gossip::testing::QuadraticLearner learner({1, 1, 1}, 0.5);
    ClientOptions o;
    o.local_steps = 1;
    o.local_buffers = local;
    FedClient client(env, /*server=*/1, learner, layout, o);
    client.OnMessage(1, Task(0, {0, 0, 0}));
    CHECK(LastDelta(env) == std::vector<float>{0.5f, 0.5f, 0.5f});  // y = 0.5 everywhere
    client.OnMessage(1, Task(1, {10, 10, 10}));
    // w: 10 -> 5.5 either way. The buffer: from the global 10 -> 5.5
    // (averaged buffers), or from the client's own 0.5 -> 0.75, sent as
    // 0.75 - 10 so that the server's mean moves to the clients' values.
    const std::vector<float> want =
        local ? std::vector<float>{-4.5f, -4.5f, -9.25f} : std::vector<float>{-4.5f, -4.5f, -4.5f};
    CHECK(LastDelta(env) == want);
  }
}

TEST_CASE("A client holds no model between tasks, and its second task is what a fresh model would give") {
  // f(x) = 0.5 ||x - 1||^2, one step at rate 0.5: y = x + 0.5 (1 - x).
  Layout layout;
  layout.Add("w", {1000});
  ManualEnv env(1);
  gossip::testing::QuadraticLearner learner(std::vector<float>(1000, 1.0f), 0.5);
  ClientOptions o;
  o.local_steps = 1;
  FedClient client(env, /*server=*/1, learner, layout, o);
  CHECK(client.state_floats() == 0);
  client.OnMessage(1, Task(0, std::vector<float>(1000, 3.0f)));
  CHECK(LastDelta(env) == std::vector<float>(1000, -1.0f));
  CHECK(client.state_floats() == 0);  // the task's x and y are gone once the result is sent
  CHECK(client.params().empty());
  client.OnMessage(1, Task(1, std::vector<float>(1000, -1.0f)));
  CHECK(LastDelta(env) == std::vector<float>(1000, 1.0f));
  CHECK(client.state_floats() == 0);
  CHECK(client.tasks_done() == 2);
  // A task of another size is still refused.
  client.OnMessage(1, Task(2, std::vector<float>(999, 0.0f)));
  CHECK(client.tasks_done() == 2);
}

}  // namespace
}  // namespace murmur::federated
