#pragma once
// The bytes a forward stores for backward, by strategy name ("keep",
// "quantize-4", "invert", "recompute", ...), measured from the stored tensors
// themselves: tensors that native layers save count as "keep", the stored
// forms of MOM-aware layers and checkpointed segments under their strategy's
// name, a storage shared by several slots once. Install a recorder around a
// forward only (a checkpointed segment's recomputation in backward saves
// tensors that are not kept).
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "executor/layer.h"

namespace papaya::executor {

// A recorder passes what it observes on to the observer installed before it
// (ZeRO-3's gathering of weights): recording changes nothing of the step.
class StoredBytesRecorder : public LayerObserver {
 public:
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override;
  void saved(const Layer& layer, const Slot& slot, const torch::Tensor& tensor) override;
  void forward_end(const Layer& layer, torch::Tensor& output) override;
  void parameter_cast(const Layer& layer, const torch::Tensor& copy) override;
  void pass_on_to(LayerObserver* next) { next_ = next; }

  // A stored form: `identity` is the memory it holds (a storage), so that
  // sharing is counted once.
  void stored(const std::string& strategy, const void* identity, int64_t bytes);

  const std::map<std::string, int64_t>& bytes() const { return bytes_; }

 private:
  std::map<std::string, int64_t> bytes_;
  std::set<const void*> seen_;
  LayerObserver* next_ = nullptr;
};

// Installs a recorder on this thread, as the layer observer and as the
// recipient of stored forms.
class StoredBytesGuard {
 public:
  explicit StoredBytesGuard(StoredBytesRecorder* recorder);
  ~StoredBytesGuard();
  StoredBytesGuard(const StoredBytesGuard&) = delete;
  StoredBytesGuard& operator=(const StoredBytesGuard&) = delete;

 private:
  ObserverGuard observer_;
  StoredBytesRecorder* previous_;
};

// The recorder installed on this thread, or nullptr.
StoredBytesRecorder* current_stored_bytes();

}  // namespace papaya::executor
