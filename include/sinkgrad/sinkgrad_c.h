/* libsinkgrad_c: a small C ABI over sinkgrad, for callers that cannot link C++ (Python's
 * ctypes: the PyTorch layer python/sinkgrad/torch.py, experiments/compare_with_seeds.py). Every
 * batch is B contiguous row-major n x n matrices ([B][n][n], as core/batch.hpp) of the element type
 * `dtype` names.
 *
 * device: SINKGRAD_C_CPU (0): every pointer is host memory.
 *         SINKGRAD_C_CUDA (1): every pointer is CUDA device memory of the current device
 *         (e.g. a torch tensor's data_ptr()), status and iterations included. The work runs on
 *         the legacy default stream and has finished when the call returns (the *_async
 *         functions below run on a stream the caller gives and do not wait).
 * dtype:  SINKGRAD_C_FLOAT32 (4) or SINKGRAD_C_FLOAT64 (8): the element size in bytes.
 *
 * Every function returns 0 on success and non-zero on error; nothing is thrown across the
 * boundary (nor out of the library's OpenMP regions: a failed allocation there is an error
 * too). On error, sinkgrad_last_error() gives the message (per thread; it stays until the
 * next error on that thread).
 *
 * Bounds (core/limits.hpp), each refused with a message naming the argument and the value:
 *   batch  0 .. 2^63 - 1, and batch * n * n <= 2^56 elements;
 *   n      1 .. 32768;
 *   T      1 .. 1000000 forward iterations;
 *   eps    finite, >= 0 and at most 3.4e38 (finite in float32);
 *   options  an integer option from its minimum to its maximum (CG's max_iterations: 1 to
 *          1000000, `sinkgrad solvers` lists each); a real option finite in float32;
 *   threads  the OpenMP thread count (OMP_NUM_THREADS, omp_set_num_threads) at most 1024: a
 *          computing call refuses a larger one before any thread is started (libgomp
 *          crashes with tens of thousands).
 * Memory: an output may not overlap an input or another output (R and logits in a forward; the
 * gradient, status, iterations and diagnostics against logits, R, G and each other in a solve):
 * such a call is refused with a message naming both, nothing is computed in place.
 * Threads: a plugin may be loaded while other threads create, check or list solvers. */
#ifndef SINKGRAD_C_H
#define SINKGRAD_C_H

#include <stdint.h>

/* The library is built with hidden visibility; only these functions are exported. */
#if defined(__GNUC__)
#define SINKGRAD_C_API __attribute__((visibility("default")))
#else
#define SINKGRAD_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { SINKGRAD_C_CPU = 0, SINKGRAD_C_CUDA = 1 };
enum { SINKGRAD_C_FLOAT32 = 4, SINKGRAD_C_FLOAT64 = 8 };

/* The message of this thread's last failed call ("" if none). Valid until its next failure. */
SINKGRAD_C_API const char* sinkgrad_last_error(void);

/* R = Sinkhorn_T(exp(logits)): T column-then-row normalisations (sinkgrad::sinkhorn_forward).
 * A matrix with non-finite logits gets a NaN R; that is not an error. */
SINKGRAD_C_API int sinkgrad_forward(int device, int dtype, int64_t batch, int n, int T,
                                    const void* logits, void* R);

/* grad = dL/dM by the solver `solver` (unrolled, cg_plain, cg_corrected, direct, ...), created
 * through SolverRegistry::global() with `options` ("key=value,key=value", "" or NULL for the
 * defaults). logits M (may be NULL for solvers that do not replay the forward), R = the forward
 * output, G = dL/dR. status and iterations: B int32 each (status: sinkgrad::SolveStatus,
 * 0 ok, 1 not_converged, 2 breakdown, 3 invalid_input, 4 ill_conditioned, 5 fallback: the
 * exact unrolled gradient in place of a failed implicit one); on SINKGRAD_C_CUDA
 * they are device memory like the rest. Solvers are created once per (solver, options) and kept, so
 * that a timed loop measures the solve, not option parsing. */
SINKGRAD_C_API int sinkgrad_solve(const char* solver, const char* options, int device, int dtype,
                                  int64_t batch, int n, int T, const void* logits, const void* R,
                                  const void* G, void* grad, int32_t* status, int32_t* iterations);

