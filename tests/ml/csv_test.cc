// CSV reader: header detection, parsing, and errors with line numbers.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ml/csv.h"

namespace murmur::ml {
namespace {
std::string Data(const std::string& name) { return std::string(MURMUR_TESTDATA_DIR) + "/ml/" + name; }
bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}
}  // namespace

TEST_CASE("ReadCsv reads a file with a header") {
  auto ds = ReadCsv(Data("good_header.csv"));
  REQUIRE(ds.ok());
  CHECK(ds->num_samples == 3);
  CHECK(ds->dim == 3);
  CHECK(ds->num_classes == 3);  // largest label 2, plus one
  CHECK(ds->labels == std::vector<std::int32_t>{0, 2, 1});
  CHECK(ds->features[1 * ds->dim + 0] == doctest::Approx(1e-3));
  CHECK(ds->features[1 * ds->dim + 1] == doctest::Approx(-4));
  CHECK(ds->features[1 * ds->dim + 2] == doctest::Approx(7));
}

TEST_CASE("ReadCsv reads a file without a header, skipping blank lines and CR") {
  CsvOptions o;
  o.num_classes = 5;
  auto ds = ReadCsv(Data("good_noheader.csv"), o);
  REQUIRE(ds.ok());
  CHECK(ds->num_samples == 3);
  CHECK(ds->num_classes == 5);
  CHECK(ds->labels == std::vector<std::int32_t>{1, 0, 3});
  CHECK(ds->features[0 * ds->dim + 0] == doctest::Approx(0.25));
  CHECK(ds->features[1 * ds->dim + 1] == doctest::Approx(2));
}

TEST_CASE("ReadCsv label column other than the first") {
  CsvOptions o;
  o.label_column = 2;
  o.header = CsvOptions::Header::kAbsent;
  auto ds = ReadCsv(Data("label_last.csv"), o);
  REQUIRE(ds.ok());
  CHECK(ds->labels == std::vector<std::int32_t>{0, 1, 1});
  CHECK(ds->num_classes == 2);
  CHECK(ds->features[2 * ds->dim + 0] == doctest::Approx(4));
  CHECK(ds->features[2 * ds->dim + 1] == doctest::Approx(5));
}

TEST_CASE("ReadCsv errors name the file and the line") {
  struct Case {
    std::string file;
    CsvOptions options;
    std::string message;
  };
  CsvOptions three;
  three.num_classes = 2;
  std::vector<Case> cases = {
      {"ragged.csv", {}, "ragged.csv:4: 2 fields, expected 3"},
      {"nonnumeric.csv", {}, "nonnumeric.csv:3: field 3 'six' is not a number"},
      {"fractional_label.csv", {}, "fractional_label.csv:2: label '1.5' is not a class number"},
      {"good_header.csv", three, "good_header.csv:3: label 2 outside [0, 2)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    auto ds = ReadCsv(Data(c.file), c.options);
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(Contains(ds.status(), c.message), ds.status().ToString());
  }
  const std::string typo =
      (std::filesystem::temp_directory_path() / ("murmur-csv-label-" + std::to_string(::getpid()) + ".csv"))
          .string();
  std::ofstream(typo) << "0,1.5\n999999,2.5\n";
  auto huge = ReadCsv(typo);
  std::filesystem::remove(typo);
  REQUIRE_FALSE(huge.ok());
  CHECK_MESSAGE(Contains(huge.status(), ":2: label '999999' is not a class number in [0, 65535]"),
                huge.status().ToString());
  auto missing = ReadCsv(Data("missing.csv"));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(Contains(missing.status(), "missing.csv"));
}

}  // namespace murmur::ml
