#pragma once
// Checks of a definition's raw text before it is parsed: the text is stored in the log as a
// UTF-8 attribute and quoted in messages, so bytes that are not UTF-8 and control characters
// (a NUL would cut every message short) are refused, naming the line.

#include <string>

namespace sinkgrad::study {

// Throws DefinitionError "definition SOURCE: line K: ..." for the first offending byte.
void check_text(const std::string& text, const std::string& source);

}  // namespace sinkgrad::study