/* The stream-ordered forms, CUDA only: every pointer is device memory of the current device,
 * the work is launched on `stream` (a cudaStream_t; NULL: the legacy default stream) and the
 * call returns without waiting for it, allocating nothing, so that it can be captured into a
 * CUDA graph. Argument, launch and solver errors are returned at once; errors while the
 * kernels run surface at the caller's next synchronisation of the stream. status and
 * iterations are written on the stream like the gradient. */
SINKGRAD_C_API int sinkgrad_forward_async(int dtype, int64_t batch, int n, int T,
                                          const void* logits, void* R, void* stream);
SINKGRAD_C_API int sinkgrad_solve_async(const char* solver, const char* options, int dtype,
                                        int64_t batch, int n, int T, const void* logits,
                                        const void* R, const void* G, void* grad, int32_t* status,
                                        int32_t* iterations, void* stream);

/* Creates (and keeps) the solver as sinkgrad_solve would and checks that it runs on `device`
 * in `dtype`: an unknown name, a bad option or a device or precision the solver has no variant
 * for in this build is an error with the registry's message, before any data is touched.
 * Whether a GPU is present is checked by the call that uses it (sinkgrad_has_cuda says only
 * whether the library was built with CUDA). */
SINKGRAD_C_API int sinkgrad_check_solver(const char* solver, const char* options, int device,
                                         int dtype);

/* Loads a solver plugin (a shared library built against sinkgrad/plugin.hpp) into the
 * registry that sinkgrad_solve uses; loading the same file again is not an error.
 * SINKGRAD_PLUGIN_PATH (files and directories, colon-separated) is honoured as the command-line
 * tool honours it: its plugins are loaded by the first call that looks a solver up (a solve,
 * sinkgrad_check_solver, sinkgrad_solver_names) or loads a plugin, before anything else; when
 * one is refused, that call and every later one of them fails with the loader's reason. Before the
 * library is mapped, the file is checked: a regular file whose ELF header matches this machine
 * (class, byte order, processor, a shared object) and whose program headers, segments and
 * section headers lie within the file (a truncated library is refused, not mapped: that would
 * kill the process with SIGBUS); a file or directory writable by every user gives a warning on
 * stderr. The solver and option names it registers are checked (printable ASCII, no blanks or
 * separators, not "all", no option declared twice); a refusal names the file and the name.
 * `path` is a NUL-terminated string and ends at its first NUL: a caller holding a path with
 * its length (Python bytes, a C++ string) calls sinkgrad_load_plugin_n instead, which refuses
 * a path with a NUL inside its `length` bytes (0 to 65536) rather than loading another file. */
SINKGRAD_C_API int sinkgrad_load_plugin(const char* path);
SINKGRAD_C_API int sinkgrad_load_plugin_n(const char* path, int64_t length);

/* The registered solvers' names, sorted and comma-separated (the built-ins, SINKGRAD_PLUGIN_PATH's
 * and those of sinkgrad_load_plugin), in *names: this thread's text, valid until its next call. */
SINKGRAD_C_API int sinkgrad_solver_names(const char** names);

/* 1 when this library was built with the CUDA variants, 0 otherwise. */
SINKGRAD_C_API int sinkgrad_has_cuda(void);

/* The eps a forward convention adds when none is given, written to *eps: the library's one table
 * of them, which the Python layer reads instead of keeping its own (NULL means columns_first,
 * as below). */
SINKGRAD_C_API int sinkgrad_default_eps(const char* convention, double* eps);

/* The same two for a chosen forward convention (docs/math.md, "Forward conventions"):
 * convention "columns_first" (what the two above run), "rows_first", "tilekernels",
 * "megatron_main", "magi2", "mhc_triton" or an alias ("maxtext", "megatron_dev": tilekernels)
 * (NULL means columns_first); eps, finite and >= 0, is the eps of every normalising denominator
 * (sum + eps, or max(sum, eps) for megatron_main) and of the base where it has one (the
 * conventions' own values: sinkgrad_default_eps). An unknown name or a bad eps is an error naming
 * what is allowed. The solve must be
 * told the convention that produced R: unrolled differentiates it, the plain systems take its exact
 * side. */
SINKGRAD_C_API int sinkgrad_forward_convention(int device, int dtype, int64_t batch, int n, int T,
                                               const char* convention, double eps,
                                               const void* logits, void* R);
SINKGRAD_C_API int sinkgrad_solve_convention(const char* solver, const char* options, int device,
                                             int dtype, int64_t batch, int n, int T,
                                             const char* convention, double eps, const void* logits,
                                             const void* R, const void* G, void* grad,
                                             int32_t* status, int32_t* iterations);
