#pragma once
// What the plugin loader checks in a file before dlopen maps it. dlopen trusts the ELF headers:
// a library cut short (a copy interrupted, a full disk) that keeps its header has segments
// that end past the end of the file, and touching them kills the process with SIGBUS inside
// dlopen, where no error can be reported. So the headers are read and checked against the
// file's size first, and a library for another machine is refused with a message rather than
// dlopen's.

#include <string>

namespace sinkgrad {

// Throws Error naming `path` unless it is a regular file holding a shared library for this
// host: an ELF header of this host's class (64-bit), byte order and machine, of a shared
// object, whose program headers and every segment they describe (p_offset + p_filesz), and
// whose section header table (e_shoff + e_shnum e_shentsize), lie within the file. On macOS only
// the Mach-O magic is checked. The file can still change between this check and dlopen; the
// check is against accidents, not against an attacker who can write the file.
void check_plugin_file(const std::string& path);

// A warning on stderr when `path` or its directory can be written by every user (anyone could
// replace the code sinkgrad is about to run); a directory with the sticky bit (like /tmp)
// only when the file is not the current user's. Nothing is refused.
void warn_if_world_writable(const std::string& path);

}  // namespace sinkgrad
