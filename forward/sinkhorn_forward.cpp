#include "forward/sinkhorn_forward.hpp"

#include <atomic>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "core/limits.hpp"
#include "core/memory_spans.hpp"
#include "forward/convention_forward.hpp"
#include "forward/convention_team.hpp"
#include "forward/forward_form.hpp"
#include "forward/forward_lanes.hpp"
#include "forward/forward_team.hpp"
#include "forward/log_domain.hpp"
#include "kernels/cpu/team_loop.hpp"
#if defined(SINKGRAD_WITH_CUDA)
#include "forward/forward_cuda.hpp"
#include "kernels/cuda/device_memory.hpp"
#include "kernels/cuda/readback.hpp"
#endif

namespace sinkgrad {
namespace {

// The logits and R of one matrix, row-major n x n, as the team-form forward reads them; or, with
// transposed, read transposed: the team runs the default forward on M^T and writes R^T's rows
// as R's columns (rows_first without eps, core/forward_spec.hpp).
template <class Real, bool transposed = false>
struct CpuForwardMatrices {
  const Real* M;
  Real* R;
  int n;
  template <class T>
  math::StridedView<T> line(T* x, int i) const {
    return transposed ? math::StridedView<T>{x + i, n} : math::StridedView<T>{x + i * n, 1};
  }
  template <class T>
  math::StridedView<T> cross(T* x, int i) const {
    return transposed ? math::StridedView<T>{x + i * n, 1} : math::StridedView<T>{x + i, n};
  }
  math::StridedView<const Real> M_row(math::Slot s) const { return line(M, s.i); }
  math::StridedView<const Real> M_col(math::Slot s) const { return cross(M, s.i); }
  math::StridedView<Real> R_row(math::Slot s) const { return line(R, s.i); }
  math::StridedView<const Real> R_col(math::Slot s) const { return cross<const Real>(R, s.i); }
};

// Shapes and bounds, and every output apart from the logits and from the other output: a
// slice's R written over logits that another slice has yet to read gave a wrong R without an
// error.
template <class Real>
void check_forward_call(BatchView<const Real> logits, BatchView<Real> R,
                        const Real* column_violation, int iterations) {
  limits::check_forward_iterations(iterations, "the forward iteration count T");
  if (logits.batch != R.batch || logits.n != R.n)
    throw Error("forward: logits and R must have the same shape");
  limits::check_batch_shape(logits.batch, logits.n);
  const index_t entries = logits.size();
  const Span input = span_of("logits", logits.data, entries);
  const Span output = span_of("R", R.data, entries);
  const Span violation = span_of("column_violation", column_violation, logits.batch);
  if (overlap(output, input)) throw Error("forward: R overlaps logits: R needs memory of its own");
  if (overlap(violation, input) || overlap(violation, output))
    throw Error("forward: column_violation overlaps logits or R: it needs memory of its own");
}

// The CPU's loop over a batch: forward(b, work) -> math::ForwardOutcome for matrix b, with
// work_reals of scratch per thread; where a group is given, group(first, lanes, work, outcomes)
// first for W = math::register_lanes<Real> matrices at a time (group_lanes Lanes of scratch),
// returning the mask of those it did (their outcomes in outcomes[w]). Stores the violations (if
// asked) and returns the number of matrices whose logits are not all finite.
template <class Real, class Forward, class Group = std::nullptr_t>
index_t forward_each_matrix(index_t batch, std::size_t work_reals, Real* violation_out,
                            Forward&& forward, Group group = nullptr, std::size_t group_lanes = 0) {
  constexpr int W = math::register_lanes<Real>;
  constexpr bool grouped = !std::is_same_v<Group, std::nullptr_t>;
  std::atomic<index_t> invalid{0};
  const auto note = [&](index_t b, const math::ForwardOutcome<Real>& outcome) {
    if (!outcome.finite) ++invalid;
    if (violation_out != nullptr) violation_out[b] = outcome.violation;
  };
  each_in_lane_groups<W>(
      batch, grouped, [&] { return LaneScratch<Real, W>(grouped ? group_lanes : 0, work_reals); },
      [&](index_t first, LaneScratch<Real, W>& scratch) -> unsigned {
        if constexpr (grouped) {
          math::ForwardOutcome<Real> outcomes[W];
          const unsigned done = group(first, scratch.lanes.data(), scratch.reals.data(), outcomes);
          for (int w = 0; w < W; ++w)
            if (done >> w & 1) note(first + w, outcomes[w]);
          return done;
        } else {
          return 0;
        }
      },
      [&](index_t b, LaneScratch<Real, W>& scratch) { note(b, forward(b, scratch.reals.data())); });
  return invalid;
}

// One matrix at a time: the default forward by the log-domain loop (log_domain.hpp, seeds),
// the others by convention_forward.hpp's form.
template <class Real>
index_t forward_each_matrix_cpu(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                                Real* violation_out, const ForwardSpec& spec, bool seeds) {
  const auto convention = math::convention_forward<Real>(spec);
  const int n = logits.n;
  return forward_each_matrix(
      logits.batch, static_cast<std::size_t>(math::convention_forward_workspace(n)), violation_out,
      [&](index_t b, Real* work) -> math::ForwardOutcome<Real> {
        const bool ok = seeds ? math::sinkhorn_forward_matrix(logits.matrix(b), n, iterations,
                                                              R.matrix(b), work)
                              : math::convention_forward_matrix(convention, logits.matrix(b), n,
                                                                iterations, R.matrix(b), work);
        return {ok, ok ? math::marginal_violation(R.matrix(b), n, !convention.rows_first)
                       : math::quiet_nan<Real>()};
      });
}

// The seeds' forward by default, or team_forward's (math::ConventionTeamForward), in the team
// form the CUDA variant runs too, with the matrices as Matrices reads them (transposed:
// rows_first and tilekernels, whose violation is then R's rows', as they report).
template <class Real, class Matrices, class TeamForward = math::SeedsTeamForward<Real>>
index_t forward_cpu(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                    Real* column_violation, TeamForward team_forward = {}) {
  const int n = logits.n;
  index_t invalid = 0;
  with_cpu_team<Real>(n, [&](auto team_type) {
    using Team = typename decltype(team_type)::type;
    // The team's rows, then its storage (a convention's log-base normalisers).
    const std::size_t rows_reals = 3 * static_cast<std::size_t>(n) * n;
    const auto one = [&](index_t b, Real* work) {
      const Team team(n, work, work + rows_reals);
      return team_forward(team, Matrices{logits.matrix(b), R.matrix(b), n}, iterations);
    };
    // The seeds' forward of a compile-time n: one matrix per SIMD lane.
    if constexpr (Team::fixed_n > 0 && std::is_same_v<TeamForward, math::SeedsTeamForward<Real>>)
      invalid = forward_each_matrix(
          logits.batch, rows_reals + n, column_violation, one,
          [&](index_t first, auto* lanes, Real* work, math::ForwardOutcome<Real>* outcomes) {
            const auto mats_of = [&](int w) {
              return Matrices{logits.matrix(first + w), R.matrix(first + w), n};
            };
            return math::forward_lanes<Team::fixed_n>(mats_of, iterations, lanes, work, outcomes);
          },
          static_cast<std::size_t>(math::forward_lanes_workspace(n)));
    else
      invalid = forward_each_matrix(logits.batch, rows_reals + n, column_violation, one);
  });
  return invalid;
}

// The forward on the cpu in the form forward_plan chooses (forward/forward_form.hpp).
template <class Real>
index_t forward_on_cpu(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                       Real* column_violation, const ForwardSpec& forward) {
  if (logits.space != MemorySpace::host || R.space != MemorySpace::host)
    throw Error("forward on the cpu needs host memory");
  limits::check_thread_count();
  const ForwardPlan plan = forward_plan(forward, logits.n, math::max_team_n);
  const auto in_team_form = [&](auto team_forward) {
    if (plan.transposed)
      return forward_cpu<Real, CpuForwardMatrices<Real, true>>(logits, iterations, R,
                                                               column_violation, team_forward);
    return forward_cpu<Real, CpuForwardMatrices<Real>>(logits, iterations, R, column_violation,
                                                       team_forward);
  };
  switch (plan.form) {
    case ForwardForm::seeds_team:
      return in_team_form(math::SeedsTeamForward<Real>{});
    case ForwardForm::convention_team:
      return in_team_form(
          math::ConventionTeamForward<Real>{math::convention_forward<Real>(forward)});
    case ForwardForm::seeds_matrix:
    case ForwardForm::convention_matrix:
      break;
  }
  return forward_each_matrix_cpu(logits, iterations, R, column_violation, forward,
                                 plan.form == ForwardForm::seeds_matrix);
}

}  // namespace

template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation) {
  check_forward_call(logits, R, column_violation, iterations);
  return forward_on_cpu(logits, iterations, R, column_violation, ForwardSpec{});
}

