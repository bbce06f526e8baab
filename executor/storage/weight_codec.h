#pragma once
// A frozen weight stored in fewer bytes (model::WeightFormat: bf16, LLM.int8's
// rows, QLoRA's nf4 blocks with their absmaxes quantized again) and loaded
// back in a compute dtype for each matmul that reads it.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "model/catalog/weight_format.h"

namespace papaya::executor {

struct StoredWeight {
  model::WeightFormat format = model::WeightFormat::fp32;
  std::vector<int64_t> shape;
  at::Tensor codes;         // fp32 or bf16 values; int8: int8 codes; nf4: uint8, two codes a byte (high nibble first)
  at::Tensor scales;        // int8: fp32 absmax / 127 a row; nf4: int8 codes of each block's absmax less their mean
  at::Tensor scale_scales;  // nf4: fp32, what one step of those codes is worth, a group of 256 blocks
  at::Tensor scale_offset;  // nf4: fp32, the absmaxes' mean (one value)

  // The tensors that hold it, by name, as its layer registers them.
  std::vector<std::pair<const char*, at::Tensor*>> tensors();
  int64_t bytes() const;
  int64_t numel() const;
};

// `weight` (2-D, floating) stored in `format`: each value rounded to the
// format's nearest (nf4: to the nearest of its 16 levels of the block's
// absmax).
StoredWeight store_weight(const at::Tensor& weight, model::WeightFormat format);

// A weight of `rows` x `cols` stored as store_weight stores it, given a few
// rows at a time by `rows_of(first, count)` (about 2^20 values): never whole
// in fp32, which for a 7B base made and freed 200 MB a projection while the
// network was built, and glibc's kept heap fragmented around the stored codes.
using RowsOf = std::function<at::Tensor(int64_t first, int64_t count)>;
StoredWeight store_weight(int64_t rows, int64_t cols, model::WeightFormat format, const RowsOf& rows_of);

// The weight as stored, in `dtype`, on the device it is stored on.
at::Tensor load_weight(const StoredWeight& stored, at::ScalarType dtype);

// Where a network's stored weights are loaded for their matmuls: one
// buffer, grown to the largest load, reused by every one. A load per matmul
// then allocates nothing of the weight's size: the host allocator keeps freed
// memory for reuse, and loaded weights of several sizes made
// and freed among the step's tensors fragmented it (a QLoRA Llama-2-7B
// profile's resident memory grew 1.4 GB every 30 s).
class LoadScratch {
 public:
  // `stored` loaded as load_weight loads it, into the buffer: valid until
  // the next load.
  at::Tensor load(const StoredWeight& stored, at::ScalarType dtype);
  int64_t bytes() const { return buffer_.defined() ? buffer_.numel() : 0; }

 private:
  at::Tensor buffer_;
};

}  // namespace papaya::executor
