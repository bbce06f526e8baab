#pragma once
// A layer: one node of a network with a stable path name ("blocks.3.mlp.fc1"),
// the unit papaya profiles, models and assigns strategies to. Each layer
// declares the tensors its backward keeps (its slots) and reports them, and
// its forward boundaries, to an installed LayerObserver (the profiler).
// With every slot kept, a layer runs LibTorch's native path; otherwise its
// MOM-aware autograd Function, beside it in its kind's file (executor/layers/):
// its forward computes what the native path computes, with the same ATen
// ops, and stores each slot as its StoreSpec says (executor/storage/); its
// backward restores the slots and calls the ATen backward kernels. It takes
// the parameters as stored (computed_as casts them to the compute dtype).
#include <torch/torch.h>

#include <string>
#include <vector>

#include "executor/batch.h"
#include "executor/storage/store_spec.h"
#include "executor/storage/weight_codec.h"
#include "model/network_layout.h"

namespace papaya::executor {

using model::LayerKind;
using model::SlotKind;
using Slot = model::LayoutSlot;

class Layer;

// Sees every layer's forward and the tensors it saves. Installed per thread
// by ObserverGuard; with none installed the hooks cost one pointer test.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  // Before the layer computes; may replace the inputs (e.g. by identity
  // markers whose backward times the layer's backward).
  virtual void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) = 0;
  // A tensor the layer keeps for its backward.
  virtual void saved(const Layer& layer, const Slot& slot, const torch::Tensor& tensor) = 0;
  // After the layer computed; may replace the output.
  virtual void forward_end(const Layer& layer, torch::Tensor& output) = 0;
  // A copy of a parameter in the compute dtype that the layer's native path
  // computes with (Layer::cast); autograd may keep it for backward.
  virtual void parameter_cast(const Layer& /*layer*/, const torch::Tensor& /*copy*/) {}
};

class ObserverGuard {
 public:
  explicit ObserverGuard(LayerObserver* observer);
  ~ObserverGuard();
  ObserverGuard(const ObserverGuard&) = delete;
  ObserverGuard& operator=(const ObserverGuard&) = delete;
  // The observer it stands in front of (nullptr if none).
  LayerObserver* previous() const { return previous_; }

 private:
  LayerObserver* previous_;
};

class Layer : public torch::nn::Module {
 public:
  // While one lives on this thread, every layer runs its native path: a
  // recomputation in backward, whose tensors live until its own backward,
  // whatever the plan said of their storage in forward.
  class NativePath {
   public:
    NativePath();
    ~NativePath();
    NativePath(const NativePath&) = delete;
    NativePath& operator=(const NativePath&) = delete;
    static bool active();
  };

  Layer(LayerKind kind, std::vector<Slot> slots) : kind_(kind), slots_(std::move(slots)), specs_(slots_.size()) {}

