#include "io/hdf5_write_driver.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sinkgrad::h5 {
namespace {

// Plain scalars only, `pub` first: HDF5 knows a driver's file by its H5FD_t part.
struct DriverFile {
  H5FD_t pub;
  int fd;
  haddr_t eoa;
  haddr_t eof;
  dev_t device;
  ino_t inode;
  std::shared_ptr<WriteSession>* session;  // owned: the open file keeps its session alive
};

struct DriverConfig {
  const std::shared_ptr<WriteSession>* session;
};

constexpr haddr_t max_address = (haddr_t{1} << (8 * sizeof(off_t) - 1)) - 1;

DriverFile* file_of(H5FD_t* file) {
  return reinterpret_cast<DriverFile*>(file);
}
const DriverFile* file_of(const H5FD_t* file) {
  return reinterpret_cast<const DriverFile*>(file);
}
WriteSession& session_of(H5FD_t* file) {
  return **file_of(file)->session;
}

// The first failure is kept for the message; from then on nothing more reaches the file. HDF5
// is told the write succeeded: when it sees a write fail inside H5Dclose (the data sieve's
// flush), it leaves the dataset half-closed and closes it again at exit, which crashes (HDF5
// 1.10). File::flush reports the failure instead, and the owner then rolls the file back or
// removes it.
herr_t fail(WriteSession& session) {
  if (!session.failed) session.failure = std::strerror(errno);
  session.failed = true;
  return 0;
}

H5FD_t* driver_open(const char* name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  if (name == nullptr || *name == '\0' || maxaddr == 0 || maxaddr > max_address) return nullptr;
  const auto* config = static_cast<const DriverConfig*>(H5Pget_driver_info(fapl));
  if (config == nullptr || config->session == nullptr) return nullptr;
  int mode = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
  if (flags & H5F_ACC_TRUNC) mode |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) mode |= O_CREAT;
  if (flags & H5F_ACC_EXCL) mode |= O_EXCL;
  const int fd = ::open(name, mode | O_CLOEXEC, 0666);
  if (fd < 0) return nullptr;
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    return nullptr;
  }
  auto* file = new DriverFile{};
  file->fd = fd;
  file->eof = static_cast<haddr_t>(info.st_size);
  file->device = info.st_dev;
  file->inode = info.st_ino;
  file->session = new std::shared_ptr<WriteSession>(*config->session);
  (*file->session)->fd = fd;
  return &file->pub;
}

herr_t driver_close(H5FD_t* handle) {
  DriverFile* file = file_of(handle);
  WriteSession& session = **file->session;
  bool ok = true;
  if (session.journal)
    ok = session.failed ? session.journal->rollback(file->fd) : session.journal->commit();
  ok = ::close(file->fd) == 0 && ok;
  session.fd = -1;
  delete file->session;
  delete file;
  return ok ? 0 : -1;
}

int driver_cmp(const H5FD_t* a, const H5FD_t* b) {
  const DriverFile* left = file_of(a);
  const DriverFile* right = file_of(b);
  if (left->device != right->device) return left->device < right->device ? -1 : 1;
  if (left->inode != right->inode) return left->inode < right->inode ? -1 : 1;
  return 0;
}

herr_t driver_query(const H5FD_t*, unsigned long* flags) {
  // As sec2: HDF5 may gather small metadata and raw data writes into larger ones.
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA;
  return 0;
}

haddr_t driver_get_eoa(const H5FD_t* file, H5FD_mem_t) {
  return file_of(file)->eoa;
}

herr_t driver_set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t address) {
  file_of(file)->eoa = address;
  return 0;
}

haddr_t driver_get_eof(const H5FD_t* file, H5FD_mem_t) {
  return file_of(file)->eof;
}

herr_t driver_get_handle(H5FD_t* file, hid_t, void** handle) {
  *handle = &file_of(file)->fd;
  return 0;
}

