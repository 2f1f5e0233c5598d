#pragma once
// A definition as flat entries "section.key" -> value: read from INI text, changed by
// command-line overrides (`sinkgrad run DEF.ini forward.T=1,2`), and written back in a canonical
// form. The canonical form (sorted keys, list items trimmed and joined by ", ", no blanks around
// brackets and commas) is what identifies a study: comments and layout do not change it, a
// value does. The study log stores it, and --resume compares it key by key.

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sinkgrad::study {

using Entries = std::map<std::string, std::string>;

// Parses INI text (Boost.Program_options config-file syntax) into entries; a key given twice
// or a syntax error is a DefinitionError naming source.
Entries read_entries(const std::string& text, const std::string& source);

// The names of the '[section]' lines of INI text, in order (comments after '#' ignored): a
// section with no keys leaves no entry, so its name is checked from these.
std::vector<std::string> section_headers(const std::string& text);

// "inputs.n=4, 8" -> {"inputs.n", "4, 8"}; anything without a dotted key before '=' is a
// DefinitionError that shows the expected form.
std::pair<std::string, std::string> parse_override(const std::string& text);

// One value in canonical form: "1,2" and " 1 , 2 " -> "1, 2"; "uniform( 0 ,4)" ->
// "uniform(0, 4)".
std::string canonical_value(const std::string& value);
Entries canonical_entries(const Entries& entries);
// INI text of the canonical entries, one [section] per group of keys (read_entries reads it).
std::string canonical_text(const Entries& entries);

// The first key whose canonical value differs, as "[forward] T: '1, 2' in the log, '1, 2, 5'
// now" (a missing key reads "not given"); empty when the studies are the same.
std::string first_difference(const Entries& logged, const Entries& current);

// Whether a key holds one of the sweep's lists (its items multiply the runs): [inputs] n,
// logits, seed; [forward] T, precision, convention, eps; [solvers] use; [run] devices; every
// [solver.NAME] option. Every other key is a fixed setting.
bool is_sweep_key(const std::string& key);

// The rule for resuming a log (docs/experiments.md, "An existing log"): empty when `current`
// has every fixed setting of `logged` unchanged and each sweep list the same or a superset
// (order does not matter); otherwise the first key that breaks it, e.g. "[forward] T: '1, 5, 20'
// in the log, '1, 5' now (narrowed: 20 is missing)".
std::string resume_difference(const Entries& logged, const Entries& current);

// "[inputs] n" for "inputs.n".
std::string key_label(const std::string& key);

// Splits "a, f(b, c), d" at top-level commas (not inside parentheses); trims each part.
std::vector<std::string> split_list(const std::string& text);
std::string trim(const std::string& text);

}  // namespace sinkgrad::study
