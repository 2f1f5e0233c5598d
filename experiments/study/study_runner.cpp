#include "experiments/study/study_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <omp.h>

#include "core/solver_registry.hpp"
#include "experiments/io/memory_budget.hpp"
#include "experiments/io/output_policy.hpp"
#include "experiments/study/input_data.hpp"
#include "experiments/study/metrics.hpp"
#include "experiments/study/progress_line.hpp"
#include "experiments/study/references.hpp"
#include "experiments/study/solver_contract.hpp"
#include "experiments/study/study_log.hpp"
#include "experiments/study/sweep.hpp"
#include "forward/sinkhorn_forward.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include <cuda_runtime_api.h>

#include "backend/cuda/device_memory.hpp"
#endif

namespace sinkgrad::study {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown cpu";
}

std::string gpu_name() {
#if defined(SINKGRAD_WITH_CUDA)
  cudaDeviceProp properties{};
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&properties, device) == cudaSuccess)
    return properties.name;
#endif
  return "unknown gpu";
}

bool gpu_usable(std::string* reason) {
  static const std::pair<bool, std::string> probe = [] {
    try {
      HostBatch<double> M(1, 1), R(1, 1);
      sinkhorn_forward<double>(M.view(), 1, R.view(), nullptr, Device::cuda);
      return std::make_pair(true, std::string());
    } catch (const Error& error) {
      return std::make_pair(false, std::string(error.what()));
    }
  }();
  if (reason != nullptr) *reason = probe.second;
  return probe.first;
}

std::string devices_text(const std::vector<Device>& devices) {
  std::string text;
  for (const Device device : devices) {
    text += text.empty() ? "" : "; ";
    if (device == Device::cpu)
      text += "cpu: " + cpu_name() + " (" + std::to_string(omp_get_max_threads()) + " threads)";
    else
      text += "cuda: " + gpu_name();
  }
  return text;
}

#if defined(SINKGRAD_WITH_CUDA)
void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("timing on cuda: ") + what + ": " + cudaGetErrorString(status));
}

