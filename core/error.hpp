#pragma once
// The one exception type of the library: every message says what is wrong and, where it can,
// what would be accepted instead.

#include <stdexcept>
#include <string>

namespace sinkgrad {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sinkgrad
