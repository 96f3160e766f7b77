#include <doctest/doctest.h>

#include "ridgeline/units/units.hpp"

using namespace ridgeline::units;

TEST_CASE("units: dimensioned text parses to SI base units") {
  CHECK(*parse("3.35 TB/s", Dimension::kByteRate).value == doctest::Approx(3.35e12));
  CHECK(*parse("80 GiB", Dimension::kBytes).value == 80.0 * 1024 * 1024 * 1024);  // binary prefix, exact
  CHECK(*parse("80 GB", Dimension::kBytes).value == 80e9);                        // decimal prefix, exact
  CHECK(*parse("400 Gb/s", Dimension::kByteRate).value == doctest::Approx(50e9));  // bits: 400/8 GB/s
  CHECK(*parse("989.4 TFLOP/s", Dimension::kFlopRate).value == doctest::Approx(989.4e12));
  CHECK(*parse("1.83 GHz", Dimension::kFrequency).value == doctest::Approx(1.83e9));
  CHECK(*parse("5 us", Dimension::kTime).value == doctest::Approx(5e-6));
  CHECK(*parse("700 W", Dimension::kPower).value == 700.0);
  CHECK(*parse("15T", Dimension::kCount).value == 15e12);
  CHECK(*parse("2.5 USD/h", Dimension::kPricePerHour).value == 2.5);
}

TEST_CASE("units: a bare number or a wrong unit is an error that shows an example") {
  auto r = parse("3350", Dimension::kByteRate);
  CHECK_FALSE(r.value);
  CHECK(r.error == "expected a bandwidth such as \"3.35 TB/s\", got \"3350\"");
  auto w = parse("80 GHz", Dimension::kBytes);
  CHECK_FALSE(w.value);
  CHECK(w.error == "expected a size such as \"80 GiB\", got \"80 GHz\"");
  CHECK_FALSE(parse("", Dimension::kTime).value);
  CHECK_FALSE(parse("fast", Dimension::kTime).value);
}

TEST_CASE("units: printers scale") {
  CHECK(format_bytes(80.0 * kGiB) == "80.0 GiB");
  CHECK(format_seconds(1.5e-3) == "1.50 ms");
  CHECK(format_flop_rate(989.4e12) == "989 TFLOP/s");
  CHECK(format_percent(0.456) == "45.6%");
  CHECK(format_count(8.03e9) == "8.03B");
}
