#include "executor/storage/stored_bytes.h"

namespace papaya::executor {
namespace {
thread_local StoredBytesRecorder* recorder = nullptr;
}

void StoredBytesRecorder::forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) {
  if (next_) next_->forward_begin(layer, inputs);
}

void StoredBytesRecorder::forward_end(const Layer& layer, torch::Tensor& output) {
  if (next_) next_->forward_end(layer, output);
}

void StoredBytesRecorder::parameter_cast(const Layer& layer, const torch::Tensor& copy) {
  if (next_) next_->parameter_cast(layer, copy);
}

void StoredBytesRecorder::saved(const Layer& layer, const Slot& slot, const torch::Tensor& tensor) {
  if (next_) next_->saved(layer, slot, tensor);
  // Layers of a checkpointed segment run without autograd in forward: nothing is saved.
  if (!torch::GradMode::is_enabled()) return;
  stored("keep", tensor.storage().unsafeGetStorageImpl(), static_cast<int64_t>(tensor.storage().nbytes()));
}

void StoredBytesRecorder::stored(const std::string& strategy, const void* identity, int64_t bytes) {
  if (!seen_.insert(identity).second) return;
  bytes_[strategy] += bytes;
}

StoredBytesGuard::StoredBytesGuard(StoredBytesRecorder* next) : observer_(next), previous_(recorder) {
  recorder = next;
  next->pass_on_to(observer_.previous());
}
StoredBytesGuard::~StoredBytesGuard() { recorder = previous_; }

StoredBytesRecorder* current_stored_bytes() { return recorder; }

}  // namespace papaya::executor
