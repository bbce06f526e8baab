#include "executor/networks/zoo.h"

#include "executor/networks/fine_tuning.h"

namespace papaya::executor {

namespace {
std::shared_ptr<Network> build_body(const model::NetworkConfig& config) {
  switch (config.family) {
    case model::Family::gpt:
    case model::Family::bert:
    case model::Family::vit: return build_transformer(config);
    case model::Family::resnet: return build_resnet(config);
    case model::Family::mlp: return build_mlp(config);
    case model::Family::torchscript: break;  // not the zoo's: executor/torchscript/imported_network.h
  }
  TORCH_CHECK(false, "unknown network family");
}
}  // namespace

std::shared_ptr<Network> build_network(const model::NetworkConfig& config) {
  std::shared_ptr<Network> network = build_body(config);
  freeze_for_fine_tuning(*network);
  share_load_scratch(*network);
  return network;
}

}  // namespace papaya::executor
