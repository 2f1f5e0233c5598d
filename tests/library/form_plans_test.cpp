// The forms the CPU and CUDA drivers run (forward/forward_form.hpp,
// solvers/unrolled/unrolled_form.hpp), written out per convention, eps and n: the team forms up
// to the cap a driver passes, transposed exactly where the last step normalises columns, the
// seeds' team for columns_first and rows_first without eps only; above the cap one matrix at a
// time, the default forward's own loop for columns_first without eps only; the presets without
// a team form one matrix at a time at every n.

#include <gtest/gtest.h>

#include "forward/forward_form.hpp"
#include "solvers/unrolled/unrolled_form.hpp"

namespace sinkgrad::testing {
namespace {

struct Case {
  ForwardSpec spec;
  bool seeds;       // the seeds' team form (columns_first or rows_first, no eps)
  bool transposed;  // the last step normalises columns
  bool default_forward;
};

const Case cases[] = {
    {{ForwardConvention::columns_first, 0}, true, false, true},
    {{ForwardConvention::rows_first, 0}, true, true, false},
    {{ForwardConvention::columns_first, 1e-6}, false, false, false},
    {{ForwardConvention::rows_first, 1e-8}, false, true, false},
    {{ForwardConvention::tilekernels, 1e-6}, false, true, false},
    {{ForwardConvention::tilekernels, 0}, false, true, false},
};

TEST(FormPlans, ForwardByConventionAndSize) {
  for (const Case& c : cases)
    for (const int cap : {64, 1024})
      for (const int n : {1, 4, cap, cap + 1}) {
        SCOPED_TRACE(describe(c.spec) + ", n " + std::to_string(n) + ", cap " +
                     std::to_string(cap));
        const ForwardPlan plan = forward_plan(c.spec, n, cap);
        if (n > cap) {
          EXPECT_EQ(plan.form,
                    c.default_forward ? ForwardForm::seeds_matrix : ForwardForm::convention_matrix);
          EXPECT_FALSE(plan.transposed);
        } else {
          EXPECT_EQ(plan.form, c.seeds ? ForwardForm::seeds_team : ForwardForm::convention_team);
          EXPECT_EQ(plan.transposed, c.transposed);
        }
      }
}

TEST(FormPlans, UnrolledByConventionAndSize) {
  for (const Case& c : cases)
    for (const int n : {1, 4, 1024, 1025}) {
      SCOPED_TRACE(describe(c.spec) + ", n " + std::to_string(n));
      const UnrolledPlan plan = unrolled_plan(c.spec, n, 1024);
      if (n > 1024) {
        EXPECT_EQ(plan.form, UnrolledForm::log_domain);
        EXPECT_FALSE(plan.transposed);
      } else {
        EXPECT_EQ(plan.form, c.seeds ? UnrolledForm::seeds_team : UnrolledForm::convention_team);
        EXPECT_EQ(plan.transposed, c.transposed);
      }
    }
}

// The presets without a team form (a shifted exp, |M|, max(sum, eps)) run one matrix at a time
// at every n, untransposed; the exact side still comes from their data.
TEST(FormPlans, PresetsWithoutATeamFormRunOneMatrixAtATime) {
  for (const auto& [name, columns_exact] :
       {std::pair{"megatron_main", true}, std::pair{"magi2", false},
        std::pair{"mhc_triton", true}}) {
    const ForwardSpec spec = make_forward_spec(name);
    EXPECT_FALSE(has_team_form(spec.convention)) << name;
    EXPECT_EQ(last_step_normalises_columns(spec.convention), columns_exact) << name;
    for (const int n : {1, 4, 64, 1024, 1025}) {
      const ForwardPlan forward = forward_plan(spec, n, 1024);
      EXPECT_EQ(forward.form, ForwardForm::convention_matrix) << name << " n " << n;
      EXPECT_FALSE(forward.transposed);
      const UnrolledPlan unrolled = unrolled_plan(spec, n, 1024);
      EXPECT_EQ(unrolled.form, UnrolledForm::log_domain) << name << " n " << n;
      EXPECT_FALSE(unrolled.transposed);
    }
  }
  for (const char* name : {"columns_first", "rows_first", "tilekernels", "maxtext", "megatron_dev"})
    EXPECT_TRUE(has_team_form(make_forward_spec(name).convention)) << name;
}

}  // namespace
}  // namespace sinkgrad::testing
