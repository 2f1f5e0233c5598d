// `sinkgrad demo`: the built-in demonstration. On random batches it runs the forward for a
// few T and prints, per (n, T), how far each backward solver's dL/dM is from the exact
// derivative of the T-step forward (`unrolled`), with status counts and timings.

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "cli/command.hpp"
#include "cli/common_options.hpp"
#include "cli/demo_report.hpp"
#include "core/forward_spec.hpp"
#include "core/limits.hpp"
#include "io/memory_budget.hpp"

namespace sinkgrad::cli {
namespace {

template <class T>
void require_at_least(const std::vector<T>& values, T minimum, const char* option) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (values[k] < minimum)
      throw UsageError(std::string(option) + " values must be >= " + std::to_string(minimum) +
                       ", got " + std::to_string(values[k]));
    // As a study definition refuses a value listed twice: the table would repeat itself.
    if (std::find(values.begin(), values.begin() + k, values[k]) != values.begin() + k)
      throw UsageError(std::string(option) + " lists " + std::to_string(values[k]) +
                       " twice; give each value once");
  }
}

// boost would read "-1" as 2^64 - 1: a seed is decimal digits only.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || text.front() == '-' || error != std::errc() ||
      end != text.data() + text.size())
    throw UsageError("--seed must be an integer from 0 to 18446744073709551615, got '" + text +
                     "'");
  return seed;
}

int run_demo_command(const po::variables_map& values) {
  DemoSettings settings;
  const long long batch = values["batch"].as<long long>();
  if (batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(batch));
  settings.batch = batch;
  settings.sizes = values["sizes"].as<std::vector<int>>();
  settings.iterations = values["iterations"].as<std::vector<int>>();
  require_at_least(settings.sizes, 1, "--sizes");
  require_at_least(settings.iterations, 1, "--iterations");
  try {
    for (const int n : settings.sizes) limits::check_batch_shape(batch, n);
    for (const int T : settings.iterations)
      limits::check_forward_iterations(T, "--iterations values");
  } catch (const Error& error) {
    throw UsageError(std::string("--batch/--sizes/--iterations: ") + error.what());
  }
  settings.scale = values["scale"].as<double>();
  if (!(settings.scale >= 0) || !(settings.scale <= limits::max_real))
    throw UsageError("--scale must be a number from 0 to 3.4e38 (finite in float32)");
  try {
    settings.precision = parse_precision(values["dtype"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--dtype: ") + error.what());
  }
  std::optional<double> eps;
  if (values.count("eps")) eps = parse_real_option("eps", values["eps"].as<std::string>());
  try {
    settings.forward = make_forward_spec(values["forward"].as<std::string>(), eps);
  } catch (const Error& error) {
    throw UsageError(std::string("--forward/--eps: ") + error.what());
  }
  settings.seed = values.count("seed")
                      ? parse_seed(values["seed"].as<std::string>())
                      : (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  // Before the header is printed: M, G, R and the six solvers' gradients per size.
  const std::uint64_t real = settings.precision == Precision::float32 ? 4 : 8;
  for (const int n : settings.sizes)
    require_memory(
        MemoryEstimate()
            .batches(9, settings.batch, n, real)
            .add(static_cast<std::uint64_t>(settings.batch), 6 * 8 + real)
            .add(static_cast<std::uint64_t>(omp_get_max_threads()),
                 16 * real * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n)),
        "demo with --batch " + std::to_string(settings.batch) + " and n = " + std::to_string(n));
  run_demo(settings);
  return exit_ok;
}

}  // namespace

Command make_demo_command() {
  Command command;
  command.name = "demo";
  command.summary =
      "Compare the solvers' gradients on random matrices: error against the exact (unrolled) "
      "derivative, status counts and time, for a few sizes n and forward iterations T.";
  command.usage =
      "[--seed S] [--batch B] [--sizes n ...] [--iterations T ...] [--scale s] "
      "[--dtype float32|float64] [--forward NAME [--eps X]]";
  command.description =
      "Runs on the CPU in a few seconds. Same seed, same matrices: the seed is printed so that "
      "a run can be repeated.";
  command.add_options = [](po::options_description& options) {
    options.add_options()  //
        ("seed", po::value<std::string>()->value_name("S"),
         "random seed (default: a fresh one, printed)")  //
        ("batch", po::value<long long>()->default_value(512)->value_name("B"),
         "random matrices per size")  //
        ("sizes", po::value<std::vector<int>>()->multitoken()->default_value({4, 8}, "4 8"),
         "matrix sizes n")  //
        ("iterations",
         po::value<std::vector<int>>()->multitoken()->default_value({2, 5, 20, 100}, "2 5 20 100"),
         "forward iterations T")  //
        ("scale", po::value<double>()->default_value(4.0)->value_name("s"),
         "logits ~ uniform(0, s)")  //
        ("dtype", po::value<std::string>()->default_value("float64")->value_name("float32|float64"),
         "precision")  //
        ("forward", po::value<std::string>()->default_value("columns_first")->value_name("NAME"),
         ("forward convention: " + forward_convention_names() + " (see 'grad --help')").c_str())  //
        ("eps", po::value<std::string>()->value_name("X"),
         "the forward's eps, finite and >= 0 (default: the convention's own, 'grad --help')");
  };
  command.run = run_demo_command;
  return command;
}

}  // namespace sinkgrad::cli
