#include "core/manual_env.h"

#include <doctest/doctest.h>

#include <string>

namespace murmur {
namespace {

struct TextMessage final : Message {
  explicit TextMessage(std::string t) : text(std::move(t)) {}
  std::uint32_t kind() const override { return 1; }
  std::size_t EncodedSize() const override { return text.size(); }
  void EncodeTo(std::vector<std::uint8_t>& out) const override {
    out.insert(out.end(), text.begin(), text.end());
  }
  std::string text;
};

TEST_CASE("Timers fire in deadline order, ties in creation order, only when the clock moves") {
  ManualEnv env;
  std::string log;
  env.StartTimer(Nanos(30), [&] { log += "c"; });
  env.StartTimer(Nanos(10), [&] { log += "a"; });
  env.StartTimer(Nanos(10), [&] { log += "b"; });
  TimerId cancelled = env.StartTimer(Nanos(20), [&] { log += "x"; });
  env.CancelTimer(cancelled);
  env.CancelTimer(cancelled);  // twice is harmless
  CHECK(log.empty());
  env.AdvanceBy(Nanos(15));
  CHECK(log == "ab");
  CHECK(env.Now() == Nanos(15));
  env.AdvanceTo(Nanos(100));
  CHECK(log == "abc");
  CHECK(env.pending_timers() == 0);
}

TEST_CASE("A timer started from a callback fires in the same advance when due") {
  ManualEnv env;
  std::vector<long> fired;
  std::function<void()> tick = [&] {
    fired.push_back(env.Now().count());
    if (fired.size() < 5) env.StartTimer(Nanos(10), tick);
  };
  env.StartTimer(Nanos(10), tick);
  env.AdvanceBy(Nanos(45));
  CHECK(fired == std::vector<long>{10, 20, 30, 40});
  env.AdvanceBy(Nanos(10));
  CHECK(fired.size() == 5);
}

TEST_CASE("Sends are recorded and rng streams are keyed by node") {
  ManualEnv a(1, 5), b(2, 5);
  a.Send(2, std::make_shared<TextMessage>("hello"));
  REQUIRE(a.outbox().size() == 1);
  CHECK(a.outbox()[0].to == 2);
  CHECK(a.outbox()[0].msg->EncodedSize() == 5);
  CHECK(a.MakeRng(RngPurpose::kBatch).NextU64() == Rng(5, 1, RngPurpose::kBatch).NextU64());
  CHECK(a.MakeRng(RngPurpose::kBatch).NextU64() != b.MakeRng(RngPurpose::kBatch).NextU64());
}

}  // namespace
}  // namespace murmur
