#pragma once
// Sizes and rates as people write them, and back.
#include <cstdint>
#include <string>
#include <vector>

namespace papaya::model {

// "24GiB", "24 GB", "800MiB", "16G" (binary), "1.5e9" (bytes) -> bytes.
// Throws InputError naming `what` on anything else.
int64_t parse_size(const std::string& text, const std::string& what);

// "a,b,,c," split at ',' -> {"a", "b", "", "c", ""}: every field, empty ones
// too (a trailing separator ends with one), none for "".
std::vector<std::string> split(const std::string& text, char sep);

// "1,2,4,8" -> {1,2,4,8}; every entry a positive integer.
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// 1536 -> "1.50 KiB"; always binary units.
std::string format_bytes(double bytes);

// 2.5e9 -> "2.50 G" (decimal prefixes, for rates and FLOPs).
std::string format_si(double value);

}  // namespace papaya::model