  LayerKind kind() const { return kind_; }
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }
  // The enclosing segment's path, "" if none.
  const std::string& segment() const { return segment_; }
  void set_segment(std::string segment) { segment_ = std::move(segment); }

  // The tensors this layer's native (keep) path saves for backward.
  const std::vector<Slot>& slots() const { return slots_; }
  const Slot& slot(const std::string& name) const;
  size_t slot_index(const std::string& name) const;
  bool has_slot(const std::string& name) const;

  // How each slot is stored, by index: kept as LibTorch keeps it unless a
  // plan says otherwise.
  const StoreSpec& store_spec(size_t slot) const { return specs_.at(slot); }
  void set_store_spec(size_t slot, StoreSpec spec);
  bool keeps_all() const;
  // A GELU/SiLU's: how it stores its output when inverted (as the layer that
  // saves the output stores it; executor/plan_apply.cpp sets it). nullptr
  // for a layer that is no activation.
  virtual StoreSpec* inverted_output_spec() { return nullptr; }

  // The layer alone: its forward on `inputs` (those it reports to the
  // observer, in that order) and, for a layer that reads the batch's token
  // ids or targets, on `batch`. The profiler times layers so at batch sizes
  // the whole network is not run at (profiler/layer_probe.h).
  virtual torch::Tensor run(const std::vector<torch::Tensor>& inputs, const Batch& batch) = 0;
  // Whether run() computes what the network's forward computes: false for
  // an imported module the network calls with arguments besides its tensors.
  virtual bool runs_alone() const { return true; }

  // Floating-point type the layer computes in (parameters stay fp32). With
  // casts_inputs (autocast), forward first casts its floating inputs to it,
  // and the cast copies are what it saves.
  void set_compute_dtype(torch::ScalarType dtype, bool casts_inputs);
  torch::ScalarType compute_dtype() const { return compute_dtype_; }
  // Computes in fp32 under autocast whatever its kind (DeepSeek-V3's router,
  // whose logits HuggingFace takes in fp32).
  bool fp32_under_autocast = false;

  // Whether it may hold the compute-dtype copies of its parameters from
  // forward to backward (the native path's autograd keeps them). Not where its
  // weights are gathered again for backward (ZeRO-3, as FSDP runs it: the
  // copies gathered for forward are let go after it): then a layer computing
  // in a half type runs its MOM Function, which casts again in backward.
  void set_holds_parameter_copies(bool on) { holds_parameter_copies_ = on; }
  // Whether a backward runs through it in training: it has a trainable
  // parameter or an input that depends on one. A layer of a fine-tuned
  // network's frozen front (the embeddings, a first norm) is not, and
  // autograd saves nothing for it: it has no slots.
  bool differentiated() const { return differentiated_; }
  void set_differentiated(bool on);
  // Its parameters are no longer trained (a fine-tuned network's base); a
  // layer whose slot serves only its weight's gradient drops that slot.
  virtual void freeze();
  // A frozen weight it stores other than as a parameter (a QLoRA base's
  // nf4 codes), nullptr if none.
  virtual const StoredWeight* stored_weight() const { return nullptr; }
  // Buffers its forward moves in training (a batch norm's running
  // statistics), which a recomputed segment puts back after recomputing.
  virtual std::vector<torch::Tensor> running_state() { return {}; }
  // Whether its forward draws random numbers (dropout), which a recomputed
  // segment must draw again as they were.
  virtual bool draws_random() const { return false; }
  // Parameters it computes with that another layer owns and registers (a
  // tied LM head's embedding weight): its backward makes their gradient too.
  virtual std::vector<torch::Tensor> shared_parameters() const { return {}; }
  // Which of its inputs need a gradient in training (a fine-tuned network
  // finds it by a forward with autograd). A product of two inputs drops the
  // slot of each whose partner needs none: autograd keeps an operand only for
  // the other's gradient.
  virtual void set_input_gradients(const std::vector<bool>& needed);

 protected:
  // A parameter in the compute dtype (a cast that autograd differentiates).
  torch::Tensor cast(const torch::Tensor& parameter) const;

  // The slots found again (a user's module saves what its device's kernels
  // save: executor/torchscript), each kept until a plan says otherwise.
  void reset_slots(std::vector<Slot> slots);
  // Its output is the product of its two inputs (q k^T, probs v, a * b),
  // which it saves as its first two slots: set_input_gradients may drop them.
  void set_product_of_inputs() { product_of_inputs_ = true; }

  // Whether forward runs the MOM-aware Function: a slot is not kept (or the
  // layer may not hold its parameters' half-type copies), and autograd
  // records (without it nothing is saved either way), outside a NativePath.
  bool uses_moms() const {
    const bool recasts = !holds_parameter_copies_ && compute_dtype_ != torch::kFloat;
    return (!keeps_all() || recasts) && torch::GradMode::is_enabled() && differentiated_ && !NativePath::active();
  }

  // Brackets a forward: reports it to the observer, if any, then casts the
  // inputs if the layer casts them (inside the layer's time and memory).
  class Scope {
   public:
    Scope(const Layer& layer, std::vector<torch::Tensor*> inputs);
    void saved(const std::string& slot, const torch::Tensor& tensor) const;
    torch::Tensor finish(torch::Tensor output) const;

   private:
    const Layer& layer_;
    LayerObserver* observer_;
  };

 private:
  LayerKind kind_;
  std::vector<Slot> slots_;
  std::vector<StoreSpec> specs_;
  std::string path_;
  std::string segment_;
  torch::ScalarType compute_dtype_ = torch::kFloat;
  bool casts_inputs_ = false;
  bool differentiated_ = true;
  bool product_of_inputs_ = false;
  bool holds_parameter_copies_ = true;
};

}  // namespace papaya::executor
