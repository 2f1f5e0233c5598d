#include "cli/text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace sinkgrad::cli {

std::string wrap(const std::string& text, int indent, int width) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out;
  std::istringstream paragraphs(text);
  std::string paragraph;
  while (std::getline(paragraphs, paragraph)) {
    std::istringstream words(paragraph);
    std::string word, line;
    while (words >> word) {
      if (!line.empty() && static_cast<int>(pad.size() + line.size() + 1 + word.size()) > width) {
        out += pad + line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
    }
    out += (line.empty() ? "" : pad + line) + "\n";
  }
  return out;
}

std::string hanging(const std::string& term, const std::string& text, int indent, int width) {
  std::string body = wrap(text, indent, width);
  const std::string head = "  " + term;
  if (static_cast<int>(head.size()) + 2 > indent) return head + "\n" + body;
  body.replace(0, head.size(), head);
  return body;
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(int indent) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text(static_cast<size_t>(indent), ' ');
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string fill(widths[c] - cells[c].size(), ' ');
      if (c > 0) text += "  ";
      text += columns_[c].align == Align::left ? cells[c] + fill : fill + cells[c];
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + "\n";
  };
  std::vector<std::string> headers;
  size_t total = 0;
  for (size_t c = 0; c < columns_.size(); ++c) {
    headers.push_back(columns_[c].header);
    total += widths[c] + (c > 0 ? 2 : 0);
  }
  std::string out = line(headers);
  out += std::string(static_cast<size_t>(indent), ' ') + std::string(total, '-') + "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string scientific(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*e", std::max(digits - 1, 0), value);
  return buffer;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace sinkgrad::cli
