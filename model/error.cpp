#include "model/error.h"

#include <cstdio>

namespace papaya {
namespace {

std::string hex(unsigned char c) {
  char out[5];
  std::snprintf(out, sizeof out, "\\x%02X", c);
  return out;
}

// The length of the UTF-8 sequence at `text[i]`, 0 where none is (a stray
// continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t sequence_at(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = byte(0);
  const size_t length = c >= 0xF5 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
  }
  const unsigned char second = byte(1);
  if ((c == 0xE0 && second < 0xA0) || (c == 0xED && second >= 0xA0) || (c == 0xF0 && second < 0x90) ||
      (c == 0xF4 && second >= 0x90)) {
    return 0;
  }
  return length;
}

}  // namespace

std::string printable_line(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r') {
      out += c == '\n' ? "\\n" : "\\r";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += hex(c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t length = sequence_at(text, i)) {
      out.append(text, i, length);
      i += length;
    } else {
      out += hex(c);
      ++i;
    }
  }
  return out;
}

}  // namespace papaya
