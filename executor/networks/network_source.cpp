#include "executor/networks/network_source.h"

#include "executor/networks/zoo.h"

namespace papaya::executor {

std::shared_ptr<Network> ZooSource::build() const { return build_network(config_); }

}  // namespace papaya::executor
