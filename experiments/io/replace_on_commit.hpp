#pragma once
// All-or-nothing output files: write under a temporary name in the destination's directory,
// then rename into place on commit(). Without commit() (an error, an exception) the temporary
// file is removed, so the destination is either the complete new file or left untouched.
//
//   ReplaceOnCommit output("out.h5");
//   { auto file = h5::File::create(output.temporary_path(), h5::File::Exists::replace); ... }
//   output.commit();   // after every handle on the temporary file is closed

#include <string>

namespace sinkgrad {

class ReplaceOnCommit {
 public:
  // Creates the (empty) temporary file; throws Error when the directory is not writable or
  // the destination is a directory.
  explicit ReplaceOnCommit(std::string destination);
  ~ReplaceOnCommit();
  ReplaceOnCommit(const ReplaceOnCommit&) = delete;
  ReplaceOnCommit& operator=(const ReplaceOnCommit&) = delete;

  const std::string& temporary_path() const { return temporary_; }
  const std::string& destination() const { return destination_; }

  // Renames the temporary file to the destination (atomic within one file system).
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  bool committed_ = false;
};

}  // namespace sinkgrad
