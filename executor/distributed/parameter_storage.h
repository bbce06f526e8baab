#pragma once
// A weight whose memory a rank does not hold between uses (another ZeRO-3
// rank's, another pipeline stage's): its storage made 0 bytes long and given
// back, its shape kept all along, so that autograd's graph and the
// optimizer's view of the network stay valid.
#include <torch/torch.h>

namespace papaya::executor {

// Whether `parameter` alone fills its storage from its start: only then can
// its storage be let go without touching another tensor's.
bool owns_its_storage(const torch::Tensor& parameter);

// Its storage made 0 bytes long: the memory freed.
void let_go_of_storage(const torch::Tensor& parameter);

// Its storage made as long as it again, its values undefined (to be filled).
void give_storage_back(const torch::Tensor& parameter);

// Whether its storage is let go.
bool storage_let_go(const torch::Tensor& parameter);

}  // namespace papaya::executor
