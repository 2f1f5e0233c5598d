#include "experiments/study/log_descriptions.hpp"

#include "core/error.hpp"
#include "core/forward_spec.hpp"

namespace sinkgrad::study {

const std::vector<GroupDescription>& attribute_descriptions() {
  static const std::vector<GroupDescription> groups{
      {"root",
       "/",
       {{"schema", "", "always 'sinkgrad-study-log'"},
        {"schema_version", "", "version of the schema in docs/experiments.md"},
        {"tool_version", "", "sinkgrad version that created the log"},
        {"definition", "", "the definition file's full text, as read"},
        {"study", "",
         "the parsed definition after the command-line overrides (INI); --resume "
         "compares it"},
        {"overrides", "", "command-line overrides, one section.key=value a line"},
        {"definition_path", "", "the definition's path as given on the command line"},
        {"study_name", "", "[study] name"},
        {"started", "ISO 8601 UTC", "when the log was created"},
        {"host", "", "host name"},
        {"devices", "", "the devices the sweep ran on, with CPU threads and GPU name"}}},
      {"inputs",
       "/inputs/input_*",
       {{"key", "", "the input's parameters as text; the group name hashes it"},
        {"n", "", "matrix size"},
        {"batch", "matrices", "matrices in the batch"},
        {"logits_source", "", "where the logits come from, e.g. uniform(0, 4)"},
        {"seed", "", "random seed of the logits and of grad_output"},
        {"complete", "", "1 once the group is fully written"}}},
      {"references_T",
       "/references/input_*/<precision>/T_<T>",
       {{"T", "iterations", "forward iterations of the exact (unrolled) reference"},
        {"complete", "", "1 once the group is fully written"}}},
      {"references_converged",
       "/references/input_*/<precision>/converged",
       {{"T", "iterations", "forward iterations until the converged forward met the tolerance"},
        {"violation_max", "", "max over the batch of max_j |c_j - 1| after those iterations"},
        {"reached", "", "1 if every matrix met [references] converged_tolerance"},
        {"complete", "", "1 once the group is fully written"}}},
      {"runs",
       "/runs/run_*",
       {{"key", "", "the run's parameters as text; the group name hashes it"},
        {"input", "", "the /inputs group of the run's input"},
        {"n", "", "matrix size"},
        {"batch", "matrices", "matrices in the batch"},
        {"logits_source", "", "where the logits come from"},
        {"seed", "", "random seed of the input"},
        {"T", "iterations", "forward iterations"},
        {"precision", "", "float32 or float64: the forward's and the solver's arithmetic"},
        {"solver", "", "backward solver name"},
        {"options", "", "every option of the solver, key=value separated by blanks"},
        {"option.*", "", "one option's value"},
        {"device", "", "cpu or cuda"},
        {"forward", "", "forward convention: " + forward_convention_names()},
        {"eps", "", "the forward's epsilon, of every normalising denominator"},
        {"started", "ISO 8601 UTC", "when the run started"},
        {"wall_seconds", "s", "the whole run: forward, solves, metrics, iterate re-solves"},
        {"forward_violation_max", "",
         "max over the batch of the inexact marginal's max |sum - 1| after T steps"},
        {"forward_violation_median", "",
         "median over the batch of the inexact marginal's max |sum - 1|"},
        {"converged_T", "iterations", "T of the converged reference"},
        {"row_violation_max", "",
         "max over the batch of max_i |r_i - 1|, r = R 1, of the R the solver received"},
        {"row_violation_median", "", "median over the batch of max_i |r_i - 1|"},
        {"column_violation_max", "", "max over the batch of max_j |c_j - 1|, c = R^T 1"},
        {"column_violation_median", "", "median over the batch of max_j |c_j - 1|"},
        {"final_residual_max", "relative",
         "max over the batch of CG's final ||r|| / ||b|| (NaN: the solver has no CG)"},
        {"final_residual_median", "relative", "median over the batch of CG's final ||r|| / ||b||"},
        {"saturated_matrices", "matrices", "matrices with an entry of R exactly 0 (exp underflow)"},
        {"solve_seconds", "s", "median time of the timed solves of the whole batch"},
        {"solve_seconds_min", "s", "fastest timed solve of the whole batch"},
        {"timing_repeats", "", "number of timed solves"},
        {"timing_method", "", "how the solves were timed"},
        {"iterations_mean", "iterations", "mean over the batch of the solver's iterations"},
        {"iterations_max", "iterations", "max over the batch of the solver's iterations"},
        {"status_counts", "matrices", "matrices per solve status, in status_names' order"},
        {"status_names", "", "the status names, comma-separated"},
        {"complete", "", "1 once the group is fully written"}}},
      {"runs_errors",
       "/runs/run_*/error_vs_unrolled, /runs/run_*/error_vs_converged",
       {{"mean_abs", "", "mean over every entry of |g - ref|"},
        {"max_abs", "", "max over every entry of |g - ref|"},
        {"mean_rel", "", "mean over every entry of |g - ref| / (|ref| + 1e-12)"},
        {"max_rel", "", "max over every entry of |g - ref| / (|ref| + 1e-12)"},
        {"frobenius_median", "relative", "median over the batch of ||g - ref||_F / ||ref||_F"},
        {"frobenius_p95", "relative", "95th percentile of ||g - ref||_F / ||ref||_F"},
        {"frobenius_max", "relative", "max over the batch of ||g - ref||_F / ||ref||_F"},
        {"measured", "matrices", "matrices with a finite gradient (the others are left out)"}}},
  };
  return groups;
}

const std::vector<FieldDescription>& dataset_descriptions() {
  static const std::vector<FieldDescription> datasets{
      {"logits", "", "(B, n, n) logits M as the runs received them, before rounding"},
      {"grad_output", "", "(B, n, n) upstream gradient G = dL/dR"},
      {"grad", "", "(B, n, n) reference gradient dL/dM"},
      {"iterations", "iterations", "(B,) the solver's iterations per matrix (0: not iterative)"},
      {"frobenius", "relative",
       "(B,) per matrix ||g - ref||_F / ||ref||_F (NaN: gradient not finite)"},
      {"residual_median", "", "(K+1,) median over the batch of the CG residual ||r_k||"},
      {"residual_max", "", "(K+1,) max over the batch of the CG residual ||r_k||"},
      {"relative_residual_median", "relative", "(K+1,) median of ||r_k|| / ||r_0||"},
      {"relative_residual_max", "relative", "(K+1,) max of ||r_k|| / ||r_0||"},
      {"iterate_error_vs_unrolled_median", "relative",
       "(K,) median relative Frobenius error of the k-th CG iterate, k = 1..K, against the "
       "unrolled reference"},
      {"iterate_error_vs_converged_median", "relative",
       "(K,) the same against the converged reference"},
  };
  return datasets;
}

void write_descriptions(const h5::File& file) {
  const h5::Group root = file.require_group("descriptions");
  h5::write_string_attribute(root, "about",
                             "attribute NAME of /descriptions/<kind> describes attribute NAME "
                             "of the groups named in its attribute 'where'; NAME.unit is its "
                             "unit. Datasets carry the attributes description and unit.");
  for (const GroupDescription& group : attribute_descriptions()) {
    const h5::Group described_group = root.require_group(group.kind);
    h5::write_string_attribute(described_group, "where", group.where);
    for (const FieldDescription& field : group.attributes) {
      h5::write_string_attribute(described_group, field.name, field.description);
      h5::write_string_attribute(described_group, field.name + ".unit", field.unit);
    }
  }
}

const h5::Dataset& described(const h5::Dataset& dataset) {
  const std::string& path = dataset.path();
  const std::string name = path.substr(path.rfind('/') + 1);
  for (const FieldDescription& field : dataset_descriptions())
    if (field.name == name) {
      h5::write_string_attribute(dataset, "description", field.description);
      h5::write_string_attribute(dataset, "unit", field.unit);
      return dataset;
    }
  throw Error("study log: dataset '" + path + "' has no description (log_descriptions.cpp)");
}

}  // namespace sinkgrad::study