template index_t sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*);
template index_t sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*);

#if defined(SINKGRAD_WITH_CUDA)
namespace {

// The forward on cuda with logits and R both in device memory, or both in host memory (staged
// through the GPU): launch(logits, R, column_violation, invalid_count) runs a kernel on device
// views. Returns the number of matrices whose logits are not all finite.
template <class Real, class Launch>
index_t forward_on_cuda(BatchView<const Real> logits, BatchView<Real> R, Real* column_violation,
                        Launch launch) {
  if (logits.space != R.space)
    throw Error("forward on cuda needs logits and R both in host memory or both in device memory");
  cuda::require_device();
  if (logits.batch == 0) return 0;
  // A pooled word, filled and read back in the legacy stream's order: no allocation, one wait
  // (when the logits are on the device).
  cuda::ReadbackWord counter;
  counter.fill(0, nullptr);
  unsigned long long* invalid = counter.device();
  if (logits.space == MemorySpace::device) {
    launch(logits, R, column_violation, invalid);
  } else {
    const auto bytes = static_cast<std::size_t>(logits.size()) * sizeof(Real);
    const auto cv_bytes = static_cast<std::size_t>(logits.batch) * sizeof(Real);
    cuda::DeviceBuffer M(bytes), out(bytes), cv(column_violation != nullptr ? cv_bytes : 0);
    cuda::copy_to_device(M.data(), logits.data, bytes);
    launch(BatchView<const Real>{M.as<const Real>(), logits.batch, logits.n, MemorySpace::device},
           BatchView<Real>{out.as<Real>(), R.batch, R.n, MemorySpace::device}, cv.as<Real>(),
           invalid);
    cuda::synchronize("the Sinkhorn forward on cuda");
    cuda::copy_to_host(R.data, out.data(), bytes);
    if (column_violation != nullptr) cuda::copy_to_host(column_violation, cv.data(), cv_bytes);
  }
  counter.queue_read(nullptr);
  cuda::synchronize("the Sinkhorn forward on cuda");
  return static_cast<index_t>(counter.value());
}

}  // namespace
#endif

