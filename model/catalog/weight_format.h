#pragma once
// How a fine-tuned network's frozen projection weights are stored: fp32 as
// trained, bf16, int8 (LLM.int8's rows: a code a weight and an fp32 absmax
// a row) or nf4 (QLoRA's 4-bit NormalFloat: a code a weight, an absmax a
// block of 64 weights, those absmaxes themselves 8-bit codes in blocks of
// 256 around their mean, as bitsandbytes stores them). The executor stores
// and loads them (executor/storage/weight_codec.h); this prices them.
#include <cstdint>
#include <string>

namespace papaya::model {

enum class WeightFormat { fp32, bf16, int8, nf4 };

constexpr int64_t nf4_block = 64;          // weights per absmax
constexpr int64_t nf4_absmax_block = 256;  // absmaxes per scale of their codes

// "fp32", "bf16", "int8", "nf4"; throws InputError "where: ..." otherwise.
WeightFormat parse_weight_format(const std::string& name, const std::string& where);
std::string to_string(WeightFormat format);

// Bytes a rows x cols weight takes stored in `format`: for nf4 half a byte a
// weight, a byte a block of 64, four a block of 256 blocks and four for the
// mean (4.127 bits a weight).
int64_t stored_weight_bytes(int64_t rows, int64_t cols, WeightFormat format);

}  // namespace papaya::model
