#pragma once
// The quantized buffer's layout (codec.h describes it) apart from the codec,
// so that the codec's CUDA path (codec_cuda.h), which the codec calls, takes
// it without including the codec.
#include <cstdint>

#include "model/strategy.h"

namespace papaya::executor {

// Where a tensor's values go in a quantized buffer: the tensor is viewed as
// heads of head_numel values (one head of numel values unless headwise),
// each head padded with zeros to whole groups.
struct QuantLayout {
  int bits = 8;
  int group_size = 256;
  int64_t numel = 0;
  int64_t head_numel = 0;

  int64_t heads() const { return head_numel > 0 ? numel / head_numel : 0; }
  int64_t groups_per_head() const { return (head_numel + group_size - 1) / group_size; }
  int64_t groups() const { return heads() * groups_per_head(); }
  int64_t code_bytes_per_group() const { return int64_t{group_size} * bits / 8; }
  int64_t bytes() const { return groups() * (code_bytes_per_group() + model::quantized_range_bytes); }
};

}  // namespace papaya::executor
