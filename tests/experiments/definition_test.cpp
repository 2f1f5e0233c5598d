// Study definitions: a valid one is read completely, and every kind of mistake is rejected
// by parse_definition (before anything is computed) with a message naming the key and what
// it accepts.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/solver_registry.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/sweep.hpp"

namespace sinkgrad::study {
namespace {

const std::string base = R"([inputs]
n = 4
batch = 2
logits = uniform(0, 4)
[forward]
T = 2
[solvers]
use = cg_corrected
)";

StudyDefinition parse(const std::string& text) {
  return parse_definition(text, SINKGRAD_SOURCE_DIR, SolverRegistry::global(), "test.ini");
}

// The message of the DefinitionError that parsing `text` throws ("" when it does not throw).
std::string rejection(const std::string& text) {
  try {
    parse(text);
  } catch (const DefinitionError& error) {
    return error.what();
  }
  return "";
}

// Replaces the line starting with `key =` in the base definition (or appends `line`).
std::string with(const std::string& key, const std::string& line) {
  std::string text = base;
  const auto at = text.find("\n" + key + " =");
  if (at == std::string::npos) return text + line + "\n";
  const auto end = text.find('\n', at + 1);
  return text.replace(at + 1, end - at - 1, line);
}

// A known section, or a registered solver's, may be left without keys.
TEST(Definition, KnownSectionsWithoutKeysAreAccepted) {
  EXPECT_EQ(rejection(base + "[measure]\n[solver.cg_corrected]  # defaults\n"), "");
}

TEST(Definition, ReadsEverySection) {
  const StudyDefinition d = parse(R"(# a comment
[study]
name = demo
description = every section
[inputs]
n = 4, 8
batch = 16
logits = uniform(0, 4), normal(2), near_permutation(6, 0.5), file(data/logits.h5, peaked_n8)
seed = 1, 2
[forward]
T = 1, 5
precision = float32, float64
[solvers]
use = all
[solver.cg_corrected]
max_iterations = 2, 4, auto
[solver.cg_plain]
system = schur, block
[run]
devices = cpu
[references]
converged_tolerance = 1e-12
converged_max_T = 4096
[measure]
iterate_errors = false
timing_repeats = 5
)");
  EXPECT_EQ(d.name, "demo");
  EXPECT_EQ(d.sizes, (std::vector<int>{4, 8}));
  EXPECT_EQ(d.batch, 16);
  ASSERT_EQ(d.logits.size(), 4u);
  EXPECT_EQ(d.logits[0].text, "uniform(0, 4)");
  EXPECT_EQ(d.logits[1].text, "normal(2)");
  EXPECT_EQ(d.logits[2].text, "near_permutation(6, 0.5)");
  EXPECT_TRUE(d.logits[3].from_file());
  EXPECT_EQ(d.logits[3].dataset, "peaked_n8");
  EXPECT_EQ(d.seeds.size(), 2u);
  EXPECT_EQ(d.iterations, (std::vector<int>{1, 5}));
  EXPECT_EQ(d.precisions.size(), 2u);
  EXPECT_EQ(d.solvers.size(), SolverRegistry::global().names().size());
  for (const SolverSweep& s : d.solvers) {
    if (s.name == "cg_corrected") {
      EXPECT_EQ(s.option_sets.size(), 3u);
    }
    if (s.name == "cg_plain") {
      EXPECT_EQ(s.option_sets.size(), 2u);
    }
    for (const auto& options : s.option_sets)  // complete: every declared option has a value
      EXPECT_EQ(options.size(), SolverRegistry::global().info(s.name).options.size());
  }
  EXPECT_EQ(d.devices, (std::vector<std::string>{"cpu"}));
  EXPECT_EQ(d.converged_tolerance, 1e-12);
  EXPECT_EQ(d.converged_max_iterations, 4096);
  EXPECT_FALSE(d.iterate_errors);
  EXPECT_EQ(d.timing_repeats, 5);

  // The sweep: generated sources for each n, the file source once (n from the file).
  const Sweep sweep = expand_sweep(d, {Device::cpu});
  EXPECT_EQ(sweep.inputs.size(), (3 * 2 + 1) * 2u);
  std::size_t configurations = 0;
  for (const SolverSweep& s : d.solvers) configurations += s.option_sets.size();
  EXPECT_EQ(sweep.runs.size(), sweep.inputs.size() * 2 * 2 * configurations);
  std::set<std::string> ids;
  for (const RunSpec& run : sweep.runs) ids.insert(run.id);
  EXPECT_EQ(ids.size(), sweep.runs.size()) << "run ids must be unique";
}

TEST(Definition, DefaultsWhenOptionalKeysAreLeftOut) {
  const StudyDefinition d = parse(base);
  EXPECT_EQ(d.seeds, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(d.precisions, (std::vector<Precision>{Precision::float64}));
  EXPECT_EQ(d.devices, (std::vector<std::string>{"default"}));
  EXPECT_EQ(d.converged_tolerance, 1e-13);
  EXPECT_TRUE(d.iterate_errors);
}

TEST(Definition, RunIdsDoNotDependOnListOrder) {
  const auto ids = [](const std::string& text) {
    std::set<std::string> out;
    for (const RunSpec& run : expand_sweep(parse(text), {Device::cpu}).runs) out.insert(run.id);
    return out;
  };
  const std::string a = with("n", "n = 4, 8") + "[solver.cg_corrected]\nmax_iterations = 2, 4\n";
  const std::string b = with("n", "n = 8, 4") + "[solver.cg_corrected]\nmax_iterations = 4, 2\n";
  EXPECT_EQ(ids(a), ids(b));
  EXPECT_EQ(ids(a).size(), 4u);
}

struct BadDefinition {
  const char* what;
  std::string text;
  std::vector<std::string> message_parts;
};

TEST(Definition, EveryMistakeIsRejectedWithItsMessage) {
  const std::vector<BadDefinition> cases = {
      {"unknown key",
       with("n", "sizes = 4"),
       {"[inputs] sizes", "unknown key 'sizes'", "allowed keys: batch, logits, n, seed"}},
      {"unknown section", base + "[inptus]\nn = 4\n", {"unknown section [inptus]", "[inputs]"}},
      {"unknown section without keys",
       base + "[inptus]  # typo\n",
       {"unknown section [inptus]", "[inputs]"}},
      {"unknown solver section without keys",
       base + "[solver.cg_corected]\n",
       {"[solver.cg_corected]: unknown solver 'cg_corected'", "cg_corrected"}},
      {"key outside any section", "n = 4\n" + base, {"'n' is outside any section"}},
      {"wrong type: text for an integer",
       with("n", "n = four"),
       {"[inputs] n", "'four' is not an integer", "integers >= 1"}},
      {"an integer beyond 64 bits",
       with("n", "n = 4\nseed = 9223372036854775808"),
       {"[inputs] seed", "'9223372036854775808' is beyond the largest integer"}},
      {"wrong type: fraction for an integer",
       with("T", "T = 2.5"),
       {"[forward] T", "'2.5' is not an integer"}},
      {"integer out of range", with("batch", "batch = 0"), {"[inputs] batch", "below 1"}},
      {"several values for a single-valued key",
       with("batch", "batch = 2, 4"),
       {"[inputs] batch", "takes one value"}},
      {"empty sweep: n", with("n", "n ="), {"[inputs] n", "the list is empty"}},
      {"empty sweep: T", with("T", "T = "), {"[forward] T", "the list is empty"}},
      {"empty sweep: solvers", with("use", "use ="), {"[solvers] use", "the list is empty"}},
      {"empty sweep: a solver option",
       base + "[solver.cg_corrected]\nmax_iterations =\n",
       {"[solver.cg_corrected] max_iterations", "empty"}},
      {"missing key", with("T", ""), {"[forward] T", "missing"}},
      {"listed twice", with("n", "n = 4, 4"), {"[inputs] n", "'4' is listed twice"}},
      {"key given twice", base + "[inputs]\nseed = 3\nseed = 4\n", {"[inputs] seed", "twice"}},
      {"unknown solver",
       with("use", "use = cg_fancy"),
       {"[solvers] use", "unknown solver 'cg_fancy'", "cg_corrected", "unrolled"}},
      {"unknown solver section",
       base + "[solver.cg_fancy]\nmax_iterations = 2\n",
       {"[solver.cg_fancy] max_iterations", "unknown solver 'cg_fancy'"}},
      {"unknown option",
       base + "[solver.cg_corrected]\nmax_iter = 2\n",
       {"[solver.cg_corrected] max_iter", "unknown option 'max_iter'", "max_iterations"}},
      {"option value of the wrong type",
       base + "[solver.cg_corrected]\nmax_iterations = 0\n",
       {"[solver.cg_corrected] max_iterations", "'0' is not an integer from 1 to 1000000 or auto"}},
      {"option choice not offered",
       with("use", "use = cg_plain") + "[solver.cg_plain]\n"
                                       "system = dense\n",
       {"[solver.cg_plain] system", "'dense' is not one of: schur, block"}},
      {"options for a solver not in use",
       base + "[solver.cg_plain]\nsystem = block\n",
       {"[solver.cg_plain] system", "[solvers] use does not list"}},
      {"unknown distribution",
       with("logits", "logits = cauchy(1)"),
       {"[inputs] logits", "unknown distribution 'cauchy'", "uniform(low, high)"}},
      {"distribution without arguments",
       with("logits", "logits = uniform"),
       {"[inputs] logits", "'uniform' is not a distribution"}},
      {"distribution arguments",
       with("logits", "logits = normal(1, 2)"),
       {"[inputs] logits", "takes 1 argument"}},
      {"distribution argument of the wrong type",
       with("logits", "logits = uniform(0, x)"),
       {"[inputs] logits", "'x' is not a finite number"}},
      {"empty uniform range", with("logits", "logits = uniform(4, 0)"), {"needs low < high"}},
      {"missing logits file",
       with("logits", "logits = file(no/such.h5, logits)"),
       {"[inputs] logits", "no/such.h5"}},
      {"missing dataset in the logits file",
       with("logits", "logits = file(data/logits.h5, nope)"),
       {"[inputs] logits", "nope", "mhc_like_n4"}},
      {"unknown precision",
       with("T", "T = 2\nprecision = float16"),
       {"[forward] precision", "'float16' is not a precision", "float32, float64"}},
      {"unknown device",
       base + "[run]\ndevices = tpu\n",
       {"[run] devices", "'tpu' is not a device", "cpu, cuda, default"}},
      {"boolean",
       base + "[measure]\niterate_errors = maybe\n",
       {"[measure] iterate_errors", "'maybe' is not a boolean"}},
      {"timing repeats",
       base + "[measure]\ntiming_repeats = 0\n",
       {"[measure] timing_repeats", "below 1"}},
      {"tolerance",
       base + "[references]\nconverged_tolerance = -1\n",
       {"[references] converged_tolerance", "must be > 0"}},
      {"unknown forward convention",
       with("T", "T = 2\nconvention = rows_first, sinkhorn"),
       {"[forward] convention", "'sinkhorn' is not a forward convention",
        "columns_first, rows_first, tilekernels"}},
      {"convention listed twice",
       with("T", "T = 2\nconvention = tilekernels, tilekernels"),
       {"[forward] convention", "listed twice"}},
      {"negative eps",
       with("T", "T = 2\neps = 0, -1e-6"),
       {"[forward] eps", "'-1e-6' is negative"}},
      {"eps not a finite number",
       with("T", "T = 2\neps = inf"),
       {"[forward] eps", "'inf' is not a finite number"}},
      {"syntax", base + "this line has no equals sign\n", {"syntax error"}},
  };
  for (const BadDefinition& c : cases) {
    const std::string message = rejection(c.text);
    ASSERT_FALSE(message.empty()) << c.what << ": accepted:\n" << c.text;
    EXPECT_NE(message.find("test.ini"), std::string::npos) << c.what << ": " << message;
    for (const std::string& part : c.message_parts)
      EXPECT_NE(message.find(part), std::string::npos)
          << c.what << ": '" << part << "' missing from: " << message;
  }
}

// [forward] convention x eps: each convention with every eps (its own default when none is
// given), swept like T; the default forward leaves the run keys as they were.
TEST(Definition, ForwardConventionsAreSwept) {
  const StudyDefinition plain = parse(base);
  ASSERT_EQ(plain.forwards.size(), 1u);
  EXPECT_TRUE(is_default_forward(plain.forwards[0]));
  const Sweep plain_sweep = expand_sweep(plain, {Device::cpu});
  EXPECT_EQ(plain_sweep.runs[0].key.find("forward"), std::string::npos) << plain_sweep.runs[0].key;

  const StudyDefinition defaults = parse(with("T", "T = 2\nconvention = rows_first, tilekernels"));
  ASSERT_EQ(defaults.forwards.size(), 2u);
  EXPECT_EQ(defaults.forwards[0].convention, ForwardConvention::rows_first);
  EXPECT_EQ(defaults.forwards[0].eps, 0.0);
  EXPECT_EQ(defaults.forwards[1].convention, ForwardConvention::tilekernels);
  EXPECT_EQ(defaults.forwards[1].eps, 1e-6);

  const StudyDefinition d =
      parse(with("T", "T = 2, 3\nconvention = columns_first, tilekernels\neps = 0, 1e-4"));
  ASSERT_EQ(d.forwards.size(), 4u);
  const Sweep sweep = expand_sweep(d, {Device::cpu});
  ASSERT_EQ(sweep.runs.size(), 8u);
  std::set<std::string> keys;
  for (const RunSpec& run : sweep.runs) keys.insert(run.key);
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_EQ(keys.count("n=4 batch=2 logits=uniform(0, 4) seed=1 T=2 forward=tilekernels "
                       "eps=1e-04 precision=float64 solver=cg_corrected options={floor=auto "
                       "max_iterations=auto project=true tolerance=auto} device=cpu"),
            1u);
  EXPECT_EQ(keys.count("n=4 batch=2 logits=uniform(0, 4) seed=1 T=3 precision=float64 "
                       "solver=cg_corrected options={floor=auto max_iterations=auto project=true "
                       "tolerance=auto} device=cpu"),
            1u);
}

TEST(Definition, SplitListKeepsParenthesesTogether) {
  EXPECT_EQ(split_list("uniform(0, 4), normal(2) ,x"),
            (std::vector<std::string>{"uniform(0, 4)", "normal(2)", "x"}));
  EXPECT_TRUE(split_list("  ").empty());
  EXPECT_EQ(split_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
}

TEST(DefinitionEntries, CanonicalFormIgnoresLayoutAndNamesTheFirstDifference) {
  EXPECT_EQ(canonical_value(" 1 ,2,  3 "), "1, 2, 3");
  EXPECT_EQ(canonical_value("uniform( 0 ,4), file(a  b.h5,x)"), "uniform(0, 4), file(a b.h5, x)");
  const Entries a = read_entries("[forward]\nT = 1, 2 # comment\n[inputs]\nn=4\n", "a");
  const Entries b = read_entries("# header\n[inputs]\n n = 4\n\n[forward]\nT=1,2\n", "b");
  EXPECT_EQ(first_difference(a, b), "");
  EXPECT_EQ(read_entries(canonical_text(a), "canonical"), canonical_entries(a));
  Entries c = b;
  c["forward.T"] = "1, 3";
  EXPECT_EQ(first_difference(a, c), "[forward] T: '1, 2' in the log, '1, 3' now");
  c.erase("forward.T");
  EXPECT_EQ(first_difference(a, c), "[forward] T: '1, 2' in the log, not given now");
}

TEST(DefinitionEntries, OverridesReplaceKeysAndUnknownOnesAreRefused) {
  const std::string text =
      "[inputs]\nn = 4\nbatch = 2\nlogits = uniform(0, 4)\n[forward]\nT = 2\n[solvers]\n"
      "use = cg_corrected\n";
  const StudyDefinition definition = parse_definition(text, "", SolverRegistry::global(), "o.ini",
                                                      {"forward.T=1, 5", "inputs.batch=3"});
  EXPECT_EQ(definition.iterations, (std::vector<int>{1, 5}));
  EXPECT_EQ(definition.batch, 3);
  EXPECT_EQ(definition.entries.at("forward.T"), "1, 5");
  try {
    parse_definition(text, "", SolverRegistry::global(), "o.ini", {"forward.steps=3"});
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const DefinitionError& error) {
    EXPECT_NE(std::string(error.what()).find("override 'forward.steps=3'"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(parse_override("T=3"), DefinitionError);
  EXPECT_THROW(parse_override("forward.T"), DefinitionError);
  EXPECT_EQ(parse_override(" forward.T = 1,2 "),
            (std::pair<std::string, std::string>{"forward.T", "1,2"}));
}

}  // namespace
}  // namespace sinkgrad::study
