#pragma once
// All-or-nothing output files: write under a temporary name in the destination's directory,
// then rename into place on commit(). Without commit() (an error, an exception) the temporary
// file is removed, so the destination is either the complete new file or left untouched.
//
//   ReplaceOnCommit output("out.h5");
//   { auto file = h5::File::create(output.temporary_path(), h5::File::Exists::replace); ... }
//   output.commit();   // after every handle on the temporary file is closed

#include <string>
#include <vector>

namespace sinkgrad {

class ReplaceOnCommit {
 public:
  // Applies the output policy (output_policy.hpp: regular files only, never one of `inputs`,
  // symbolic links written through), then creates the (empty) temporary file; throws Error
  // when the policy refuses the destination or its directory is not writable.
  explicit ReplaceOnCommit(std::string destination, const std::vector<std::string>& inputs = {});
  ~ReplaceOnCommit();
  ReplaceOnCommit(const ReplaceOnCommit&) = delete;
  ReplaceOnCommit& operator=(const ReplaceOnCommit&) = delete;

  const std::string& temporary_path() const { return temporary_; }
  const std::string& destination() const { return destination_; }

  // Renames the temporary file to the destination (atomic within one file system), after
  // checking the policy again (the destination may have changed while the output was made).
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  std::vector<std::string> inputs_;
  bool committed_ = false;
};

}  // namespace sinkgrad