// Seconds of each of `repeats` solves of the problem on the GPU, timed with CUDA events around
// the solve of device-resident data (the copies to and from the GPU are not timed), after one
// untimed warm-up solve.
template <class Real>
std::vector<double> time_on_gpu(const BackwardSolver& solver, const BackwardProblem<Real>& host,
                                int repeats) {
  const index_t batch = host.grad_output.batch;
  const int n = host.grad_output.n;
  const auto bytes = static_cast<std::size_t>(host.grad_output.size()) * sizeof(Real);
  const auto upload = [&](BatchView<const Real> view, cuda::DeviceBuffer& buffer) {
    buffer = cuda::DeviceBuffer(bytes);
    cuda::copy_to_device(buffer.data(), view.data, bytes);
    return BatchView<const Real>{buffer.as<const Real>(), batch, n, MemorySpace::device};
  };
  cuda::DeviceBuffer M, R, G;
  BackwardProblem<Real> problem = host;
  problem.logits = upload(host.logits, M);
  problem.forward_output = upload(host.forward_output, R);
  problem.grad_output = upload(host.grad_output, G);
  cuda::DeviceBuffer gradient(bytes);
  cuda::DeviceBuffer status(static_cast<std::size_t>(batch) * sizeof(SolveStatus));
  cuda::DeviceBuffer iterations(static_cast<std::size_t>(batch) * sizeof(std::int32_t));
  const BackwardResult<Real> result{{gradient.as<Real>(), batch, n, MemorySpace::device},
                                    status.as<SolveStatus>(),
                                    iterations.as<std::int32_t>()};
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> seconds;
  try {
    solver.solve(problem, result, Device::cuda);
    for (int repeat = 0; repeat < repeats; ++repeat) {
      check_cuda(cudaEventRecord(start, nullptr), "cudaEventRecord");
      solver.solve(problem, result, Device::cuda);
      check_cuda(cudaEventRecord(stop, nullptr), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      seconds.push_back(static_cast<double>(ms) * 1e-3);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return seconds;
}
#endif

// Per-iteration residual norms of the batch: a matrix that stopped early keeps its last
// residual (the one of the iterate it returned), so every k summarises the whole batch.
void summarise_history(const std::vector<double>& history, index_t batch, int stride,
                       int iterations, RunRecord& record) {
  const int length = iterations + 1;
  std::vector<double> last(static_cast<std::size_t>(batch), std::nan(""));
  std::vector<double> first(static_cast<std::size_t>(batch), std::nan(""));
  std::vector<double> absolute(static_cast<std::size_t>(batch));
  std::vector<double> relative(static_cast<std::size_t>(batch));
  for (int k = 0; k < length; ++k) {
    for (index_t b = 0; b < batch; ++b) {
      const auto i = static_cast<std::size_t>(b);
      const double value =
          history[i * static_cast<std::size_t>(stride) + static_cast<std::size_t>(k)];
      if (std::isfinite(value)) last[i] = value;
      if (k == 0) first[i] = value;
      absolute[i] = last[i];
      relative[i] = first[i] > 0 ? last[i] / first[i] : (last[i] == 0 ? 0.0 : std::nan(""));
    }
    record.residual_median.push_back(median(absolute));
    record.residual_max.push_back(finite_max(absolute));
    record.relative_residual_median.push_back(median(relative));
    record.relative_residual_max.push_back(finite_max(relative));
  }
}

struct InputReferences {
  // keyed by precision, forward_key(forward) (and T)
  std::map<std::tuple<Precision, std::string, int>, HostBatch<double>> unrolled;
  std::map<std::pair<Precision, std::string>, ConvergedReference> converged;
};

class Runner {
 public:
  Runner(const StudyDefinition& definition, StudyLog& log)
      : definition_(definition), log_(log), registry_(SolverRegistry::global()) {}

  RunRecord run(const RunSpec& run, const InputSpec& input, const InputData& data,
                InputReferences& references) {
    const HostBatch<double> logits = rounded_to(run.precision, data.logits);
    const HostBatch<double> grad_output = rounded_to(run.precision, data.grad_output);
    const HostBatch<double>& unrolled =
        unrolled_reference_for(run, input, logits, grad_output, references);
    const ConvergedReference& converged =
        converged_reference_for(run, input, logits, grad_output, references);
    return run.precision == Precision::float32
               ? measure<float>(run, logits, grad_output, unrolled, converged)
               : measure<double>(run, logits, grad_output, unrolled, converged);
  }

 private:
  const HostBatch<double>& unrolled_reference_for(const RunSpec& run, const InputSpec& input,
                                                  const HostBatch<double>& logits,
                                                  const HostBatch<double>& grad_output,
                                                  InputReferences& references) {
    const std::string forward = forward_key(run.forward);
    const auto key = std::make_tuple(run.precision, forward, run.T);
    auto found = references.unrolled.find(key);
    if (found != references.unrolled.end()) return found->second;
    std::optional<HostBatch<double>> stored =
        log_.read_unrolled_reference(input, run.precision, run.T, forward);
    if (!stored) {
      stored = unrolled_reference(logits, grad_output, run.T, run.forward);
      log_.write_unrolled_reference(input, run.precision, run.T, forward, *stored);
    }
    return references.unrolled.emplace(key, std::move(*stored)).first->second;
  }

  const ConvergedReference& converged_reference_for(const RunSpec& run, const InputSpec& input,
                                                    const HostBatch<double>& logits,
                                                    const HostBatch<double>& grad_output,
                                                    InputReferences& references) {
    const std::string forward = forward_key(run.forward);
    const auto key = std::make_pair(run.precision, forward);
    auto found = references.converged.find(key);
    if (found != references.converged.end()) return found->second;
    std::optional<ConvergedReference> stored =
        log_.read_converged_reference(input, run.precision, forward);
    if (!stored) {
      stored = converged_reference(logits, grad_output, definition_.converged_tolerance,
                                   definition_.converged_max_iterations, run.forward);
      log_.write_converged_reference(input, run.precision, forward, *stored);
    }
    return references.converged.emplace(key, std::move(*stored)).first->second;
  }

  template <class Real>
  RunRecord measure(const RunSpec& run, const HostBatch<double>& logits64,
                    const HostBatch<double>& grad_output64, const HostBatch<double>& unrolled,
                    const ConvergedReference& converged) {
    RunRecord record;
    record.started = utc_now();
    const auto start = Clock::now();
    const index_t batch = logits64.batch();
    const int n = logits64.n();
    const auto count = static_cast<std::size_t>(batch);
    const HostBatch<Real> logits = converted<Real>(logits64);
    const HostBatch<Real> grad_output = converted<Real>(grad_output64);

    // Forward in the run's precision on the run's device.
    HostBatch<Real> R(batch, n);
    std::vector<Real> violation(count);
    sinkhorn_forward<Real>(logits.view(), run.T, R.view(), violation.data(), run.device,
                           run.forward);
    const std::vector<double> violation64(violation.begin(), violation.end());
    record.violation_max = finite_max(violation64);
    record.violation_median = median(violation64);
    record.converged_T = converged.T;

    // The measured solve, with its residual history when the solver iterates.
    const auto solver = registry_.create(run.solver, run.options);
    const BackwardProblem<Real> problem{logits.view(), R.view(), grad_output.view(), run.T,
                                        run.forward};
    const int stride = solver->history_length(n, run.precision);
    std::vector<Real> history(count * static_cast<std::size_t>(std::max(stride, 0)));
    HostBatch<Real> gradient(batch, n);
    std::vector<SolveStatus> status(count);
    record.iterations.assign(count, 0);
    BackwardResult<Real> result{gradient.view(), status.data(), record.iterations.data(),
                                stride > 0 ? history.data() : nullptr, stride};
    solve_checked(*solver, problem, result, run.device, "");
    for (const SolveStatus s : status) ++record.status_counts[static_cast<std::size_t>(s)];
    record.vs_unrolled = compare_gradients<Real>(gradient.view(), unrolled.view());
    record.vs_converged = compare_gradients<Real>(gradient.view(), converged.gradient.view());

    // Timing: the same solve repeated without the history.
    std::vector<double> times;
    if (run.device == Device::cuda) {
#if defined(SINKGRAD_WITH_CUDA)
      times = time_on_gpu(*solver, problem, definition_.timing_repeats);
      record.timing_method = "cuda events around the solve of device-resident data";
#endif
    } else {
      // Wall clock around the call, which returns when the result is written.
      HostBatch<Real> scratch(batch, n);
      std::vector<SolveStatus> scratch_status(count);
      std::vector<std::int32_t> scratch_iterations(count);
      const BackwardResult<Real> timed{scratch.view(), scratch_status.data(),
                                       scratch_iterations.data()};
      for (int repeat = 0; repeat < definition_.timing_repeats; ++repeat) {
        const auto t0 = Clock::now();
        solver->solve(problem, timed, run.device);
        times.push_back(seconds_since(t0));
      }
      record.timing_method = "wall clock around the solve, host memory";
    }
    record.solve_seconds = median(times);
    record.solve_seconds_min =
        times.empty() ? std::nan("") : *std::min_element(times.begin(), times.end());
    record.timing_repeats = definition_.timing_repeats;

    if (stride > 0) {
      const int used = *std::max_element(record.iterations.begin(), record.iterations.end());
      const std::vector<double> history64(history.begin(), history.end());
      summarise_history(history64, batch, stride, std::min(used, stride - 1), record);
      if (definition_.iterate_errors && run.options.count("max_iterations"))
        iterate_errors<Real>(run, problem, used, unrolled, converged.gradient, record);
    }
    record.wall_seconds = seconds_since(start);
    return record;
  }

  // The gradient after k = 1 .. K iterations: CG from zero is deterministic, so re-solving
  // with max_iterations = k reproduces the measured solve's k-th iterate exactly.
  template <class Real>
  void iterate_errors(const RunSpec& run, const BackwardProblem<Real>& problem, int K,
                      const HostBatch<double>& unrolled, const HostBatch<double>& converged,
                      RunRecord& record) {
    const index_t batch = problem.grad_output.batch;
    const auto count = static_cast<std::size_t>(batch);
    HostBatch<Real> gradient(batch, problem.grad_output.n);
    std::vector<SolveStatus> status(count);
    std::vector<std::int32_t> iterations(count);
    for (int k = 1; k <= K; ++k) {
      auto options = run.options;
      options["max_iterations"] = std::to_string(k);
      const auto solver = registry_.create(run.solver, options);
      solver->solve(problem, {gradient.view(), status.data(), iterations.data()}, run.device);
      record.iterate_error_unrolled_median.push_back(
          median(frobenius_errors<Real>(gradient.view(), unrolled.view())));
      record.iterate_error_converged_median.push_back(
          median(frobenius_errors<Real>(gradient.view(), converged.view())));
    }
  }

  const StudyDefinition& definition_;
  StudyLog& log_;
  const SolverRegistry& registry_;
};

// A run holds about 16 batches of doubles at once (the input, its rounded and converted
// copies, both references, R, the gradients, the timing scratch), the solver's residual
// history (B rows) and a per-thread workspace with the unrolled tape.
void require_sweep_memory(const StudyDefinition& definition, const Sweep& sweep) {
  int most_T = 1;
  for (const int T : definition.iterations) most_T = std::max(most_T, T);
  std::vector<std::uint64_t> history(sweep.inputs.size(), 0);
  for (const RunSpec& run : sweep.runs) {
    const int n = sweep.inputs[run.input].n;
    const int stride =
        SolverRegistry::global().create(run.solver, run.options)->history_length(n, run.precision);
    history[run.input] = std::max<std::uint64_t>(history[run.input], std::max(stride, 0));
  }
  for (std::size_t i = 0; i < sweep.inputs.size(); ++i) {
    const InputSpec& input = sweep.inputs[i];
    const auto n = static_cast<std::uint64_t>(input.n);
    MemoryEstimate estimate;
    estimate.batches(16, input.batch, input.n, sizeof(double))
        .add(static_cast<std::uint64_t>(input.batch), 16 + 16 * history[i])
        .add(static_cast<std::uint64_t>(omp_get_max_threads()),
             (8 * n * n + 4 * n * (static_cast<std::uint64_t>(std::sqrt(double(most_T))) + 2)) *
                 sizeof(double));
    require_memory(estimate, "the input " + input.key);
  }
}

std::string run_label(const RunSpec& run, const InputSpec& input) {
  std::string options;
  for (const auto& [name, value] : run.options)
    if (value != "auto") options += " " + name + "=" + value;
  return "n=" + std::to_string(input.n) + " " + input.logits.text + " T=" + std::to_string(run.T) +
         forward_key(run.forward) + " " + std::string(to_string(run.precision)) + " " + run.solver +
         options + " " + std::string(to_string(run.device));
}

}  // namespace

std::vector<Device> resolve_devices(const std::vector<std::string>& names) {
  std::vector<Device> devices;
  for (const std::string& name : names) {
    Device device = Device::cpu;
    if (name == "default") {
      device = gpu_usable(nullptr) ? Device::cuda : Device::cpu;
    } else if (name == "cpu" || name == "cuda") {
      device = parse_device(name);
      std::string reason;
      if (device == Device::cuda && !gpu_usable(&reason))
        throw DefinitionError("device 'cuda' was asked for, but no GPU is usable: " + reason +
                              " (use cpu, or default: cuda when a GPU is usable, else cpu)");
    } else {
      throw DefinitionError("unknown device '" + name + "'; allowed: cpu, cuda, default");
    }
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
  }
  return devices;
}

RunnerSummary run_study(const StudyDefinition& definition, const RunnerOptions& options) {
  const auto start = Clock::now();
  const std::vector<Device> devices =
      resolve_devices(options.devices.empty() ? definition.devices : options.devices);
  const SolverRegistry& registry = SolverRegistry::global();
  for (const SolverSweep& solver : definition.solvers)
    for (const Device device : devices)
      if (!registry.info(solver.name).supports(device))
        throw DefinitionError("solver '" + solver.name + "' does not run on " +
                              std::string(to_string(device)) + " in this build");
  const Sweep sweep = expand_sweep(definition, devices);
  // Before the log is created: nothing is left behind when the sweep cannot run.
  require_sweep_memory(definition, sweep);
  std::vector<std::string> inputs{definition.source_path};
  for (const LogitSource& logits : definition.logits)
    if (logits.from_file()) inputs.push_back(logits.path);
  const std::string output = checked_output_path(options.output, inputs);

  LogHeader header;
  header.tool_version = options.tool_version;
  header.definition = definition.text;
  header.study = definition.entries;
  for (const std::string& given : definition.overrides) header.overrides += given + "\n";
  header.definition_path = definition.source_path;
  header.study_name = definition.name;
  header.started = utc_now();
  header.host = host_name();
  header.devices = devices_text(devices);
  StudyLog log = StudyLog::open(output, header, options.resume);

  const std::set<std::string> finished = log.finished_runs();
  std::vector<const RunSpec*> todo;
  for (const RunSpec& run : sweep.runs)
    if (finished.count(run.id) == 0) todo.push_back(&run);
  RunnerSummary summary;
  summary.total = sweep.runs.size();
  summary.already_done = summary.total - todo.size();
  const std::size_t planned = std::min(todo.size(), options.max_runs.value_or(todo.size()));

  Runner runner(definition, log);
  ProgressLine progress(planned, options.progress);
  const auto stop = [&] {
    summary.interrupted = options.stop_requested != nullptr && *options.stop_requested != 0;
    return summary.interrupted;
  };
  std::size_t next = 0;
  while (next < planned && !stop()) {
    const std::size_t input_index = todo[next]->input;
    const InputSpec& input = sweep.inputs[input_index];
    const InputData data = make_input_data(input);
    if (!log.has_input(input)) log.write_input(input, data.logits, data.grad_output);
    InputReferences references;
    for (; next < planned && todo[next]->input == input_index && !stop(); ++next) {
      progress.update(summary.done_now, run_label(*todo[next], input));
      // The exception boundary of one run: whatever it throws fails this run only.
      bool failed = true;
      std::string failure;
      try {
        const RunRecord record = runner.run(*todo[next], input, data, references);
        log.write_run(*todo[next], input, record);
        ++summary.done_now;
        failed = false;
      } catch (const std::exception& error) {
        failure = error.what();
      } catch (...) {
        failure = "an exception that is not a std::exception";
      }
      if (failed) {
        ++summary.failed;
        failure =
            "run " + todo[next]->id + " (" + run_label(*todo[next], input) + ") failed: " + failure;
        log.write_failed_run(*todo[next], failure);
        if (options.failures != nullptr) {
          progress.clear();
          *options.failures << "sinkgrad run: " << failure << "\n";
        }
        if (options.stop_on_error) {
          ++next;
          break;
        }
      }
    }
    if (options.stop_on_error && summary.failed > 0) break;
  }
  progress.finish(summary.done_now);
  summary.remaining = todo.size() - summary.done_now;
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace sinkgrad::study
