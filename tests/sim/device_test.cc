#include "sim/net/device.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

namespace murmur::sim {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/murmur_test_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("Device profiles are deterministic, within their class ranges, and mixed in exact fractions") {
  auto a = MakeDeviceProfiles("phone:0.7,iot:0.3", 1000, 9).value();
  auto b = MakeDeviceProfiles("phone:0.7,iot:0.3", 1000, 9).value();
  int phones = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].flops_per_s == b[i].flops_per_s);
    if (a[i].kind == "phone") {
      ++phones;
      CHECK(a[i].flops_per_s >= 5e9);
      CHECK(a[i].flops_per_s <= 30e9);
    } else {
      CHECK(a[i].kind == "iot");
      CHECK(a[i].up_bps <= 1e6);
    }
  }
  CHECK(phones == 700);
  auto c = MakeDeviceProfiles("phone:0.7,iot:0.3", 1000, 10).value();
  CHECK(c[0].flops_per_s != a[0].flops_per_s);
  CHECK(MakeDeviceProfiles("uniform", 3, 1).value()[2].flops_per_s == DeviceProfile{}.flops_per_s);
}

TEST_CASE("Bad device specs and traces are rejected by name and line") {
  CHECK(MakeDeviceProfiles("toaster", 4, 1).status().message().find("unknown device class 'toaster'") !=
        std::string::npos);
  CHECK(MakeDeviceProfiles("phone:x", 4, 1).status().message().find("not a number") != std::string::npos);
  std::string good =
      WriteTemp("trace_good.csv",
                "node,gflops,up_mbps,down_mbps,latency_ms,availability\n1,2,3,4,5,0.5\n0,10,1,1,1,1\n");
  auto t = ReadDeviceTrace(good, 2).value();
  CHECK(t[1].flops_per_s == 2e9);
  CHECK(t[1].latency == Nanos(5'000'000));
  CHECK(t[0].availability == 1.0);
  auto missing = ReadDeviceTrace(good, 3);
  CHECK(missing.status().message().find("node 2 is missing") != std::string::npos);
  std::string bad = WriteTemp("trace_bad.csv", "0,1,2,3,4,0.5\n0,1,2,3,4,0.5\n");
  CHECK(ReadDeviceTrace(bad, 2).status().message().find(":2: node 0 listed twice") != std::string::npos);
  std::string ragged = WriteTemp("trace_ragged.csv", "0,1,2\n");
  CHECK(ReadDeviceTrace(ragged, 1).status().message().find(":1: expected 6 fields") != std::string::npos);
  std::string range = WriteTemp("trace_range.csv", "5,1,2,3,4,0.5\n");
  CHECK(ReadDeviceTrace(range, 2).status().code() == StatusCode::kOutOfRange);
  // A latency past a day would overflow the integer nanoseconds (the trace fuzzer's find).
  std::string slow = WriteTemp("trace_slow.csv", "0,1,2,3,1e300,0.5\n");
  CHECK(ReadDeviceTrace(slow, 1).status().message().find(":1: latency_ms") != std::string::npos);
  std::string day = WriteTemp("trace_day.csv", "0,1,2,3,86400000,0.5\n");
  CHECK(ReadDeviceTrace(day, 1).value()[0].latency == Nanos(86'400'000'000'000));
  CHECK(ReadDeviceTrace("/nonexistent/trace.csv", 2).status().code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace murmur::sim
