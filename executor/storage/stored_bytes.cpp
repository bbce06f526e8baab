#include "executor/storage/stored_bytes.h"

namespace papaya::executor {
namespace {
thread_local StoredBytesRecorder* recorder = nullptr;
}

void StoredBytesRecorder::saved(const Layer&, const Slot&, const torch::Tensor& tensor) {
  // Layers of a checkpointed segment run without autograd in forward: nothing is saved.
  if (!torch::GradMode::is_enabled()) return;
  stored("keep", tensor.storage().unsafeGetStorageImpl(), static_cast<int64_t>(tensor.storage().nbytes()));
}

void StoredBytesRecorder::stored(const std::string& strategy, const void* identity, int64_t bytes) {
  if (!seen_.insert(identity).second) return;
  bytes_[strategy] += bytes;
}

StoredBytesGuard::StoredBytesGuard(StoredBytesRecorder* next) : observer_(next), previous_(recorder) { recorder = next; }
StoredBytesGuard::~StoredBytesGuard() { recorder = previous_; }

StoredBytesRecorder* current_stored_bytes() { return recorder; }

}  // namespace papaya::executor
