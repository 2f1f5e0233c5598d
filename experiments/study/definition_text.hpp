#pragma once
// Checks of a definition's raw text before it is parsed: the text is stored in the log as a
// UTF-8 attribute and quoted in messages, so bytes that are not UTF-8 and control characters
// (a NUL would cut every message short) are refused, naming the line.

#include <string>

namespace sinkgrad::study {

// Throws DefinitionError "definition SOURCE: line K: ..." for the first offending byte.
void check_text(const std::string& text, const std::string& source);

// An override (`sinkgrad run DEF.ini key=value`) is one line of a definition: the same checks,
// and no control character at all (a line break in one would store a definition that no longer
// parses, making its log unresumable). Throws DefinitionError naming the override, its
// control characters shown as '?'.
void check_override_text(const std::string& override_text, const std::string& source);

}  // namespace sinkgrad::study
