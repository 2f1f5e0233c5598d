#pragma once
// The one policy for every file sinkgrad writes (grad's output, run's log):
//   - an existing output must be a regular file: a device, FIFO, socket or directory is
//     refused (the write-then-rename would replace the node, e.g. /dev/null, with a file);
//   - an output that is the same file as one of the command's inputs (same device and inode,
//     through symbolic and hard links) is refused: writing it would destroy the input;
//   - a symbolic link is written through: the file it points to is replaced (in the link
//     target's directory), the link itself stays; a dangling link is refused.
// Inputs are read only from regular files (h5::File::open refuses anything else).

#include <string>
#include <vector>

namespace sinkgrad {

// Returns the path to write (the link target when `output` is a symbolic link); throws Error
// naming the output and the reason when the policy refuses it. Inputs that do not exist are
// ignored (their own open reports them).
std::string checked_output_path(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace sinkgrad
