#include "io/hdf5_handle.hpp"

#include "core/error.hpp"

namespace sinkgrad::h5 {

Handle::Handle(const Handle& other) : id_(other.id_) {
  if (valid()) H5Iinc_ref(id_);
}

Handle& Handle::operator=(const Handle& other) {
  if (this != &other) {
    Handle copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::reset() {
  if (valid()) H5Idec_ref(id_);
  id_ = H5I_INVALID_HID;
}

void silence_hdf5_error_printing() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {

herr_t innermost_description(unsigned position, const H5E_error2_t* entry, void* data) {
  // Walking upward, position 0 is the innermost (most specific) entry.
  if (position == 0 && entry->desc != nullptr) *static_cast<std::string*>(data) = entry->desc;
  return 0;
}

}  // namespace

std::string take_hdf5_reason() {
  std::string reason;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_description, &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason;
}

void throw_hdf5_error(const std::string& message) {
  const std::string reason = take_hdf5_reason();
  throw Error(reason.empty() ? message : message + " (HDF5: " + reason + ")");
}

hid_t checked(hid_t id, const std::string& message) {
  if (id < 0) throw_hdf5_error(message);
  return id;
}

void checked_status(herr_t status, const std::string& message) {
  if (status < 0) throw_hdf5_error(message);
}

}  // namespace sinkgrad::h5
