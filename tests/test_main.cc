// The one main() of every module's doctest executable.
//
// A test program that needs hardware the machine may lack (the CUDA tests)
// defines MURMUR_TEST_SKIP_HOOK and MurmurTestSkipReason(): when that returns
// a reason, the program prints it and exits with 77, which CTest reports as
// skipped (SKIP_RETURN_CODE), never as passed. Listing the test cases (test
// discovery at build time) still works there.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#ifdef MURMUR_TEST_SKIP_HOOK
#include <cstdio>
#include <string>
#include <string_view>

std::string MurmurTestSkipReason();
#endif

int main(int argc, char** argv) {
#ifdef MURMUR_TEST_SKIP_HOOK
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    listing = listing || a.starts_with("--list") || a.starts_with("-l") || a == "--help" || a == "-h";
  }
  if (!listing) {
    const std::string reason = MurmurTestSkipReason();
    if (!reason.empty()) {
      std::printf("skipped: %s\n", reason.c_str());
      return 77;
    }
  }
#endif
  doctest::Context context(argc, argv);
  return context.run();
}
