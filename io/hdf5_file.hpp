#pragma once
// An HDF5 file, which is also its root group (hdf5_group.hpp): open an existing file for
// reading or appending, or create a new one; flush to make what was written so far durable
// (e.g. after each run of an experiment log).
//
//   auto in = h5::File::open("in.h5");                         // read-only
//   auto log = h5::File::open("log.h5", h5::File::Mode::read_write);
//   auto out = h5::File::create("out.h5", h5::File::Exists::replace);
//
// Opening checks that the file exists and is HDF5 before HDF5 sees it, so that the two most
// common mistakes get plain messages.

#include <string>

#include "io/hdf5_group.hpp"

namespace sinkgrad::h5 {

class File : public Group {
 public:
  enum class Mode { read_only, read_write };
  enum class Exists { fail, replace };  // what create() does with an existing file

  File() = default;

  static File open(const std::string& path, Mode mode = Mode::read_only);
  static File create(const std::string& path, Exists exists = Exists::fail);

  // Writes HDF5's buffers for this file to the operating system.
  void flush() const;
  // Releases this handle (the file closes once no group or dataset of it is open either).
  void close() { *this = File(); }

 private:
  File(Handle file, Handle root, std::string path);
  Handle file_;
};

}  // namespace sinkgrad::h5
