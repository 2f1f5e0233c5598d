#pragma once
// Plain-text layout for terminal output: word wrapping and aligned tables.

#include <string>
#include <vector>

namespace sinkgrad::cli {

// Wraps text at `width` columns; every line starts with `indent` spaces. Paragraph breaks
// ("\n") are kept.
std::string wrap(const std::string& text, int indent, int width = 100);

// "  term    text that wraps with a hanging indent": a definition list entry. The text starts
// at column `indent`; a term longer than indent - 4 gets a line of its own.
std::string hanging(const std::string& term, const std::string& text, int indent, int width = 100);

// A table printed with aligned columns; numbers are right-aligned, text left-aligned.
class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
  };
  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells);
  // The header, a rule and the rows, each line starting with `indent` spaces.
  std::string render(int indent = 0) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.23e-04"-style scientific notation with `digits` significant digits; "0" for zero, "nan"
// and "inf" spelt out.
std::string scientific(double value, int digits = 2);
// Fixed notation with `decimals` decimals.
std::string fixed(double value, int decimals);

}  // namespace sinkgrad::cli