[[noreturn]] inline void no_cuda_build() {
  throw Error("this build of sinkgrad has no CUDA support (rebuild with nvcc and SINKGRAD_CUDA)");
}

template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, Device device) {
  if (device == Device::cpu) return sinkhorn_forward(logits, iterations, R, column_violation);
  check_forward_call(logits, R, column_violation, iterations);
#if defined(SINKGRAD_WITH_CUDA)
  return forward_on_cuda(logits, R, column_violation,
                         [&](BatchView<const Real> M, BatchView<Real> out, Real* violation,
                             unsigned long long* invalid) {
                           cuda::sinkhorn_forward(M, iterations, out, violation, invalid);
                         });
#else
  no_cuda_build();
#endif
}

template index_t sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*, Device);
template index_t sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*, Device);

template <class Real>
index_t sinkhorn_forward(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                         Real* column_violation, Device device, const ForwardSpec& forward) {
  check_forward_spec(forward);
  if (is_default_forward(forward))
    return sinkhorn_forward(logits, iterations, R, column_violation, device);
  check_forward_call(logits, R, column_violation, iterations);
  if (device == Device::cpu)
    return forward_on_cpu(logits, iterations, R, column_violation, forward);
#if defined(SINKGRAD_WITH_CUDA)
  return forward_on_cuda(logits, R, column_violation,
                         [&](BatchView<const Real> M, BatchView<Real> out, Real* violation,
                             unsigned long long* invalid) {
                           cuda::convention_forward(M, iterations, out, violation, invalid,
                                                    forward);
                         });
#else
  no_cuda_build();
#endif
}

template index_t sinkhorn_forward(BatchView<const float>, int, BatchView<float>, float*, Device,
                                  const ForwardSpec&);
template index_t sinkhorn_forward(BatchView<const double>, int, BatchView<double>, double*, Device,
                                  const ForwardSpec&);

template <class Real>
void sinkhorn_forward_async(BatchView<const Real> logits, int iterations, BatchView<Real> R,
                            void* stream, const ForwardSpec& forward) {
  check_forward_spec(forward);
  check_forward_call(logits, R, static_cast<const Real*>(nullptr), iterations);
#if defined(SINKGRAD_WITH_CUDA)
  if (logits.space != MemorySpace::device || R.space != MemorySpace::device)
    throw Error("the stream-ordered forward needs logits and R in device memory");
  cuda::require_device();
  if (is_default_forward(forward))
    cuda::sinkhorn_forward(logits, iterations, R, static_cast<Real*>(nullptr), nullptr, stream);
  else
    cuda::convention_forward(logits, iterations, R, static_cast<Real*>(nullptr), nullptr, forward,
                             stream);
#else
  (void)stream;
  no_cuda_build();
#endif
}

template void sinkhorn_forward_async(BatchView<const float>, int, BatchView<float>, void*,
                                     const ForwardSpec&);
template void sinkhorn_forward_async(BatchView<const double>, int, BatchView<double>, void*,
                                     const ForwardSpec&);

}  // namespace sinkgrad
