#include "experiments/study/definition_text.hpp"

#include <cstdio>

#include "experiments/study/definition.hpp"

namespace sinkgrad::study {
namespace {

// Length of the UTF-8 sequence starting at text[i] (1 for ASCII), 0 if it is not valid UTF-8.
std::size_t utf8_length(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  const std::size_t length = c >= 0xC2 && c <= 0xDF   ? 2
                             : c >= 0xE0 && c <= 0xEF ? 3
                             : c >= 0xF0 && c <= 0xF4 ? 4
                                                      : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms, surrogates and code points above U+10FFFF.
  if ((c == 0xE0 && byte(i + 1) < 0xA0) || (c == 0xED && byte(i + 1) > 0x9F) ||
      (c == 0xF0 && byte(i + 1) < 0x90) || (c == 0xF4 && byte(i + 1) > 0x8F))
    return 0;
  return length;
}

}  // namespace

void check_text(const std::string& text, const std::string& source) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length(text, i);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    if (length == 0)
      throw DefinitionError("definition " + source + ": line " + std::to_string(line) + ": byte " +
                            hex + " is not UTF-8; save the file as UTF-8");
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
      throw DefinitionError("definition " + source + ": line " + std::to_string(line) +
                            ": control character " + hex + (c == 0 ? " (NUL)" : "") +
                            "; a definition is text");
    if (c == '\n') ++line;
    i += length;
  }
}

void check_override_text(const std::string& override_text, const std::string& source) {
  std::string shown;
  for (const char c : override_text)
    shown += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  const std::string where = "definition " + source + ": override '" + shown + "'";
  for (std::size_t i = 0; i < override_text.size();) {
    const auto c = static_cast<unsigned char>(override_text[i]);
    const std::size_t length = utf8_length(override_text, i);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    if (length == 0) throw DefinitionError(where + ": byte " + hex + " is not UTF-8");
    if (c < 0x20 || c == 0x7f)
      throw DefinitionError(where + ": control character " + hex +
                            (c == '\n' || c == '\r' ? " (a line break)" : "") +
                            "; an override is one line of text");
    i += length;
  }
}

}  // namespace sinkgrad::study
