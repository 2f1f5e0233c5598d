#pragma once
// The checked reading of a definition's entries ("section.key" -> text) behind
// parse_definition: the table of fixed sections and keys with what each accepts, the Reader
// that turns an entry into values or a DefinitionError naming the key, and the check that
// every key is known. Used by definition.cpp and definition_sections.cpp only.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/solver_registry.hpp"

namespace sinkgrad::study::definition_parsing {

// Forward iterations beyond this are refused (a T of 10^6 already takes minutes per run).
constexpr long long max_forward_T = 1000000;

// The fixed sections and keys, each with what it accepts (used in every message).
using KeyTable = std::map<std::string, std::map<std::string, std::string>>;
const KeyTable& fixed_keys();

std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ");

// The entries of a definition (after the overrides), read with checks: every failure is a
// DefinitionError "definition SOURCE: [section] key: message" naming what the key accepts.
class Reader {
 public:
  Reader(std::string source, std::map<std::string, std::string> entries)
      : source_(std::move(source)), entries_(std::move(entries)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail(const std::string& message) const;

  bool has(const std::string& key) const { return entries_.count(key) != 0; }

  std::string raw(const std::string& key) const;  // refused when missing

  // The comma-separated items of a key; an empty list is refused.
  std::vector<std::string> list(const std::string& key) const;

  // The one item of a key that takes a single value.
  std::string single(const std::string& key) const;
  // An item of `key` as an integer >= minimum, or as a finite number.
  long long integer(const std::string& key, const std::string& item, long long minimum) const;
  double real(const std::string& key, const std::string& item) const;
  // Every item of `key` as an integer >= minimum, none listed twice.
  std::vector<long long> integers(const std::string& key, long long minimum) const;
  // What `key` accepts, in words (from the table of fixed keys).
  std::string allowed(const std::string& key) const;

  const std::map<std::string, std::string>& entries() const { return entries_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, std::string> entries_;
};

// Every key must be a fixed one or an option of a [solver.NAME] section.
void check_keys(const Reader& reader, const SolverRegistry& registry);
// A '[section]' line names a known section or [solver.NAME] of a registered solver, keys or not.
void check_section(const Reader& reader, const SolverRegistry& registry,
                   const std::string& section);

}  // namespace sinkgrad::study::definition_parsing