/* The stream-ordered forms of these two (see sinkgrad_forward_async). */
SINKGRAD_C_API int sinkgrad_forward_convention_async(int dtype, int64_t batch, int n, int T,
                                                     const char* convention, double eps,
                                                     const void* logits, void* R, void* stream);
SINKGRAD_C_API int sinkgrad_solve_convention_async(const char* solver, const char* options,
                                                   int dtype, int64_t batch, int n, int T,
                                                   const char* convention, double eps,
                                                   const void* logits, const void* R, const void* G,
                                                   void* grad, int32_t* status, int32_t* iterations,
                                                   void* stream);

/* sinkgrad_solve_convention and its stream-ordered form with the per-matrix diagnostics of
 * sinkgrad::SolveDiagnostics (docs/math.md, "Diagnostics of a solve"): B entries each, any of
 * them NULL when not wanted, in the memory of the other pointers; row_violation,
 * column_violation and relative_residual of the element type `dtype` names (max |r_i - 1|,
 * max |c_j - 1| of R; CG's final ||r|| / ||b||, NaN for solvers without CG), zero_entries int32
 * (the entries of R that are exactly 0). */
SINKGRAD_C_API int sinkgrad_solve_diagnosed(const char* solver, const char* options, int device,
                                            int dtype, int64_t batch, int n, int T,
                                            const char* convention, double eps, const void* logits,
                                            const void* R, const void* G, void* grad,
                                            int32_t* status, int32_t* iterations,
                                            void* row_violation, void* column_violation,
                                            void* relative_residual, int32_t* zero_entries);
SINKGRAD_C_API int sinkgrad_solve_diagnosed_async(
    const char* solver, const char* options, int dtype, int64_t batch, int n, int T,
    const char* convention, double eps, const void* logits, const void* R, const void* G,
    void* grad, int32_t* status, int32_t* iterations, void* row_violation, void* column_violation,
    void* relative_residual, int32_t* zero_entries, void* stream);

/* The exact fallback (on_failure="unrolled" of the PyTorch layer): every matrix whose status,
 * as a solve wrote it, is not a success (neither 0 ok nor 5 fallback; any other value, codes no
 * solve writes included, counts as a failure) gets the unrolled solver's gradient in grad,
 * computed for those matrices only, with the bits unrolled gives it; status and iterations are
 * left as they are. logits and G are required, R is not read; convention and eps as for
 * sinkgrad_solve_convention. On SINKGRAD_C_CUDA every pointer is device memory and the call
 * waits; the _async form launches on `stream` and does not (the matrices to replace are counted
 * on the device). */
SINKGRAD_C_API int sinkgrad_replace_failures(int device, int dtype, int64_t batch, int n, int T,
                                             const char* convention, double eps, const void* logits,
                                             const void* G, void* grad, const int32_t* status);
SINKGRAD_C_API int sinkgrad_replace_failures_async(int dtype, int64_t batch, int n, int T,
                                                   const char* convention, double eps,
                                                   const void* logits, const void* G, void* grad,
                                                   const int32_t* status, void* stream);

/* The PyTorch layer's backward in one call: sinkgrad_solve_diagnosed (or its _async form),
 * then, when replace is 1, sinkgrad_replace_failures (its _async form) on the same arrays: the
 * on_failure="unrolled" policy without a second call; replace 0 leaves the failed matrices as
 * the solver wrote them. With replace 1 the logits are required (checked before anything runs).
 * On SINKGRAD_C_CUDA the waiting form waits for the solve and the fallback each; the _async
 * form waits for neither. */
SINKGRAD_C_API int sinkgrad_backward(const char* solver, const char* options, int device, int dtype,
                                     int64_t batch, int n, int T, const char* convention,
                                     double eps, const void* logits, const void* R, const void* G,
                                     void* grad, int32_t* status, int32_t* iterations,
                                     void* row_violation, void* column_violation,
                                     void* relative_residual, int32_t* zero_entries, int replace);
SINKGRAD_C_API int sinkgrad_backward_async(const char* solver, const char* options, int dtype,
                                           int64_t batch, int n, int T, const char* convention,
                                           double eps, const void* logits, const void* R,
                                           const void* G, void* grad, int32_t* status,
                                           int32_t* iterations, void* row_violation,
                                           void* column_violation, void* relative_residual,
                                           int32_t* zero_entries, int replace, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* SINKGRAD_C_H */
