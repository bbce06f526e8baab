#include "executor/networks/source_for.h"

#include "executor/torchscript/imported_network.h"

namespace papaya::executor {

std::unique_ptr<NetworkSource> source_for(const model::NetworkConfig& config) {
  if (config.family == model::Family::torchscript) return std::make_unique<torchscript::ArchiveSource>(config);
  return std::make_unique<ZooSource>(config);
}

}  // namespace papaya::executor
