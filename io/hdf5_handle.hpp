#pragma once
// An HDF5 identifier (file, group, dataset, dataspace, datatype, attribute) owned by RAII, and
// the error reporting every HDF5 call in io shares.
//
// Copying a Handle shares the identifier (H5Iinc_ref); the last copy releases it (H5Idec_ref),
// whatever kind of object it names. HDF5's own error-stack printing to stderr is switched off
// (silence_hdf5_error_printing) as soon as any file is opened: every failure becomes a
// sinkgrad::Error instead, whose message says which file and object, what is wrong, and ends
// with HDF5's innermost reason when there is one.

#include <hdf5.h>

#include <string>

namespace sinkgrad::h5 {

class Handle {
 public:
  Handle() = default;
  // Takes ownership of id; a negative id (a failed HDF5 call) makes an invalid handle.
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(const Handle& other);
  Handle& operator=(const Handle& other);
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& other) noexcept;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Turns off HDF5's automatic printing of its error stack (idempotent, cheap).
void silence_hdf5_error_printing();

// HDF5's innermost error description on the current error stack (empty if none), then clears
// the stack.
std::string take_hdf5_reason();

// Throws sinkgrad::Error(message + " (HDF5: <reason>)" when HDF5 gave a reason).
[[noreturn]] void throw_hdf5_error(const std::string& message);

// Returns id when it is valid, otherwise throw_hdf5_error(message).
hid_t checked(hid_t id, const std::string& message);
// Throws throw_hdf5_error(message) when an herr_t / htri_t result is negative.
void checked_status(herr_t status, const std::string& message);

}  // namespace sinkgrad::h5
