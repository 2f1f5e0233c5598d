#pragma once
// The other files an input reads from: a dataset reached through an HDF5 external link, or a
// virtual dataset (VDS), reads bytes of another file. Before an output is opened, those files
// are found the way HDF5 finds them and checked, so that
//   - the output is never one of them (it would be replaced while it is being read),
//   - none is a FIFO or device (HDF5 would block on it forever),
//   - none is missing, and neither is a VDS's source dataset (HDF5 would read its fill value
//     instead, silently).
// Nothing here opens a link or a VDS source before its file has been checked.
//
// Where HDF5 1.10 looks for a linked file (H5Lcreate_external, H5Pset_virtual): an absolute
// name first as it is; then its last component (a relative name as it is) under each prefix of
// HDF5_EXT_PREFIX (links) or HDF5_VDS_PREFIX (VDS), ':'-separated, "${ORIGIN}" meaning the
// linking file's directory; then in the linking file's directory; then relative to the current
// directory. The first regular HDF5 file is the one read.

#include <string>
#include <vector>

#include "io/hdf5_file.hpp"

namespace sinkgrad::h5 {

struct LinkedFile {
  std::string path;  // as HDF5 would open it
  std::string via;   // "an external link '/logits' in file 'in.h5'" (for messages)
};

// Every file that reading `datasets` (paths inside `file`) reaches, recursively. Throws Error
// naming the link and the file when one is missing or not a regular file. A dataset that does
// not exist is skipped (reading it reports that).
std::vector<LinkedFile> linked_files(const File& file, const std::vector<std::string>& datasets);

// Throws Error when `output` is one of `files` (same device and inode).
void refuse_output_among(const std::string& output, const std::vector<LinkedFile>& files);

}  // namespace sinkgrad::h5
