#pragma once
// A tensor-parallel group over Collectives: every rank of the job is one of
// the group (networks/tensor_group.h).
#include <memory>

#include "executor/distributed/collectives.h"
#include "executor/networks/tensor_group.h"

namespace papaya::executor {

// The group of `collectives`' ranks; they must outlive it.
std::shared_ptr<TensorGroup> tensor_group(Collectives& collectives);

}  // namespace papaya::executor
