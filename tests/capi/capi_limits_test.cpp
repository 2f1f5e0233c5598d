// The C ABI's bounds and refusals, called from C++ as a C caller would (sinkgrad_c.h): sizes
// whose byte counts cannot exist, T above its cap, an OpenMP thread count libgomp would crash
// on, a truncated plugin (SIGBUS inside dlopen before the check) and a path with a NUL inside.
// Each must return non-zero with a message; none may throw, terminate or signal. n = 2^31 - 1
// once called std::terminate from an allocation inside an OpenMP region.

#include <gtest/gtest.h>
#include <omp.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sinkgrad/sinkgrad_c.h"

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A call that must fail with a message holding `part`.
void expect_error(int code, const std::string& part) {
  EXPECT_NE(code, 0);
  EXPECT_TRUE(contains(sinkgrad_last_error(), part)) << sinkgrad_last_error();
}

TEST(CapiLimits, SizesAndIterationsAreBounded) {
  std::vector<double> one(1, 0.0), out(1, 0.0);
  expect_error(sinkgrad_forward(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT64, 1, 2147483647, 5, one.data(),
                                out.data()),
               "n must be <= 32768, got 2147483647");
  expect_error(
      sinkgrad_forward(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT64, 1, 1, 1000001, one.data(), out.data()),
      "T must be <= 1000000 (forward iterations), got 1000001");
  expect_error(sinkgrad_forward(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT64, INT64_MAX, 1024, 5, one.data(),
                                out.data()),
               "2^56");
  std::vector<std::int32_t> status(1), iterations(1);
  expect_error(sinkgrad_solve("cg_plain", "max_iterations=4294967297", SINKGRAD_C_CPU,
                              SINKGRAD_C_FLOAT64, 1, 1, 5, one.data(), one.data(), one.data(),
                              out.data(), status.data(), iterations.data()),
               "'4294967297' is not an integer from 1 to 1000000");
  expect_error(sinkgrad_forward_convention(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT32, 1, 1, 5,
                                           "rows_first", 1e39, one.data(), out.data()),
               "finite in float32");
}

TEST(CapiLimits, HugeThreadCountIsAnErrorBeforeAnyThreadStarts) {
  std::vector<double> M(16, 1.0), R(16, 0.0);
  const int before = omp_get_max_threads();
  omp_set_num_threads(100000);
  const int code =
      sinkgrad_forward(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT64, 1, 4, 5, M.data(), R.data());
  omp_set_num_threads(before);
  expect_error(code, "asks for 100000 threads, above the 1024");
  EXPECT_EQ(sinkgrad_forward(SINKGRAD_C_CPU, SINKGRAD_C_FLOAT64, 1, 4, 5, M.data(), R.data()), 0)
      << sinkgrad_last_error();
}

TEST(CapiLimits, TruncatedPluginAndPathWithNulAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "sinkgrad_capi_limits_test";
  fs::create_directories(dir);
  std::ifstream in(SINKGRAD_TEST_HOSTILE_PLUGIN, std::ios::binary);
  const std::string library{std::istreambuf_iterator<char>(in), {}};
  const std::string cut = (dir / "cut.so").string();
  std::ofstream(cut, std::ios::binary) << library.substr(0, library.size() / 2);
  expect_error(sinkgrad_load_plugin(cut.c_str()), "cut short or damaged");
  expect_error(sinkgrad_load_plugin(cut.c_str()), "sinkgrad_load_plugin: plugin '");

  const std::string with_nul =
      std::string(SINKGRAD_TEST_HOSTILE_PLUGIN) + std::string(1, '\0') + "x";
  expect_error(sinkgrad_load_plugin_n(with_nul.data(), static_cast<int64_t>(with_nul.size())),
               "holds a NUL byte");
  const std::string good = SINKGRAD_TEST_HOSTILE_PLUGIN;
  EXPECT_EQ(sinkgrad_load_plugin_n(good.data(), static_cast<int64_t>(good.size())), 0)
      << sinkgrad_last_error();
  fs::remove_all(dir);
}

}  // namespace
