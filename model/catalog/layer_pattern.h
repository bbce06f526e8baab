#pragma once
// Layer-name patterns that choose the layers a fine-tuning freezes
// (`--freeze 'embed*,blocks.[0-11].*'`): '*' matches any run of characters
// (dots too), '?' one character, '[a-b]' a decimal number from a to b.
#include <string>

namespace papaya::model {

// Throws InputError "where: why" for a pattern that is empty or has a
// bracket other than [a-b] with a <= b.
void check_layer_pattern(const std::string& pattern, const std::string& where);

// Whether `path` ("blocks.3.attn.q") matches the whole of `pattern`
// (checked by check_layer_pattern).
bool matches_layer_pattern(const std::string& pattern, const std::string& path);

}  // namespace papaya::model
