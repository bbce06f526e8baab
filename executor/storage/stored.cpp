#include "executor/storage/stored.h"

#include <algorithm>

#include "executor/storage/adaptive.h"
#include "executor/storage/stored_bytes.h"
#ifdef PAPAYA_CUDA
#include "executor/storage/swap.h"
#endif

namespace papaya::executor {
namespace {

using model::Encoding;
using model::Form;

// The stored copies alive, by source tensor and strategy. Weak references
// both ways: an entry holds neither the source's memory nor the copy, and the
// source's StorageImpl, kept as an object, cannot be reused at the same
// address while the entry lives. A copy lives as long as a backward needs it,
// so sharing happens within a forward (and between forwards whose graphs
// are alive at once, where the tensor is the same).
struct LiveCopy {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  int64_t offset;
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype;
  std::string strategy;
  c10::weak_intrusive_ptr<Stored> copy;

  bool same_start(const at::Tensor& t) const {
    return storage._unsafe_get_target() == t.storage().unsafeGetStorageImpl() && offset == t.storage_offset() &&
           dtype == t.scalar_type();
  }
  bool same_source(const at::Tensor& t) const { return same_start(t) && t.sizes().equals(sizes) && t.strides().equals(strides); }
  // The same elements in the same order under another shape: both dense and
  // in row-major order, from the same place of the same storage.
  bool same_bytes(const at::Tensor& t) const {
    if (!same_start(t) || !t.is_contiguous()) return false;
    int64_t step = 1;  // the stride a row-major dense tensor has at each dimension, from the last
    for (size_t d = sizes.size(); d-- > 0;) {
      if (sizes[d] != 1 && strides[d] != step) return false;
      step *= sizes[d];
    }
    return step == t.numel();
  }
};
thread_local std::vector<LiveCopy> live_copies;

std::string cache_key(const model::TensorStrategy& s) {
  return s.name() + "/" + std::to_string(s.group()) + (s.headwise ? "/headwise" : "");
}

// The live copy under `key` that `match` (LiveCopy::same_source or
// same_bytes) finds for `t`, if any.
c10::intrusive_ptr<Stored> find_live(const at::Tensor& t, const std::string& key,
                                     bool (LiveCopy::*match)(const at::Tensor&) const) {
  live_copies.erase(std::remove_if(live_copies.begin(), live_copies.end(),
                                   [](const LiveCopy& c) { return c.copy.expired() || c.storage.expired(); }),
                    live_copies.end());
  for (const auto& c : live_copies) {
    if (c.strategy == key && (c.*match)(t)) return c.copy.lock();
  }
  return {};
}

// Values per head of a headwise-quantized tensor: its last two dimensions.
int64_t head_numel(const at::Tensor& t, const model::TensorStrategy& s) {
  return s.headwise && t.dim() >= 2 ? t.size(-1) * t.size(-2) : t.numel();
}

// The dimensions of `t` from its largest stride to its smallest, where that
// order makes a dense tensor that is not contiguous contiguous (a
// channels-last activation, a transposed one); empty otherwise. Quantized in
// that order, it is restored with its own strides, without a copy either
// way: a backward then runs on what it saved (a convolution given an
// activation in another memory format takes another algorithm, with other
// scratch and time).
std::vector<int64_t> memory_order(const at::Tensor& t) {
  if (t.is_contiguous()) return {};
  std::vector<int64_t> order(static_cast<size_t>(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) order[static_cast<size_t>(d)] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  if (!t.permute(order).is_contiguous()) return {};
  return order;
}

}  // namespace

model::TensorStrategy effective_strategy(const StoreSpec& spec) {
  model::TensorStrategy s = spec.strategy;
  if (model::chooses_bits(s.form)) {
    s.form = Form::quantized;
    s.bits = spec.adaptive->bits(spec.adaptive_index);
  }
  return s;
}

c10::intrusive_ptr<Stored> store(const at::Tensor& t, model::SlotKind kind, const StoreSpec& spec) {
  const model::TensorStrategy s = effective_strategy(spec);
  Encoding encoding = model::encoding(kind, s);
  TORCH_CHECK(encoding != Encoding::none, "a recomputed tensor is not stored");
  if (t.numel() == 0) encoding = Encoding::raw;  // an expert routed no token: nothing to code
  // Raw tensors share their storage anyway; only copies need the cache.
  const bool copied = encoding != Encoding::raw || s.swap;
  const std::string key = cache_key(s);
  if (copied) {
    if (auto live = find_live(t, key, &LiveCopy::same_source)) return live;
    // Another shape of a live copy shares its bytes where they do not depend
    // on the shape: neither grouped by heads, reordered, swapped nor adaptive
    // (a linear layer given a [B, H, W, C] activation saves a [B*H*W, C] view).
    if (!s.swap && !s.headwise && !model::chooses_bits(spec.strategy.form) && t.is_contiguous()) {
      if (auto live = find_live(t, key, &LiveCopy::same_bytes); live && live->order_.empty() && !live->host_) {
        auto view = c10::make_intrusive<Stored>(*live);
        view->shape_ = t.sizes().vec();
        return view;
      }
    }
  }
  auto out = c10::make_intrusive<Stored>();
  out->shape_ = t.sizes().vec();
  out->dtype_ = t.scalar_type();
  if (model::chooses_bits(spec.strategy.form)) {
    out->adaptive_ = spec.adaptive;
    out->adaptive_index_ = spec.adaptive_index;
  }
  out->encoding_ = encoding;
  switch (encoding) {
    case Encoding::raw:
      // A detached alias: holds the storage, not the autograd graph (the
      // tensor may be the layer's own output: no reference cycle).
      out->payload_ = t.detach();
      out->version_ = t._version();
      break;
    case Encoding::mask: out->payload_ = pack_mask(t); break;
    case Encoding::quantized: {
      // Headwise groups follow the logical last two dimensions.
      if (!s.headwise) out->order_ = memory_order(t);
      const at::Tensor in_order = out->order_.empty() ? t : t.permute(out->order_);
      out->shape_ = in_order.sizes().vec();
      out->layout_ = QuantLayout{s.bits, s.group(), t.numel(), head_numel(t, s)};
      out->payload_ = quantize(in_order, out->layout_);
      break;
    }
    case Encoding::none: break;
  }
  const void* identity = out->encoding_ == Encoding::raw ? static_cast<const void*>(t.storage().unsafeGetStorageImpl())
                                                         : out->payload_.storage().unsafeGetStorageImpl();
  if (s.swap) {
#ifdef PAPAYA_CUDA
    out->host_ = swap_out(out->payload_);
    out->payload_ = at::Tensor();
#else
    TORCH_CHECK(false, "swap needs a CUDA build of papaya");
#endif
  }
  if (copied) {
    live_copies.push_back({t.storage().getWeakStorageImpl(), t.storage_offset(), t.sizes().vec(), t.strides().vec(),
                           t.scalar_type(), key, c10::weak_intrusive_ptr<Stored>(out)});
  }
  if (auto* recorder = current_stored_bytes()) {
    recorder->stored(spec.label.empty() ? spec.strategy.name() : spec.label, identity, out->device_bytes());
  }
  return out;
}

at::Tensor Stored::restore() {
#ifdef PAPAYA_CUDA
  // Back on the device at the first restore and kept there for the next: a
  // tensor two layers share (a live copy) is restored by each.
  if (host_) {
    payload_ = swap_in(host_);
    version_ = payload_._version();
    host_.reset();
  }
#endif
  switch (encoding_) {
    case Encoding::raw:
      TORCH_CHECK(payload_._version() == version_, "a tensor saved for backward was modified in place");
      return payload_;
    case Encoding::quantized: {
      const at::Tensor x = dequantize(payload_, layout_, shape_, dtype_);
      if (order_.empty()) return x;
      std::vector<int64_t> back(order_.size());
      for (size_t k = 0; k < order_.size(); ++k) back[static_cast<size_t>(order_[k])] = static_cast<int64_t>(k);
      return x.permute(back);
    }
    case Encoding::mask: return unpack_mask(payload_, shape_);
    case Encoding::none: break;
  }
  TORCH_CHECK(false, "unknown stored encoding");
}

void Stored::release_resources() {
  payload_ = at::Tensor();
  host_.reset();
  adaptive_.reset();
}

int64_t Stored::device_bytes() const {
  if (host_ || !payload_.defined()) return 0;
  if (encoding_ == Encoding::raw) return static_cast<int64_t>(payload_.storage().nbytes());
  return payload_.numel();
}

}  // namespace papaya::executor
