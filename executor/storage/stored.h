#pragma once
// A saved tensor in the form its strategy asks for — raw, quantized, 1-bit,
// swapped to host memory — as a MOM-aware layer keeps it from forward to
// backward. store() makes one; within a forward, slots that save the same
// tensor with the same strategy share it.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "executor/storage/codec.h"
#include "executor/storage/store_spec.h"
#include "model/strategy_table.h"

namespace papaya::executor {

class AdaptiveBits;
class HostCopy;

class Stored : public torch::CustomClassHolder {
 public:
  // The tensor as backward needs it: raw as saved, quantized dequantized in
  // its dtype, a mask as bool.
  at::Tensor restore();
  // Bytes held on the device (0 once swapped out); a raw tensor's whole storage.
  int64_t device_bytes() const;
  // Adaptive tensors: where their sensitivity goes.
  AdaptiveBits* adaptive() const { return adaptive_.get(); }
  int adaptive_index() const { return adaptive_index_; }
  const QuantLayout& layout() const { return layout_; }  // quantized only
  // When the last strong reference goes: the live-copy cache's weak ones
  // must not keep the payload.
  void release_resources() override;

 private:
  friend c10::intrusive_ptr<Stored> store(const at::Tensor&, model::SlotKind, const StoreSpec&);
  model::Encoding encoding_ = model::Encoding::raw;
  at::Tensor payload_;          // raw: a detached alias; otherwise the packed bytes
  std::vector<int64_t> shape_;  // quantized: in order_ where one is set
  std::vector<int64_t> order_;  // quantized: the dimensions in memory order (empty: as they are)
  at::ScalarType dtype_ = at::kFloat;
  QuantLayout layout_;
  int64_t version_ = 0;             // raw: the source's version when stored
  std::shared_ptr<HostCopy> host_;  // swapped: the payload in pinned host memory
  std::shared_ptr<AdaptiveBits> adaptive_;
  int adaptive_index_ = -1;
};

// Stores `t`, a slot of `kind`, as `spec` says (for an inverted GELU/SiLU
// input, `t` is the branch mask). Must not be called for a recomputed slot.
c10::intrusive_ptr<Stored> store(const at::Tensor& t, model::SlotKind kind, const StoreSpec& spec);

// The strategy `spec` stands for now: adaptive resolved to its current bits.
model::TensorStrategy effective_strategy(const StoreSpec& spec);

}  // namespace papaya::executor
