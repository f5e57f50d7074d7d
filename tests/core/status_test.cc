#include "core/status.h"

#include <doctest/doctest.h>

namespace murmur {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return Status::InvalidArgument("value " + std::to_string(x) + " is not positive");
  return x;
}

Result<int> Doubled(int x) {
  MURMUR_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

Status CheckBoth(int a, int b) {
  MURMUR_RETURN_IF_ERROR(ParsePositive(a).status());
  MURMUR_RETURN_IF_ERROR(ParsePositive(b).status());
  return Status::Ok();
}

TEST_CASE("Status carries code and message, OK by default") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.ToString() == "OK");
  Status s = Status::ResourceExhausted("frame length 9663676416 over limit 67108864");
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.ToString() == "ResourceExhausted: frame length 9663676416 over limit 67108864");
  CHECK(s.WithContext("peer 7").message() == "peer 7: frame length 9663676416 over limit 67108864");
  CHECK(Status::Ok().WithContext("x").ok());
}

TEST_CASE("Result propagates values and errors through the macros") {
  CHECK(Doubled(21).value() == 42);
  Result<int> bad = Doubled(-3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "value -3 is not positive");
  CHECK(CheckBoth(1, 2).ok());
  CHECK(CheckBoth(1, 0).message() == "value 0 is not positive");
}

}  // namespace
}  // namespace murmur
