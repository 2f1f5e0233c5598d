#include "core/plugin_file_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "core/error.hpp"

#if !defined(__APPLE__)
#include <elf.h>
#endif

namespace sinkgrad {
namespace {

std::string refusal(const std::string& path, const std::string& why) {
  return "plugin '" + path + "' " + why +
         "; a plugin is the shared library built by a project that links sinkgrad::sinkgrad "
         "for this machine (see docs/adding-a-solver.md)";
}

// Reads `count` bytes at `offset`; false when the file is shorter.
bool read_at(std::ifstream& file, std::uint64_t offset, void* out, std::size_t count) {
  file.clear();
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(static_cast<char*>(out), static_cast<std::streamsize>(count));
  return file.gcount() == static_cast<std::streamsize>(count);
}

// offset + length <= size, without overflow.
bool within(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

#if defined(__APPLE__)
void check_library_headers(const std::string& path, std::ifstream& file, std::uint64_t) {
  unsigned char magic[4] = {0, 0, 0, 0};
  const bool mach_o = read_at(file, 0, magic, sizeof magic) &&
                      (magic[0] == 0xcf || magic[0] == 0xce) && magic[1] == 0xfa &&
                      magic[2] == 0xed && magic[3] == 0xfe;
  if (!mach_o) throw Error(refusal(path, "is not a shared library (no Mach-O header)"));
}
#else
#if UINTPTR_MAX == 0xffffffffffffffffu
using Ehdr = Elf64_Ehdr;
using Phdr = Elf64_Phdr;
constexpr unsigned char host_class = ELFCLASS64;
#else
using Ehdr = Elf32_Ehdr;
using Phdr = Elf32_Phdr;
constexpr unsigned char host_class = ELFCLASS32;
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char host_data = ELFDATA2LSB;
#else
constexpr unsigned char host_data = ELFDATA2MSB;
#endif
// The machine this code runs on; 0 where it is not listed (then the machine is not checked).
#if defined(__x86_64__)
constexpr int host_machine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int host_machine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr int host_machine = EM_PPC64;
#elif defined(__i386__)
constexpr int host_machine = EM_386;
#else
constexpr int host_machine = 0;
#endif

void check_library_headers(const std::string& path, std::ifstream& file, std::uint64_t size) {
  Ehdr header{};
  if (!read_at(file, 0, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    throw Error(refusal(path, "is not a shared library (no ELF header)"));
  if (header.e_ident[EI_CLASS] != host_class || header.e_ident[EI_DATA] != host_data)
    throw Error(refusal(path,
                        "is an ELF file of another word size or byte order than this "
                        "machine's"));
  if (host_machine != 0 && header.e_machine != host_machine)
    throw Error(refusal(path, "is an ELF file for another processor (e_machine " +
                                  std::to_string(header.e_machine) + ", this machine's is " +
                                  std::to_string(host_machine) + ")"));
  if (header.e_type != ET_DYN)
    throw Error(refusal(path, "is an ELF file but not a shared library (e_type " +
                                  std::to_string(header.e_type) + ")"));
  const std::string cut = "is cut short or damaged: its ELF header describes ";
  const std::string beyond = ", beyond its " + std::to_string(size) + " bytes";
  if (header.e_phentsize != sizeof(Phdr) ||
      !within(header.e_phoff, std::uint64_t(header.e_phnum) * sizeof(Phdr), size))
    throw Error(refusal(path, cut + "program headers" + beyond));
  if (header.e_shoff != 0 &&
      !within(header.e_shoff, std::uint64_t(header.e_shnum) * header.e_shentsize, size))
    throw Error(
        refusal(path, cut + "section headers up to byte " +
                          std::to_string(std::uint64_t(header.e_shoff) +
                                         std::uint64_t(header.e_shnum) * header.e_shentsize) +
                          beyond));
  std::vector<Phdr> segments(header.e_phnum);
  if (!segments.empty() &&
      !read_at(file, header.e_phoff, segments.data(), segments.size() * sizeof(Phdr)))
    throw Error(refusal(path, cut + "program headers it does not hold"));
  for (const Phdr& segment : segments)
    if (!within(segment.p_offset, segment.p_filesz, size))
      throw Error(refusal(path, cut + "a segment up to byte " +
                                    std::to_string(std::uint64_t(segment.p_offset) +
                                                   std::uint64_t(segment.p_filesz)) +
                                    beyond));
}
#endif

}  // namespace

void check_plugin_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw Error("plugin '" + path + "': no such file");
  if (!S_ISREG(info.st_mode))
    throw Error(refusal(path, "is not a regular file (a device, FIFO or socket)"));
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("plugin '" + path + "' cannot be read");
  check_library_headers(path, file, static_cast<std::uint64_t>(info.st_size));
}

void warn_if_world_writable(const std::string& path) {
  struct stat file {
  }, directory{};
  const std::string parent = std::filesystem::path(path).parent_path().string();
  if (::stat(path.c_str(), &file) != 0 ||
      ::stat(parent.empty() ? "." : parent.c_str(), &directory) != 0)
    return;
  const bool file_open = (file.st_mode & S_IWOTH) != 0;
  const bool sticky_protects = (directory.st_mode & S_ISVTX) != 0 && file.st_uid == ::geteuid();
  const bool directory_open = (directory.st_mode & S_IWOTH) != 0 && !sticky_protects;
  if (!file_open && !directory_open) return;
  std::cerr << "sinkgrad: warning: plugin '" << path
            << "': " << (file_open ? "the file" : "its directory '" + parent + "'")
            << " can be written by every user, who could replace the code sinkgrad loads\n";
}

}  // namespace sinkgrad
