#pragma once
// sinkgrad's HDF5 layer (HDF5 1.10 C API under RAII), for the command-line tool and the
// experiment log writer. One concept per header:
//
//   hdf5_handle.hpp     Handle: an hid_t released by RAII; HDF5 errors -> sinkgrad::Error
//   hdf5_object.hpp     Object: an open file root / group / dataset that can name itself
//   hdf5_group.hpp      Group: open, create, list and remove children
//   hdf5_file.hpp       File: open (read-only / read-write), create, flush; its own root group
//   hdf5_dataset.hpp    Dataset: N-D float32 / float64 / int32 / int64, read, write, append
//                       (hdf5_element_type.hpp: its element types, internal)
//   hdf5_attribute.hpp  attributes: string, int64, float64 and arrays, on any Object
//   hdf5_batch.hpp      (B, n, n) datasets <-> HostBatch<float|double>, with shape checks
//   hdf5_links.hpp      the files an input reads through external links and virtual datasets
//   hdf5_write_driver.hpp  the driver of written files: a failed write is final (internal)
//   undo_journal.hpp    a file changed in place goes back to its last commit on failure
//   writer_lock.hpp     one writer per log, whatever HDF5's own locking does
//   replace_on_commit.hpp  write to a temporary file, rename into place on success
//   output_policy.hpp   what may be written: regular files only, never an input
//   memory_budget.hpp   refuse an allocation larger than the memory available, with sizes
//
// Everything lives in namespace sinkgrad::h5 (ReplaceOnCommit in sinkgrad) and throws
// sinkgrad::Error with a message naming the file and object; HDF5's own stderr error printing
// is switched off. Link the CMake target sinkgrad_io.
//
// Threads: the Debian HDF5 build is not thread-safe; call this layer from one thread at a time
// (the batch loops run between reads and writes, never during them).
//
// Handles are shared by copy (Group, Dataset and File copies refer to the same HDF5 object);
// a file is closed once its File and every Group / Dataset opened from it are gone, so close
// or destroy them all before renaming or reopening the file.
//
// Example, an experiment log that grows by one group per run:
//
//   auto log = std::filesystem::exists(path) ? h5::File::open(path, h5::File::Mode::read_write)
//                                            : h5::File::create(path);
//   h5::Group run = log.create_group("runs/run_0007");
//   h5::write_string_attribute(run, "solver", "cg_corrected");
//   h5::write_vector<std::int32_t>(run, "status", codes);
//   h5::write_batch<double>(run, "grad_logits", dM.view());
//   log.flush();
//
// (The study log itself does more: File::Journal::undo, commit() per run, a WriterLock.)

#include "io/hdf5_attribute.hpp"
#include "io/hdf5_batch.hpp"
#include "io/hdf5_dataset.hpp"
#include "io/hdf5_file.hpp"
#include "io/hdf5_group.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_links.hpp"
#include "io/hdf5_object.hpp"
#include "io/memory_budget.hpp"
#include "io/output_policy.hpp"
#include "io/replace_on_commit.hpp"
#include "io/writer_lock.hpp"
