#pragma once
// What a profile and a fitted model both say of a layer: its place in the
// network, the tensors it saves for backward and its analytic size and cost,
// with the one JSON form and the one consistency check of those fields.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/layer_kind.h"
#include "model/slot_kind.h"

namespace papaya::model {

// One tensor a layer saves for backward on its native (keep) path.
struct SavedTensorProfile {
  std::string slot;
  SlotKind kind = SlotKind::activation;
  std::string dtype;                    // "float32", "bfloat16", "bool", "int64"
  int element_size = 4;                 // bytes
  std::vector<int64_t> sample_shape;    // shape without the batch dimension
  bool per_sample = true;               // false: does not grow with the batch
  double numel_per_sample = 0;          // elements per sample (total if !per_sample)
  std::string storage;                  // "path:slot" of the first slot sharing its storage
  double storage_bytes_per_sample = 0;  // the whole storage (a view keeps all of it)
  // The batch's own data (e.g. the images a first convolution saves): the
  // training loop holds it through the whole step whatever the plan.
  bool held_by_caller = false;
  // The last layer whose forward runs while the network's code still holds
  // it (a residual's input: the block's end); "": its saver. Raw storage a
  // plan stores otherwise is freed after that layer's forward.
  std::string last_forward_use;
  // Saved by the network's code after the layer's forward returned (a
  // loss's log-probabilities, charged to the last layer): its backward, which
  // uses it, runs before the layer's own.
  bool saved_after_forward = false;
  // "path:slot" of the first slot saving the same view of that storage (the
  // same offset, sizes and strides: one stored copy serves both; chunks of
  // one tensor are stored apart); "" where not measured: any slot of its
  // storage.
  std::string view;
};

struct LayerDescription {
  std::string path;  // "blocks.3.mlp.fc1"
  LayerKind kind = LayerKind::linear;
  std::string segment;                       // the enclosing segment's path, "" if none
  std::vector<SavedTensorProfile> saved;     // the slots, with their sizes and storages
  std::vector<std::string> output_saved_by;  // "path:slot" of the slots that save this layer's output
  double output_bytes_per_sample = 0;
  int64_t parameter_bytes = 0;
  // Of those, the bytes training does not update (a fine-tuned network's
  // frozen weights): they have no gradients nor optimizer state.
  int64_t frozen_bytes = 0;
  int64_t trainable_bytes() const { return parameter_bytes - frozen_bytes; }
  // Trained weights it computes with that another layer owns (a tied LM
  // head's, the token embedding's): its backward makes their gradient too.
  int64_t shared_trainable_bytes = 0;
  std::string shares_weights_of;  // that layer's path ("": none, or not recorded)
  // The compute-dtype (bf16) copies of parameters that its keep path holds
  // from forward to backward; a MOM path casts again in backward instead
  // (executor Layer::parameter_copy_bytes). 0 in fp32.
  int64_t parameter_copy_bytes = 0;
  double forward_flops_per_sample = 0;        // analytic, for the roofline
  double forward_bytes_moved_per_sample = 0;  // analytic: bytes read and written
  // How many alike layers run in turn that this one stands for (a mixture's
  // experts priced once: model/alike_experts.h): its saved tensors'
  // sizes, FLOPs, bytes moved, weights and times are all of theirs, its
  // shapes and memory figures the first's. 1 in every profile; a model
  // with more is for pricing alone (it lacks the layers it stands for).
  int repeats = 1;
};

// A saved tensor's JSON form, in profiles and layer models alike.
nlohmann::json saved_tensor_to_json(const SavedTensorProfile& t);
// `doc` has been validated against the document's schema.
SavedTensorProfile saved_tensor_from_json(const nlohmann::json& doc);

// Writes the description's fields into `out` (a layer's JSON object).
void add_layer_description_json(const LayerDescription& layer, nlohmann::json& out);
// `doc` has been validated against the document's schema; `where` names the
// layer in errors ("model.json: /layers/3"): an unknown kind is an InputError.
LayerDescription layer_description_from_json(const nlohmann::json& doc, const std::string& where);

// A segment as the check below sees it: its path and its input's storage
// ("" if no slot of the keep step saves it).
struct SegmentReference {
  std::string path;
  std::string input_storage;
};

// What the schemas cannot say of the layers and segments a profile and a
// model both hold: unique layer and segment paths, every layer's segment
// listed and its layers one after another, no segment without layers, and
// storage, output and last-use references naming a saved tensor or a layer
// of the document. `noun` names the document in messages ("profile",
// "model"). Throws InputError "label: /pointer: why".
void check_layer_references(const std::vector<const LayerDescription*>& layers, const std::vector<SegmentReference>& segments,
                            const std::string& label, const std::string& noun);

// The same for a document's own layer and segment types.
template <class Layers, class Segments>
void check_layer_references(const Layers& layers, const Segments& segments, const std::string& label, const std::string& noun) {
  std::vector<const LayerDescription*> descriptions;
  for (const auto& layer : layers) descriptions.push_back(&layer);
  std::vector<SegmentReference> references;
  for (const auto& segment : segments) references.push_back({segment.path, segment.input.storage});
  check_layer_references(descriptions, references, label, noun);
}

}  // namespace papaya::model