herr_t driver_read(H5FD_t* handle, H5FD_mem_t, hid_t, haddr_t address, size_t size, void* out) {
  const DriverFile* file = file_of(handle);
  auto* bytes = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t done = ::pread(file->fd, bytes, size, static_cast<off_t>(address));
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) return -1;
    if (done == 0) {  // beyond the end of the file: zeros, as sec2 reads them
      std::memset(bytes, 0, size);
      break;
    }
    bytes += done;
    size -= static_cast<size_t>(done);
    address += static_cast<haddr_t>(done);
  }
  return 0;
}

herr_t driver_write(H5FD_t* handle, H5FD_mem_t, hid_t, haddr_t address, size_t size,
                    const void* in) {
  DriverFile* file = file_of(handle);
  WriteSession& session = session_of(handle);
  if (session.failed) return 0;
  if (session.journal && !session.journal->save(file->fd, address, size)) return fail(session);
  const auto* bytes = static_cast<const char*>(in);
  const haddr_t end = address + size;
  while (size > 0) {
    const ssize_t done = ::pwrite(file->fd, bytes, size, static_cast<off_t>(address));
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return fail(session);
    bytes += done;
    size -= static_cast<size_t>(done);
    address += static_cast<haddr_t>(done);
  }
  file->eof = std::max(file->eof, end);
  return 0;
}

herr_t driver_flush(H5FD_t*, hid_t, hbool_t) {
  return 0;
}

herr_t driver_truncate(H5FD_t* handle, hid_t, hbool_t) {
  DriverFile* file = file_of(handle);
  WriteSession& session = session_of(handle);
  if (session.failed || file->eoa == file->eof) return 0;
  if (session.journal && file->eoa < file->eof &&
      !session.journal->save(file->fd, file->eoa, file->eof - file->eoa))
    return fail(session);
  if (::ftruncate(file->fd, static_cast<off_t>(file->eoa)) != 0) return fail(session);
  file->eof = file->eoa;
  return 0;
}

// HDF5's own file locking (skipped when HDF5_USE_FILE_LOCKING=FALSE), as sec2 does it.
herr_t driver_lock(H5FD_t* file, hbool_t read_write) {
  if (::flock(file_of(file)->fd, (read_write ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return 0;
  return errno == ENOSYS ? 0 : -1;
}

herr_t driver_unlock(H5FD_t* file) {
  if (::flock(file_of(file)->fd, LOCK_UN) == 0) return 0;
  return errno == ENOSYS ? 0 : -1;
}

const H5FD_class_t driver_class = {"sinkgrad_write",
                                   max_address,
                                   H5F_CLOSE_WEAK,
                                   nullptr,  // terminate
                                   nullptr,
                                   nullptr,
                                   nullptr,  // superblock: nothing of ours
                                   sizeof(DriverConfig),
                                   nullptr,
                                   nullptr,
                                   nullptr,  // fapl: copied as bytes
                                   0,
                                   nullptr,
                                   nullptr,  // dxpl
                                   driver_open,
                                   driver_close,
                                   driver_cmp,
                                   driver_query,
                                   nullptr,  // get_type_map
                                   nullptr,
                                   nullptr,  // alloc, free: HDF5's own
                                   driver_get_eoa,
                                   driver_set_eoa,
                                   driver_get_eof,
                                   driver_get_handle,
                                   driver_read,
                                   driver_write,
                                   driver_flush,
                                   driver_truncate,
                                   driver_lock,
                                   driver_unlock,
                                   H5FD_FLMAP_DICHOTOMY};

hid_t driver_id() {
  static hid_t id = H5I_INVALID_HID;
  // HDF5 forgets registered drivers when the library is closed and opened again.
  if (id < 0 || H5Iis_valid(id) <= 0) id = H5FDregister(&driver_class);
  return id;
}

}  // namespace

Handle write_access_plist(const std::shared_ptr<WriteSession>& session) {
  Handle plist(checked(H5Pcreate(H5P_FILE_ACCESS), "cannot create a file access property list"));
  const DriverConfig config{&session};
  checked_status(
      H5Pset_driver(plist.get(), checked(driver_id(), "cannot register the driver"), &config),
      "cannot set the file driver");
  return plist;
}

}  // namespace sinkgrad::h5
